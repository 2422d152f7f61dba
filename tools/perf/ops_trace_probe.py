# SPDX-License-Identifier: MIT
"""Where a fused operator's time goes: one operator at one `cco perf` shape, called eagerly five
times and timed with CUDA events; where CCO_TRACE is set, those calls' device-side trace in its
folder: each program's tiles, pushes and waits (`cco trace merge`, then Perfetto); with
PROFILE_DIR, the calls again under torch's profiler, every kernel of them (CCO's and torch's) in
PROFILE_DIR/profile-OP-rR.json.

    CCO_TRACE=/tmp/tr python -m cco.launch -n 2 tools/perf/ops_trace_probe.py gemm_ag 2048,8192,8192 [PROFILE_DIR]

M,K,N is the local problem per rank, as `cco perf --suites ops` names it (a: M x K, b: K x N;
gemm_a2a / a2a_gemm send M / W rows to each rank).
"""

import sys

import torch

from cco import Communicator, ops
from cco.ops.context import OpsContext
from cco.runtime import bootstrap

CALLS = 5


def ints(shape, seed, dev):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(-2, 3, shape, generator=g).float().to(torch.bfloat16).to(dev)


def per_call_us(call, calls=CALLS):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def main(op, m, k, n, profile=None):
    rank, world, uid = bootstrap()
    dev = torch.device("cuda", torch.cuda.current_device())
    comm = Communicator.init(world, rank, uid)
    a, b = ints((m, k), 1 + rank, dev), ints((k, n), 2, dev)
    fn = getattr(ops, op)
    if op in ("gemm_a2a", "a2a_gemm"):
        splits = [m // world] * world

        def call():
            return fn(a, b, splits, comm, out_splits=splits)
    else:
        def call():
            return fn(a, b, comm)
    for _ in range(3):   # compiled, loaded, planned
        call()
    torch.cuda.synchronize()
    comm.barrier()
    ctx = OpsContext.of(comm)
    plans = [p for key, p in ctx.plans.items() if key[0] == op]
    for plan in plans:   # what the warm-up calls recorded: out of the written calls' file
        comm.trace_flush(plan.dc, f"/tmp/ops-trace-warmup-{rank}.json")
    comm.barrier()
    us = per_call_us(call)
    comm.barrier()
    print(f"rank {rank}: {op} {m}x{k}x{n}, {world} ranks: {us:.1f} us a call "
          f"({2 * m * k * n / us / 1e6:.1f} TFLOP/s)", flush=True)
    for plan in plans:   # the timed calls, in CCO_TRACE's folder
        comm.trace_flush(plan.dc)
    if profile:   # every kernel of the calls, CCO's and torch's, as the CUDA profiler saw them
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as profiled

        comm.barrier()
        with profiled(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            per_call_us(call)
        prof.export_chrome_trace(f"{profile}/profile-{op}-r{rank}.json")
        if rank == 0:
            print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=10), flush=True)
    ops.check(comm)
    comm.barrier()
    comm.destroy()


if __name__ == "__main__":
    main(sys.argv[1], *(int(x) for x in sys.argv[2].split(",")), profile=sys.argv[3] if len(sys.argv) > 3 else None)
