# SPDX-License-Identifier: MIT
"""What every operator does around its kernel: check and prepare operands, find the plan,
allocate the result, launch."""

from cco import _env
from cco.ops import checks, planning
from cco.ops.checks import OperandError
from cco.ops.context import OpsContext, gpu_features, operand
from cco.ops.scratch import descriptor_scratch

COPY_COLUMNS = 256   # columns a program copies per step (rows of 32)


def prepare(op, a, b, comm, transport, out=None, splits=None, out_splits=None, out_dtype=None):
    """(context, Problem, a, b) with every host-side check done; a made row-contiguous."""
    import torch

    checks.check_transport(op, transport, comm.lsa_size, comm.world_size)
    if transport == "sdma" and not _env.flag("CCO_ENABLE_SDMA"):
        raise OperandError(f"cco.ops.{op}: transport='sdma' needs copy-engine queues: set CCO_ENABLE_SDMA=1 on every "
                           "rank")
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"cco.ops.{op}: a and b must be torch tensors")
    if a.dim() == 2 and a.stride(1) != 1:
        a = a.contiguous()   # a copy (documented): the kernels read a's rows as contiguous vectors
    # The operands first, on this rank alone: a bad one raises here, before the first call's
    # collective set-up could keep the other ranks waiting for this one.
    device, world = torch.cuda.current_device(), comm.world_size
    fp8, _ = gpu_features(device)
    problem = checks.problem(op, operand(a, device), operand(b, device), world, splits=splits,
                             out_splits=out_splits, out=None if out is None else operand(out, device),
                             out_dtype=out_dtype, fp8_supported=fp8)
    ctx = OpsContext.of(comm)
    if not problem.b_kmajor and b.stride(1) != 1:
        b = b.contiguous()   # neither layout the kernels read: a copy (documented)
    a = _as_read(a, problem.k)
    b = _as_read(b.t(), problem.k).t() if problem.b_kmajor else _as_read(b, problem.n)
    return ctx, problem, a, b


def _as_read(t, row):
    """t (unit column stride) itself where the plan's kernel reads it as it is: starting on 16
    bytes, with rows `row` elements apart, or any multiple of 16 elements apart where `row` is
    one too (a column block of a wider matrix, as a weight's shard often is); else a copy laid
    out so (documented). Triton compiles a kernel for a launch's pointers' 16-byte alignment and
    for whether 16 divides each integer, so those must be the plan's: a kernel compiled and
    loaded mid-run could wait for a peer's running one."""
    import torch

    rows_apart = t.stride(0)
    if (rows_apart == row or (rows_apart % 16 == 0 and row % 16 == 0)) and t.data_ptr() % 16 == 0:
        return t
    return t.clone(memory_format=torch.contiguous_format)


def plan_key(problem, transport, *more):
    """The key of a call's plan on this rank: what its workspace and kernel depend on."""
    return (problem.op, problem.a_rows, problem.k, problem.n, problem.in_dtype, problem.out_dtype, problem.b_kmajor,
            transport, *more)


def result(out, rows, n, problem, a):
    import torch

    if out is not None:
        return out
    return torch.empty((rows, n), dtype=getattr(torch, problem.out_dtype), device=a.device)


def gemm_constexprs(ctx, plan, problem):
    t = plan.tiles
    return dict(BM=t.bm, BN=t.bn, BK=t.bk, GROUP_M=t.group_m, EVEN_K=problem.k % t.bk == 0,
                EVEN_N=problem.n % t.bn == 0, TMA=planning.uses_tma(ctx.tma, problem), B_T=problem.b_kmajor,
                TMA_OUT=planning.stores_by_tma(ctx.tma, problem),
                num_warps=t.warps, num_stages=t.stages)


def tiles_for(ctx, problem, rows_hint):
    return planning.tile_config(ctx.backend, problem.in_dtype, small_m=rows_hint)


def areas(plan, *names):
    """The byte offsets of the named areas of plan's workspace; 0 for an area the plan's
    transport does not have (its kernel never touches it)."""
    return [plan.layout[name] if name in plan.layout.areas else 0 for name in names]


def transport_constexprs(plan, *more):
    """The kernel's transport constants: GDA, SIG_FLAGS, NSIG, and the `more` it takes (SDMA,
    SIG_RFLAGS)."""
    return {name: plan.consts[name] for name in ("GDA", "SIG_FLAGS", "NSIG", *more)}


def launch(ctx, plan, kernel, args, meta):
    """One launch of `kernel` on the current stream with plan.programs programs; the first
    one is preceded, once, by a launch that returns at once (loads the binary on every rank)."""
    grid = (plan.programs,)
    with descriptor_scratch(plan, ctx.device):
        ctx.loaded(plan, lambda: kernel[grid](*args[:-1], 0, **meta, extern_libs=ctx.libs))
        kernel[grid](*args, **meta, extern_libs=ctx.libs)
