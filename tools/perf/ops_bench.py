#!/usr/bin/env python3
"""Benchmark of cco.ops: one table per operator, each figure with its anchors measured in
the same run.

    python3 tools/perf/ops_bench.py -n 2 [--quick] [--json out.json]      # starts the ranks itself
    python -m cco.launch -n 2 tools/perf/ops_bench.py --rank-process       # (what -n does)
    torchrun --nproc_per_node 2 tools/perf/ops_bench.py --rank-process

Per operator and shape: the fused operator (time per call, TFLOP/s of the GEMM it does),
torch.matmul (cuBLAS) of the same local GEMM, matmul followed by the collective through
torch.distributed (NCCL) and torch SymmetricMemory's fused op where torch has one (both need
one GPU per rank: "n/a" where ranks share a GPU), and the exposed communication: fused time
minus the matmul alone. Shapes: Llama-3-70B tensor-parallel layers (hidden 8192, FFN 28672;
M = 1024, 4096, 16384 tokens) and a DeepSeek-V3 expert layer (hidden 7168, expert FFN 2048,
256 experts, top-8: M x 8 routed rows, split evenly) for the all-to-all pair. Every call is
timed with CUDA events over repetitions captured in a CUDA graph (launch overhead out),
all ranks lined up by a host barrier first; the slowest rank counts.

run(shapes, ranks, quick) -> list of row dicts, for `cco perf --suites ops`.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HIDDEN, FFN = 8192, 28672
DSV3_HIDDEN, DSV3_EXPERT_FFN, DSV3_TOPK = 7168, 2048, 8
TOKENS = (1024, 4096, 16384)
QUICK_TOKENS = (4096,)


def shapes_for(tokens, world):
    """(operator, description, M, K, N) of the local problem per rank; flops counted on it."""
    rows = []
    for m in tokens:
        rows.append(("ag_gemm", f"FFN up  M={m}", m // world, HIDDEN, FFN // world))
        rows.append(("gemm_rs", f"FFN down M={m}", m, FFN // world, HIDDEN))
        rows.append(("gemm_ar", f"FFN down M={m}", m, FFN // world, HIDDEN))
        rows.append(("gemm_ag", f"attn out M={m}", m // world, HIDDEN, HIDDEN))
    for m in tokens[:2]:
        routed = m * DSV3_TOPK // world * world
        rows.append(("a2a_gemm", f"DSv3 dispatch M={m}", routed // world if world > 1 else routed, DSV3_HIDDEN,
                     DSV3_EXPERT_FFN))
        rows.append(("gemm_a2a", f"DSv3 combine M={m}", routed // world if world > 1 else routed, DSV3_EXPERT_FFN,
                     DSV3_HIDDEN))
    return rows


def _gemm_rows(op, m, world):
    """Rows of the GEMM a rank does for `op` with local a of m rows."""
    return m * world if op == "ag_gemm" else m


def _time(fn, reps, comm, graph=True):
    """Seconds per call of fn on this rank (CUDA graph of `reps` calls, replayed once after a
    warm replay), then the largest over the ranks."""
    import torch

    fn()
    torch.cuda.synchronize()
    if graph:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            g.capture_begin()
            for _ in range(reps):
                fn()
            g.capture_end()
        run = g.replay
        run()
    else:
        def run():
            for _ in range(reps):
                fn()
    torch.cuda.synchronize()
    if comm is not None:
        comm.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / reps


def _slowest(comm, value, ctx):
    """The largest value over the ranks (through the ops context's agreement window)."""
    if comm is None or ctx is None:
        return value
    return max(ctx.allgather(float(value)))


def measure(comm, rank, world, tokens, reps):
    import torch

    from cco import ops
    from cco.ops.context import OpsContext

    dev = torch.device("cuda", torch.cuda.current_device())
    dt = torch.bfloat16
    ranks_share_gpu = None
    dist = None
    if world > 1 and "MASTER_ADDR" in os.environ:
        import torch.distributed as dist_mod

        if dist_mod.is_initialized() and dist_mod.get_backend() == "nccl":
            dist = dist_mod
    rows = []
    ctx = None
    for op, what, m, k, n in shapes_for(tokens, world):
        a = torch.randn(m, k, device=dev, dtype=dt) / 8
        b = torch.randn(k, n, device=dev, dtype=dt) / 8
        splits = [m // world] * world
        splits[-1] += m - sum(splits)
        call = {
            "gemm_ar": lambda: ops.gemm_ar(a, b, comm),
            "gemm_rs": lambda: ops.gemm_rs(a, b, comm),
            "ag_gemm": lambda: ops.ag_gemm(a, b, comm),
            "gemm_ag": lambda: ops.gemm_ag(a, b, comm),
            "gemm_a2a": lambda: ops.gemm_a2a(a, b, splits, comm),
            "a2a_gemm": lambda: ops.a2a_gemm(a, b, splits, comm),
        }[op]
        gemm_m = _gemm_rows(op, m, world)
        ga = torch.randn(gemm_m, k, device=dev, dtype=dt) / 8
        flops = 2.0 * gemm_m * k * n
        row = dict(op=op, shape=what, ranks=world, M=gemm_m, K=k, N=n)
        try:
            t = _time(call, reps, comm)
            ctx = OpsContext.of(comm)
            ranks_share_gpu = ctx.ranks_per_gpu > 1
            row["fused_us"] = _slowest(comm, t, ctx) * 1e6
            ops.check(comm)
        except Exception as e:  # noqa: BLE001 (a failing operator is a row that says so)
            row["fused_error"] = f"{type(e).__name__}: {e}"[:200]
        t_mm = _time(lambda: torch.matmul(ga, b), reps, None)
        row["matmul_us"] = _slowest(comm, t_mm, ctx) * 1e6
        row["matmul_tflops"] = flops / (row["matmul_us"] * 1e-6) / 1e12
        if "fused_us" in row:
            row["fused_tflops"] = flops / (row["fused_us"] * 1e-6) / 1e12
            row["exposed_us"] = row["fused_us"] - row["matmul_us"]
            row["fused_vs_matmul_pct"] = 100.0 * row["matmul_us"] / row["fused_us"]
        row["nccl_us"] = row["symm_mem_us"] = None
        if dist is not None and not ranks_share_gpu:
            row["nccl_us"] = _slowest(comm, _time(lambda: _nccl_split(dist, op, ga, a, b, splits, world), reps, None),
                                      ctx) * 1e6
        row["note"] = "NCCL / SymmetricMemory: n/a (ranks share one GPU)" if ranks_share_gpu else ""
        rows.append(row)
        del a, b, ga
        torch.cuda.empty_cache()
    return rows


def _nccl_split(dist, op, ga, a, b, splits, world):
    """torch.matmul, then the collective through torch.distributed (NCCL)."""
    import torch

    if op == "ag_gemm":
        full = torch.empty(a.shape[0] * world, a.shape[1], device=a.device, dtype=a.dtype)
        dist.all_gather_into_tensor(full, a)
        return full @ b
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
    out = torch.empty_like(y)
    if op == "gemm_a2a":
        dist.all_to_all_single(out, y, splits, splits)
        return out
    moved = torch.empty_like(a)
    dist.all_to_all_single(moved, a, splits, splits)
    return moved @ b


COLUMNS = [("shape", "shape", "{}"), ("ranks", "W", "{}"), ("fused_us", "fused us", "{:.1f}"),
           ("fused_tflops", "fused TF/s", "{:.0f}"), ("matmul_us", "matmul us", "{:.1f}"),
           ("matmul_tflops", "matmul TF/s", "{:.0f}"), ("fused_vs_matmul_pct", "matmul/fused %", "{:.0f}"),
           ("exposed_us", "exposed us", "{:.1f}"), ("nccl_us", "matmul+NCCL us", "{:.1f}"),
           ("symm_mem_us", "symm_mem us", "{:.1f}")]


def print_tables(rows, out=sys.stdout):
    for op in ("gemm_ar", "gemm_rs", "ag_gemm", "gemm_ag", "gemm_a2a", "a2a_gemm"):
        mine = [r for r in rows if r["op"] == op]
        if not mine:
            continue
        print(f"\n## {op}", file=out)
        print("| " + " | ".join(c[1] for c in COLUMNS) + " | note |", file=out)
        print("|" + "---|" * (len(COLUMNS) + 1), file=out)
        for r in mine:
            cells = [c[2].format(r[c[0]]) if r.get(c[0]) is not None else "n/a" for c in COLUMNS]
            note = r.get("fused_error") or r.get("note", "")
            print("| " + " | ".join(cells) + f" | {note} |", file=out)


def rank_process(opts):
    import torch

    from cco import Communicator
    from cco.runtime import bootstrap

    rank, world, uid = bootstrap()
    tokens = QUICK_TOKENS if opts.quick else TOKENS
    comm = Communicator.init(world, rank, uid)
    try:
        rows = measure(comm, rank, world, tokens, opts.reps)
    except BaseException:
        comm.abort()
        raise
    finally:
        comm.destroy()
    if rank == 0:
        meta = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__)
        try:
            import triton

            meta["triton"] = triton.__version__
        except ImportError:
            pass
        print(f"cco.ops benchmark, {world} rank(s): {meta}")
        print_tables(rows)
        if opts.json:
            with open(opts.json, "w") as f:
                json.dump({"meta": meta, "rows": rows}, f, indent=1)


def run(shapes=None, ranks=2, quick=True):
    """The rows of one benchmark run with `ranks` rank processes (cco.launch); `shapes`
    (token counts) overrides the default M list."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ops.json")
        command = [sys.executable, "-m", "cco.launch", "-n", str(ranks), __file__, "--rank-process", "--json", path]
        if quick:
            command.append("--quick")
        env = dict(os.environ)
        if shapes:
            env["OPS_BENCH_TOKENS"] = ",".join(str(s) for s in shapes)
        subprocess.run(command, check=True, env=env)
        with open(path) as f:
            return json.load(f)["rows"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--ranks", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help=f"M = {QUICK_TOKENS} only")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--rank-process", action="store_true", help="this process is one rank of a launched job")
    opts = ap.parse_args(argv)
    if "OPS_BENCH_TOKENS" in os.environ:
        global TOKENS, QUICK_TOKENS
        TOKENS = QUICK_TOKENS = tuple(int(x) for x in os.environ["OPS_BENCH_TOKENS"].split(","))
    if opts.rank_process or "CCO_UNIQUE_ID" in os.environ or "RANK" in os.environ:
        return rank_process(opts)
    command = [sys.executable, "-m", "cco.launch", "-n", str(opts.ranks), __file__, "--rank-process",
               "--reps", str(opts.reps)]
    if opts.quick:
        command.append("--quick")
    if opts.json:
        command += ["--json", opts.json]
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
