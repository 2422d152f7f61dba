# SPDX-License-Identifier: MIT
"""The all-gather pair: ag_gemm (all-gather, then GEMM) and gemm_ag (GEMM, then all-gather)."""

from cco.ops import planning
from cco.ops.common import (COPY_COLUMNS, areas, gemm_constexprs, launch, plan_key, prepare, result, tiles_for,
                            transport_constexprs)
from cco.ops.kernels.gather import gather_gemm
from cco.ops.kernels.scatter import gemm_scatter


def ag_gemm(a, b, comm, *, transport="lsa", out=None, return_gathered=False, gathered_out=None):
    """all_gather(a) @ b, overlapped: a is this rank's M/W x K shard (rank r's rows are rows
    [r M/W, (r+1) M/W) of the gathered matrix), b is K x N/W; the result is M x N/W.

    Like torch's fused_all_gather_matmul. return_gathered=True returns (result, gathered a)
    (M x K), written by the same kernel (into gathered_out if given). out: a tensor to write
    the result into. Every rank's shard has the same number of rows."""
    ctx, pb, a, b = prepare("ag_gemm", a, b, comm, transport, out)
    world, me, m = ctx.world, ctx.rank, pb.a_rows
    tiles = tiles_for(ctx, pb, m)
    key = plan_key(pb, transport, bool(return_gathered))

    def make(ctx):
        ctx.agree("ag_gemm", planning.signature(pb, tiles, transport) + (bool(return_gathered),))
        return planning.gather_plan("ag_gemm", world, me, m, pb.k, pb.n, pb.in_dtype, pb.out_dtype, tiles,
                                    ctx.sm_count, ctx.ranks_per_gpu, return_gathered, transport)

    plan = ctx.plan(key, "ag_gemm", make)
    rows = (m,) * world
    table = ctx.table(plan, rows, planning.gather_table(world, me, rows, rows, tiles, pb.n, broadcast=True)[0])
    out = result(out, m * world, pb.n, pb, a)
    gathered = None
    if return_gathered:
        import torch

        gathered = gathered_out if gathered_out is not None else torch.empty((m * world, pb.k), dtype=a.dtype,
                                                                            device=a.device)
        if tuple(gathered.shape) != (m * world, pb.k) or gathered.dtype != a.dtype or not gathered.is_contiguous() \
                or gathered.data_ptr() % 16:
            raise ValueError(f"cco.ops.ag_gemm: gathered_out must be a contiguous {m * world}x{pb.k} {a.dtype} that "
                             "starts on a 16-byte boundary")
    _launch_gather(ctx, plan, a, b, out, gathered, table, pb, check_counts=False,
                   source=copy_source(ctx, plan, a, pb))
    return (out, gathered) if return_gathered else out


def copy_source(ctx, plan, a, pb):
    """(window, byte offset) GDA puts and SDMA copies read this rank's rows of `a` from: `a`
    itself where it lies in a window of one of this communicator's symmetric pools (another
    communicator's windows mean nothing to its device communicator) with rows of K elements,
    else the plan's staging area, which a copy on the stream fills first (the kernel's puts or
    copies of the call before were complete when it ended: it flushes or quiets them). None
    over LSA and with one rank."""
    if not (plan.consts["SDMA"] or plan.consts["GDA"]) or ctx.world == 1:
        return None   # nothing to read: no transfers (one rank: nothing to stage either)
    from cco.ops.pool import window_of

    found = window_of(a, ctx.comm)
    if found is not None and a.stride(0) == pb.k and a.is_contiguous():
        return found[0].handle, found[1]
    import torch

    row_bytes = pb.k * a.element_size()   # as bytes: every dtype, fp8 included
    stage = plan.workspace.view(plan.layout["stage"], a.shape[0] * row_bytes, torch.uint8).view(a.shape[0], row_bytes)
    stage.copy_(a.view(torch.uint8))
    return plan.workspace.win.handle, plan.layout["stage"]


def _launch_gather(ctx, plan, a, b, out, gathered, table, pb, check_counts, source=None):
    offsets = {f"T_{k}": v for k, v in planning.gather_table_offsets(ctx.world).items()}
    meta = dict(WORLD=ctx.world, CAP=plan.consts["CAP"], CHUNKS=plan.consts["CHUNKS"], NT=plan.consts["NT"],
                RETURN_GATHERED=gathered is not None, CHECK_COUNTS=check_counts, BC=COPY_COLUMNS,
                ES=planning.ITEMSIZE[pb.in_dtype], **offsets, **gemm_constexprs(ctx, plan, pb),
                **transport_constexprs(plan, "SDMA", "QUEUES"))
    args = (plan.dc.ptr, plan.workspace.win.handle, a, b, out, a if gathered is None else gathered, table,
            out.shape[0], pb.k, pb.n, a.stride(0), b.stride(0), b.stride(1),
            *areas(plan, "counters", "status", "hello", "counts", "flags", "slots", "sent", "landed"),
            *(source or (0, 0)), ctx.wait_ticks, 1)
    launch(ctx, plan, gather_gemm, args, meta)


def gemm_ag(a, b, comm, *, transport="lsa", out=None):
    """all_gather(a @ b): a is this rank's M/W x K shard, b is K x N; every rank gets the M x N
    result (rank r's rows at [r M/W, (r+1) M/W)). Each tile goes to every peer as soon as it
    is computed. out: a tensor to write the result into."""
    ctx, pb, a, b = prepare("gemm_ag", a, b, comm, transport, out)
    world, me, m = ctx.world, ctx.rank, pb.a_rows
    tiles = tiles_for(ctx, pb, m)
    key = plan_key(pb, transport)

    def make(ctx):
        ctx.agree("gemm_ag", planning.signature(pb, tiles, transport))
        return planning.scatter_plan("gemm_ag", world, me, m, pb.k, pb.n, pb.in_dtype, pb.out_dtype, tiles,
                                     ctx.sm_count, ctx.ranks_per_gpu, transport)

    plan = ctx.plan(key, "gemm_ag", make)
    rows = (m,) * world
    table = ctx.table(plan, rows, planning.scatter_table(world, me, rows, rows, tiles, pb.n)[0])
    out = result(out, m * world, pb.n, pb, a)
    launch_scatter(ctx, plan, a, b, out, table, pb, broadcast=True)
    return out


def launch_scatter(ctx, plan, a, b, out, table, pb, broadcast):
    offsets = {f"T_{k}": v for k, v in planning.scatter_table_offsets(ctx.world).items()}
    es = planning.ITEMSIZE[pb.out_dtype]
    meta = dict(WORLD=ctx.world, CAP=plan.consts["CAP"], MT=plan.consts["MT"], NT=plan.consts["NT"],
                BROADCAST=broadcast, CHECK_COUNTS=not broadcast, BC=COPY_COLUMNS, ES=es, ROWS16=pb.n * es % 16 == 0,
                **offsets, **gemm_constexprs(ctx, plan, pb), **transport_constexprs(plan, "SDMA", "QUEUES"))
    args = (plan.dc.ptr, plan.workspace.win.handle, a, b, out, table, pb.a_rows, pb.k, pb.n, a.stride(0),
            b.stride(0), b.stride(1),
            *areas(plan, "counters", "status", "hello", "counts", "flags", "arrivals", "slots", "outbox", "sent",
                   "landed"),
            ctx.wait_ticks, 1)
    launch(ctx, plan, gemm_scatter, args, meta)
