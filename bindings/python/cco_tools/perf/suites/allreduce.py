# SPDX-License-Identifier: MIT
"""`cco perf --suites allreduce`: the one-shot all-reduce kernel (float32 sum) in a kernel loop
over sizes, a micro-benchmark (per launch against NCCL and SymmetricMemory: the launch
suite); anchor: torch.sum over as many buffers as ranks on one GPU, no communication (the
local floor). Every result is checked against the exact sum."""

import torch
import triton

from cco_tools.perf import report as R
from cco_tools.perf.kernels import lsa as K
from cco_tools.perf.measure import spread_of, sweep
from cco_tools.perf.report import size_label
from cco_tools.perf.suites.launch import programs_per_rank

REDUCE_BLOCK = 1024    # float32 elements per all-reduce program


def run(ctx):
    group, progress, trials, opts = ctx.group, ctx.progress, ctx.options.trials, ctx.options
    n = group.world
    top = opts.allreduce_max_bytes
    limit = programs_per_rank(n)
    rows = ctx.report.suite(
        f"one-shot all-reduce kernel loop (float32 sum), {n} ranks on {torch.cuda.device_count()} GPU(s)",
        [R.size(), R.count(), R.text("type", 7), R.text("redop", 5), R.figure("time", "us"), R.spread(),
         R.figure("algbw", "GB/s"), R.figure("busbw", "GB/s"), R.figure("torch reduce", "us"),
         R.figure("cco/torch", "")],
        note="a micro-benchmark, not per launch: one kernel runs the all-reduce `iters` times "
             "(per launch against NCCL and SymmetricMemory: the launch suite); busbw = algbw * 2 (n - 1) / n; "
             "torch reduce: torch.sum over as many buffers as ranks, stacked on rank 0's device, no "
             "communication (the local floor)")
    iters = 50 if opts.quick else 200
    everyone = range(n)
    for size in sweep(8192, top):
        progress("allreduce", size_label(size))
        count = size // 4
        grid = (min(triton.cdiv(count, REDUCE_BLOCK), limit),)

        def expected(device, rank=None):
            base = torch.arange(count, device=device, dtype=torch.float32) % 251
            return base + rank if rank is not None else base * n + sum(range(n))

        outs = {}
        for r, rk in group.local.items():
            rk.view(r, 0, count, torch.float32).copy_(expected(f"cuda:{rk.device}", r))
            outs[r] = torch.empty(count, device=f"cuda:{rk.device}", dtype=torch.float32)
        group.settle()

        def launch(its):
            return lambda rk: lambda: K.oneshot_allreduce[grid](rk.dc.ptr, rk.win.handle, outs[rk.rank], count, its,
                                                                NRANKS=n, BLOCK=REDUCE_BLOCK, num_warps=4,
                                                                extern_libs=group.libs)

        group.run_once(group.on(everyone, launch(2)))
        t = group.time_kernels(group.on(everyone, launch(iters)), iters, trials)
        for r, out in outs.items():
            if not torch.equal(out, expected(out.device)):
                raise RuntimeError(f"cco perf: all-reduce result wrong on rank {r} at {size_label(size)}")

        def local_reduce(rk):
            stacked = torch.stack([outs[rk.rank]] * n)
            result = torch.empty_like(outs[rk.rank])
            return lambda: torch.sum(stacked, 0, out=result)

        t_torch = group.time_graphs(group.on([0], local_reduce), iters, trials)
        alg = size / t / 1e9
        rows.append([size, count, "float32", "sum", t * 1e6, spread_of(t), alg, alg * 2 * (n - 1) / n,
                     t_torch * 1e6, t / t_torch])
