# SPDX-License-Identifier: MIT
"""The reducing pair: gemm_ar (all-reduce of a @ b: the row-parallel linear) and gemm_rs
(reduce-scatter of a @ b over M: torch's fused_matmul_reduce_scatter)."""

from cco.ops import planning
from cco.ops.common import areas, gemm_constexprs, launch, plan_key, prepare, result, tiles_for, transport_constexprs
from cco.ops.kernels.reduce import gemm_reduce


def _run(op, a, b, comm, transport, out):
    ctx, pb, a, b = prepare(op, a, b, comm, transport, out)
    world = ctx.world
    tiles = tiles_for(ctx, pb, pb.a_rows if op == "gemm_ar" else pb.a_rows // world)
    key = plan_key(pb, transport)

    def make(ctx):
        ctx.agree(op, planning.signature(pb, tiles, transport))
        return planning.reduce_plan(op, world, ctx.rank, pb.a_rows, pb.k, pb.n, pb.in_dtype, pb.out_dtype,
                                    tiles, ctx.sm_count, ctx.ranks_per_gpu, transport)

    plan = ctx.plan(key, op, make)
    out = result(out, pb.out_rows, pb.n, pb, a)
    c = plan.consts
    all_reduce = op == "gemm_ar"
    meta = dict(WORLD=world, OWNED_MT=c["OWNED_MT"], SLOT_ROWS=c["SLOT_ROWS"], MT=c["MT"], NT=c["NT"],
                ALL_REDUCE=all_reduce, ES=planning.ITEMSIZE[pb.out_dtype], **gemm_constexprs(ctx, plan, pb),
                **transport_constexprs(plan, "SIG_RFLAGS", "SDMA", "QUEUES"))
    args = (plan.dc.ptr, plan.workspace.win.handle, a, b, out, pb.a_rows, pb.k, pb.n, a.stride(0), b.stride(0),
            b.stride(1),
            *areas(plan, "counters", "status", "hello", "counts", "flags", "slots", "rflags", "result", "outbox",
                   "sent", "arrivals"), ctx.wait_ticks, 1)
    launch(ctx, plan, gemm_reduce, args, meta)
    return out


def gemm_ar(a, b, comm, *, transport="lsa", out=None):
    """The all-reduce (sum) of a @ b over the ranks: a is M x K/W, b is K/W x N (each rank's
    slice of K); every rank gets the M x N sum, the same bits on every rank. Any M."""
    return _run("gemm_ar", a, b, comm, transport, out)


def gemm_rs(a, b, comm, *, transport="lsa", out=None):
    """The reduce-scatter over M of a @ b: a is M x K/W, b is K/W x N; rank r gets rows
    [r M/W, (r+1) M/W) of the sum. M must be a multiple of W (torch's rule; refused
    otherwise, naming the remainder)."""
    return _run("gemm_rs", a, b, comm, transport, out)
