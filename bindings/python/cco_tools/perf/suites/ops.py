# SPDX-License-Identifier: MIT
"""`cco perf --suites ops`: the fused GEMM + collective operators (cco.ops), one table per
operator, each figure with its anchors measured in the same run: torch.matmul (cuBLAS) of the
same local GEMM, the operators' own GEMM core alone (cco_tools.perf.kernels.ops_core: what the
fused machinery costs), the exposed communication (fused minus that matmul), CCO's own split
(torch.matmul and the collective as a CCO kernel, one after the other:
cco_tools.perf.kernels.ops_split; every rank on one host), matmul followed by the collective
through torch.distributed (NCCL) and torch's SymmetricMemory fused op, these two where every rank
has a GPU of its own.

Shapes: Llama-3-70B tensor-parallel layers (hidden 8192, FFN 28672; M = 1024, 4096, 16384
tokens; 4096 with --quick) and a DeepSeek-V3 expert layer (hidden 7168, expert FFN 2048, top-8:
M x 8 routed rows, split evenly) for the all-to-all pair. Every call is timed with CUDA events
over repetitions captured in a CUDA graph (launch overhead out), the ranks lined up by a host
barrier first; the slowest rank counts. An operator, torch.matmul and the core are timed in
turns, ROUNDS runs each, and each figure is the median of its runs (in_turns).

The ranks are processes started here (one per rank: `python -m cco_tools.perf.suites.ops`,
with the cco launcher's environment); rank 0 prints its rows as JSON lines.
"""

import json
import os
import statistics
import sys

from cco._supervisor import CAPTURE, RankProcesses
from cco_tools.perf import report as R

HIDDEN, FFN = 8192, 28672
DSV3_HIDDEN, DSV3_EXPERT_FFN, DSV3_TOPK = 7168, 2048, 8
TOKENS = (1024, 4096, 16384)
QUICK_TOKENS = (4096,)
OPERATORS = ("gemm_ar", "gemm_rs", "ag_gemm", "gemm_ag", "gemm_a2a", "a2a_gemm")


def shapes_for(tokens, world):
    """(operator, description, M, K, N) of the local problem per rank."""
    rows = []
    for m in tokens:
        rows.append(("ag_gemm", f"FFN up M={m}", m // world, HIDDEN, FFN // world))
        rows.append(("gemm_rs", f"FFN down M={m}", m, FFN // world, HIDDEN))
        rows.append(("gemm_ar", f"FFN down M={m}", m, FFN // world, HIDDEN))
        rows.append(("gemm_ag", f"attn out M={m}", m // world, HIDDEN, HIDDEN))
    for m in tokens[:2]:
        routed = m * DSV3_TOPK // world * world
        rows.append(("a2a_gemm", f"DSv3 dispatch M={m}", routed // world, DSV3_HIDDEN, DSV3_EXPERT_FFN))
        rows.append(("gemm_a2a", f"DSv3 combine M={m}", routed // world, DSV3_EXPERT_FFN, DSV3_HIDDEN))
    return rows


def gemm_rows(op, m, world):
    """Rows of the GEMM a rank does for `op` with a local `a` of m rows."""
    return m * world if op == "ag_gemm" else m


ROUNDS = 5   # timed runs of an operator and of its GEMM anchors, taken in turns


def _time(fn, reps, comm, graph=True):
    """Seconds per call of fn on this rank: one timed run of _ready(fn) (see _timed)."""
    return _timed(_ready(fn, reps, graph), reps, comm)


def _ready(fn, reps, graph=True):
    """fn made ready to time, as a run of `reps` calls: called once, then the calls captured in
    a CUDA graph and replayed once (its upload is not timed); graph=False: `reps` calls launched
    from the host (torch's SymmetricMemory ops synchronise through the host and are called
    eagerly)."""
    import torch

    fn()
    torch.cuda.synchronize()
    if not graph:
        def run():
            for _ in range(reps):
                fn()
        return run
    captured = torch.cuda.CUDAGraph()
    with torch.cuda.stream(torch.cuda.Stream()):
        captured.capture_begin()
        for _ in range(reps):
            fn()
        captured.capture_end()
    captured.replay()
    torch.cuda.synchronize()
    return captured.replay


def _timed(run, reps, comm):
    """Seconds per call of one run() on this rank, timed with CUDA events, after a host barrier
    when comm is given (every rank then runs at once)."""
    import torch

    if comm is not None:
        comm.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / reps


def in_turns(timers, rounds):
    """{name: median} of the timers (name -> a callable that times one run), each called
    `rounds` times, taking turns: a GPU clock that drifts during the measurement (this H100's
    torch.matmul moved by 20 % within one run) then weighs on every figure of a row alike, where
    one run of each, one after the other, would put the drift into their ratio. Each round
    starts one timer further on, so that none always runs first (on a GPU just woken) or always
    right after the others' heat."""
    names = list(timers)
    samples = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            samples[name].append(timers[name]())
    return {name: statistics.median(values) for name, values in samples.items()}


def _nccl_split(dist, op, gathered, a, b, splits, received, world):
    """torch.matmul, then the collective through torch.distributed (NCCL)."""
    import torch

    if op == "ag_gemm":
        full = torch.empty_like(gathered)
        dist.all_gather_into_tensor(full, a)
        return full @ b
    if op == "a2a_gemm":
        moved = a.new_empty(sum(received), a.shape[1])
        dist.all_to_all_single(moved, a, received, splits)
        return moved @ b
    y = a @ b
    if op == "gemm_ar":
        dist.all_reduce(y)
        return y
    if op == "gemm_rs":
        out = torch.empty(y.shape[0] // world, y.shape[1], device=y.device, dtype=y.dtype)
        dist.reduce_scatter_tensor(out, y)
        return out
    if op == "gemm_ag":
        out = torch.empty(y.shape[0] * world, y.shape[1], device=y.device, dtype=y.dtype)
        dist.all_gather_into_tensor(out, y)
        return out
    out = y.new_empty(sum(received), y.shape[1])
    dist.all_to_all_single(out, y, received, splits)
    return out


def _torch_fused(dist, op, a, b):
    """torch's own fused op for `op` (SymmetricMemory: ag_gemm and gemm_rs have one), as a
    call, or None."""
    import torch
    from torch.distributed import _symmetric_memory as symm_mem

    if op not in ("ag_gemm", "gemm_rs"):
        return None
    group = dist.group.WORLD.group_name
    symm_mem.enable_symm_mem_for_group(group)   # (where torch still asks for it)
    if op == "ag_gemm":
        return lambda: torch.ops.symm_mem.fused_all_gather_matmul(a, [b], gather_dim=0, group_name=group)
    return lambda: torch.ops.symm_mem.fused_matmul_reduce_scatter(a, b, "sum", scatter_dim=0, group_name=group)


def _cco_split(comm, ctx, tokens, world):
    """CCO's split for every shape of the run (one window, the largest source), or None where
    it has none: one rank, or ranks on more than one host."""
    from cco_tools.perf.kernels.lsa import max_programs
    from cco_tools.perf.kernels.ops_split import Split, source_bytes

    if world == 1 or comm.lsa_size != world:
        return None
    nbytes = max(source_bytes(op, m, k, n) for op, _, m, k, n in shapes_for(tokens, world))
    return Split(comm, nbytes, max_programs(ctx.ranks_per_gpu))


def _differs(got, want):
    """Why got is not the operator's result want, or None."""
    return _beyond_rounding((got.float() - want.float()).abs().max().item(), want.float().abs().max().item())


def _beyond_rounding(worst, scale):
    """Why a largest difference `worst` between two results whose largest value is `scale` is
    more than bf16 sums taken in another order make (5 % of scale), or None."""
    scale = scale or 1.0
    return None if worst <= 0.05 * scale else f"CCO's split differs from the operator by {worst:.3g} of {scale:.3g}"


def _operator(op, a, b, comm, splits, received, transport):
    """The call of cco.ops's `op` the suite times."""
    from cco import ops

    if op in ("gemm_a2a", "a2a_gemm"):
        return lambda: getattr(ops, op)(a, b, splits, comm, out_splits=received, transport=transport)
    return lambda: getattr(ops, op)(a, b, comm, transport=transport)


def _anchors(comm, dist, split, op, a, b, local, splits, received, world, reps):
    """The shape's anchors that communicate ({cco_split_s, nccl_s, torch_s}: seconds or None)
    and why any is missing. CCO's split is checked against the operator (LSA) once timed."""
    figures = dict(cco_split_s=None, nccl_s=None, torch_s=None)
    errors = []
    if split is not None:
        try:
            run = split.call(op, a, b)
            figures["cco_split_s"] = _time(run, reps, comm)
            split.check()   # raises if a barrier gave up while timed
            wrong = _differs(run(), _operator(op, a, b, comm, splits, received, "lsa")())
        except Exception as e:  # noqa: BLE001 (shards it cannot cut, a kernel that failed: said, not fatal)
            wrong = f"CCO's split: {type(e).__name__}: {e}"[:200]
        if wrong:
            figures["cco_split_s"] = None
            errors.append(wrong)
    if dist is not None:
        figures["nccl_s"] = _time(lambda: _nccl_split(dist, op, local, a, b, splits, received, world), reps, None)
        try:
            fused_by_torch = _torch_fused(dist, op, a, b)
            if fused_by_torch is not None:
                figures["torch_s"] = _time(fused_by_torch, reps, comm, graph=False)
        except Exception as e:  # noqa: BLE001 (an anchor torch cannot run here is said, not fatal)
            errors.append(f"torch's fused op: {type(e).__name__}: {e}"[:200])
    return figures, errors


def measure(comm, rank, world, tokens, reps, dist=None, transports=("lsa",)):
    """This rank's rows (times are this rank's; the caller takes the slowest): each shape with
    each transport, then its anchors."""
    import torch

    from cco import ops
    from cco.ops.context import OpsContext
    from cco_tools.perf.kernels.ops_core import core_matmul

    dev = torch.device("cuda", torch.cuda.current_device())
    dtype = torch.bfloat16
    ctx = OpsContext.of(comm)   # the GPU's programs and the ranks sharing it, as the operators see them
    split = _cco_split(comm, ctx, tokens, world)
    rows = []
    for op, what, m, k, n in shapes_for(tokens, world):
        a = torch.randn(m, k, device=dev, dtype=dtype) / 8
        b = torch.randn(k, n, device=dev, dtype=dtype) / 8
        splits = [m // world] * world  # every rank's the same: this rank receives splits[rank] from each
        splits[-1] += m - sum(splits)
        received = [splits[rank]] * world
        local = torch.randn(gemm_rows(op, m, world), k, device=dev, dtype=dtype) / 8
        core_out = local.new_empty(local.shape[0], n)
        gemms = {"matmul_s": _ready(lambda: torch.matmul(local, b), reps),
                 "core_s": _ready(lambda: core_matmul(local, b, core_out, ctx.sm_count, ctx.ranks_per_gpu,
                                                      ctx.backend), reps)}
        anchors, anchor_errors = _anchors(comm, dist, split, op, a, b, local, splits, received, world, reps)
        for transport in transports:
            call = _operator(op, a, b, comm, splits, received, transport)
            row = dict(op=op, shape=what, transport=transport, M=local.shape[0], K=k, N=n,
                       flops=2.0 * local.shape[0] * k * n, **anchors)
            if anchor_errors:
                row["anchor_error"] = "; ".join(anchor_errors)
            timers = {name: (lambda run=run: _timed(run, reps, None)) for name, run in gemms.items()}
            try:
                fused = _ready(call, reps)
                timers["fused_s"] = lambda: _timed(fused, reps, comm)
                row.update(in_turns(timers, ROUNDS))
                ops.check(comm)
            except Exception as e:  # noqa: BLE001 (a failing operator is a row that says so)
                row["error"] = f"{type(e).__name__}: {e}"[:200]
                row.update({name: timer() for name, timer in timers.items() if name not in row and name != "fused_s"})
            rows.append(row)
        a = b = local = core_out = call = gemms = fused = timers = None  # freed before the next shape allocates
        torch.cuda.empty_cache()
    if split is not None:
        split.close()
    return rows


def slowest(per_rank):
    """Rank by rank lists of rows -> one list: each time the largest over the ranks, an
    error where any rank had one."""
    merged = []
    for rows in zip(*per_rank):
        row = dict(rows[0])
        for key in ("fused_s", "matmul_s", "core_s", "nccl_s", "torch_s", "cco_split_s"):
            values = [r[key] for r in rows if r.get(key) is not None]
            row[key] = max(values) if len(values) == len(rows) else None
        for key in ("error", "anchor_error"):
            errors = [r[key] for r in rows if r.get(key)]
            if errors:
                row[key] = errors[0]
        merged.append(row)
    return merged


def _worker():
    import torch

    from cco import Communicator
    from cco.runtime import bootstrap

    rank, world, uid = bootstrap()
    tokens = tuple(int(t) for t in os.environ["CCO_PERF_OPS_TOKENS"].split(","))
    transports = tuple(os.environ["CCO_PERF_OPS_TRANSPORTS"].split(","))
    reps = int(os.environ["CCO_PERF_OPS_REPS"])
    dist = None
    ranks_share_gpu = world > torch.cuda.device_count()
    if world > 1 and not ranks_share_gpu:  # NCCL needs a GPU per rank
        import torch.distributed

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        torch.distributed.init_process_group("nccl", init_method=os.environ["CCO_PERF_OPS_NCCL"], rank=rank,
                                             world_size=world,
                                             device_id=torch.device("cuda", torch.cuda.current_device()))
        dist = torch.distributed
    comm = Communicator.init(world, rank, uid)
    try:
        rows = measure(comm, rank, world, tokens, reps, dist, transports)
    except BaseException:
        comm.abort()
        raise
    finally:
        comm.destroy()
        if dist is not None:
            dist.destroy_process_group()
    print(json.dumps({"rank": rank, "ranks_share_gpu": ranks_share_gpu, "rows": rows}), flush=True)


def run_ranks(world, tokens, reps, transports=("lsa",)):
    """Every rank's report: (ranks share a GPU, rows per rank)."""
    import socket

    from cco import Communicator

    with socket.socket() as s:  # a free port for NCCL's rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, CCO_WORLD_SIZE=str(world), CCO_UNIQUE_ID=Communicator.get_unique_id().hex(),
               CCO_PERF_OPS_TOKENS=",".join(str(t) for t in tokens), CCO_PERF_OPS_REPS=str(reps),
               CCO_PERF_OPS_NCCL=f"tcp://127.0.0.1:{port}", CCO_PERF_OPS_TRANSPORTS=",".join(transports))
    if "sdma" in transports:
        env["CCO_ENABLE_SDMA"] = "1"
    command = [sys.executable, "-m", __name__]
    with RankProcesses([command] * world, [dict(env, CCO_RANK=str(r), CCO_LOCAL_RANK=str(r)) for r in range(world)],
                       stdout=CAPTURE, stderr=CAPTURE) as ranks:
        outputs = ranks.wait(1800).check("cco perf ops")
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    return reports[0]["ranks_share_gpu"], [r["rows"] for r in reports]


def add_tables(report, rows, world, shared):
    """One table per operator (figures in us and TFLOP/s of the local GEMM)."""
    nccl_note = "n/a: the ranks share a GPU" if shared else "torch.matmul, then torch.distributed over NCCL"
    for op in OPERATORS:
        mine = [r for r in rows if r["op"] == op]
        if not mine:
            continue
        errors = sorted({r[key] for r in mine for key in ("error", "anchor_error") if r.get(key)})
        torch_note = "" if op in ("ag_gemm", "gemm_rs") else " (torch has none for this operator)"
        table = report.suite(
            f"cco.ops.{op}, {world} ranks (bf16)",
            [R.text("shape", 28), R.figure("fused", "us"), R.figure("fused", "TFLOP/s"), R.figure("matmul", "us"),
             R.figure("matmul", "TFLOP/s"), R.figure("matmul/fused", "%"), R.figure("core", "TFLOP/s"),
             R.figure("core/fused", "%"), R.figure("exposed", "us"), R.figure("cco split", "us"),
             R.figure("nccl split", "us"), R.figure("torch fused", "us")],
            note=f"fused: the operator; matmul: torch.matmul of the same local GEMM; core: the operators' own "
                 f"Triton GEMM core alone (no communication); exposed: fused - matmul; cco split: torch.matmul "
                 f"and the collective as a CCO LSA kernel, one after the other; nccl split: {nccl_note}; "
                 f"torch fused: torch's SymmetricMemory op{torch_note}, called eagerly, a GPU per rank only; "
                 f"the slowest rank of each" + "".join(f"; failed: {e}" for e in errors))
        for r in mine:
            fused, matmul, core, split = r.get("fused_s"), r.get("matmul_s"), r.get("core_s"), r.get("nccl_s")
            label = r["shape"] + ("" if r.get("transport", "lsa") == "lsa" else f" {r['transport']}")
            table.append([label + (" (failed)" if r.get("error") else ""), _us(fused), _tflops(r, fused),
                          _us(matmul), _tflops(r, matmul), _percent(matmul, fused), _tflops(r, core),
                          _percent(core, fused), _us(fused - matmul) if fused and matmul else None,
                          _us(r.get("cco_split_s")), _us(split), _us(r.get("torch_s"))])


def _percent(anchor, fused):
    """anchor / fused in %: 100 is as fast as the anchor."""
    return 100 * anchor / fused if fused and anchor else None


def _us(seconds):
    return None if seconds is None else seconds * 1e6


def _tflops(row, seconds):
    return None if not seconds else row["flops"] / seconds / 1e12


def run(ctx):
    opts = ctx.options
    world = opts.world
    tokens = QUICK_TOKENS if opts.quick else TOKENS
    ctx.progress(f"ops: {len(shapes_for(tokens, world))} operator shapes, {world} rank processes")
    shared, per_rank = run_ranks(world, tokens, 3 if opts.quick else 10, opts.ops_transports)
    add_tables(ctx.report, slowest(per_rank), world, shared)


if __name__ == "__main__":
    _worker()
