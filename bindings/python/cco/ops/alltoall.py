# SPDX-License-Identifier: MIT
"""The all-to-all pair: gemm_a2a (GEMM, then all-to-all of its rows) and a2a_gemm
(all-to-all of a's rows, then GEMM), with torch.distributed.all_to_all_single's semantics:
splits[j] consecutive rows of this rank's matrix go to rank j, and the result is the rows
received from ranks 0..W-1, in rank order."""

from cco.ops import planning
from cco.ops.checks import OperandError
from cco.ops.allgather import _launch_gather, copy_source, launch_scatter
from cco.ops.common import plan_key, prepare, result, tiles_for


def _received(ctx, plan, op, send, out_splits):
    """Rows from each rank: out_splits if given (the kernel checks the senders agree). Else an
    eager call asks every rank for its splits (collective: host barriers), and a call being
    captured in a CUDA graph, which cannot wait on the host, takes what the last eager call
    with the same splits on this rank learnt (the kernel still checks the senders agree)."""
    if out_splits is not None:
        return tuple(int(s) for s in out_splits)
    import torch

    known = plan.__dict__.setdefault("received", {})
    if torch.cuda.is_current_stream_capturing():
        if send not in known:
            raise OperandError(f"cco.ops.{op}: out_splits is needed to capture a graph with splits {list(send)} "
                               "(or an eager call with them first)")
        return known[send]
    gathered = ctx.allgather((op, send))
    others = sorted({o for o, _ in gathered} - {op})
    if others:
        raise OperandError(f"cco.ops.{op}: other ranks called {', '.join(others)} at the same time")
    known[send] = planning.recv_from_sends([s for _, s in gathered], ctx.rank)
    return known[send]


def _plan(ctx, op, pb, transport, kind):
    tiles = tiles_for(ctx, pb, pb.a_rows)
    key = plan_key(pb, transport)

    def make(ctx):
        ctx.agree(op, planning.signature(pb, tiles, transport))
        return kind(op, ctx.world, ctx.rank, pb.a_rows, pb.k, pb.n, pb.in_dtype, pb.out_dtype, tiles,
                    ctx.sm_count, ctx.ranks_per_gpu, transport=transport)

    return ctx.plan(key, op, make), tiles


def gemm_a2a(a, b, splits, comm, *, out_splits=None, transport="lsa", out=None):
    """all_to_all_single(a @ b, out_splits, splits): a is M x K (M the same on every rank), b is
    K x N; splits[j] rows of the product go to rank j; the result holds the rows from rank 0,
    then rank 1, ... (out_splits[i] from rank i). Each tile is stored at its receivers as
    soon as it is computed. out_splits: the rows each rank sends here; without it every rank's
    splits are exchanged on the host at each eager call (a graph replays what its capture knew)."""
    ctx, pb, a, b = prepare("gemm_a2a", a, b, comm, transport, out, splits=splits, out_splits=out_splits)
    plan, tiles = _plan(ctx, "gemm_a2a", pb, transport, planning.scatter_plan)
    recv = _received(ctx, plan, "gemm_a2a", pb.send, out_splits)
    table = ctx.table(plan, (pb.send, recv),
                      planning.scatter_table(ctx.world, ctx.rank, pb.send, recv, tiles, pb.n)[0])
    out = _out(out, recv, pb, a, "gemm_a2a")
    launch_scatter(ctx, plan, a, b, out, table, pb, broadcast=False)
    return out


def a2a_gemm(a, b, splits, comm, *, out_splits=None, transport="lsa", out=None):
    """all_to_all_single(a, out_splits, splits) @ b: rows of a go to the ranks splits names
    (MoE dispatch, Ulysses), and every rank multiplies what it received by its b (K x N);
    the result's rows are in the received order. Chunks of rows are pushed while the GEMM
    runs on this rank's own rows. out_splits as in gemm_a2a."""
    ctx, pb, a, b = prepare("a2a_gemm", a, b, comm, transport, out, splits=splits, out_splits=out_splits)
    plan, tiles = _plan(ctx, "a2a_gemm", pb, transport,
                        lambda *args, **kw: planning.gather_plan(*args, return_gathered=False, **kw))
    recv = _received(ctx, plan, "a2a_gemm", pb.send, out_splits)
    table = ctx.table(plan, (pb.send, recv),
                      planning.gather_table(ctx.world, ctx.rank, pb.send, recv, tiles, pb.n)[0])
    out = _out(out, recv, pb, a, "a2a_gemm")
    _launch_gather(ctx, plan, a, b, out, None, table, pb, check_counts=True, source=copy_source(ctx, plan, a, pb))
    return out


def _out(out, recv, pb, a, op):
    from cco.ops import checks
    from cco.ops.context import operand

    rows = sum(recv)
    if out is not None:
        checks.check_out(op, operand(out, a.device.index), rows, pb.n, pb.out_dtype)
    return result(out, rows, pb.n, pb, a)
