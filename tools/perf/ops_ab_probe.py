# SPDX-License-Identifier: MIT
"""One rank, one process: the operators and their GEMM core as this tree builds them, against the
kernels of an earlier commit (the package cco_old_kernels beside this file or on the path:
tools/perf/stage_old_ops_kernels.sh), and torch.matmul, all timed in turns as `cco perf --suites
ops` times them (cco_tools.perf.suites.ops.in_turns: each round starting one timer further on),
AB_ROUNDS runs (default 9) of 5 calls a CUDA graph, medians. Three ways each: the old kernels;
this tree's with each operator's own result stored by pointers (`ptr`, as before a1a798a); and
this tree's as shipped (`new`: stored by TMA where planning.stores_by_tma says). The old kernels
must take the launch arguments this tree passes, TMA_OUT aside (those of 438d9b1 do). Each row
also says whether the three ways' results are bit for bit the same.

    bash tools/perf/stage_old_ops_kernels.sh 438d9b1 stage/ab
    PYTHONPATH=stage/ab:$PYTHONPATH python3 -m cco.launch -n 1 tools/perf/ops_ab_probe.py ["ag_gemm FFN up M=4096" ...]

The arguments name rows of cco_tools.perf.suites.ops.shapes_for (all rows where none is named)."""

import os
import sys

import torch

import cco_old_kernels.gather as old_gather
import cco_old_kernels.ops_core as old_core
import cco_old_kernels.reduce as old_reduce
import cco_old_kernels.scatter as old_scatter
from cco import Communicator, ops
from cco.ops import allgather, planning
from cco.ops import reduce as reducing
from cco.ops.context import OpsContext
from cco.runtime import bootstrap
from cco_tools.perf.kernels import ops_core
from cco_tools.perf.suites.ops import _ready, _timed, gemm_rows, in_turns, shapes_for

ROUNDS = int(os.environ.get("AB_ROUNDS", "9"))
REPS = 5
TOKENS = (1024, 4096, 16384)
KERNELS = {"new": {allgather: {"gather_gemm": allgather.gather_gemm, "gemm_scatter": allgather.gemm_scatter},
                   reducing: {"gemm_reduce": reducing.gemm_reduce}},
           "old": {allgather: {"gather_gemm": old_gather.gather_gemm, "gemm_scatter": old_scatter.gemm_scatter},
                   reducing: {"gemm_reduce": old_reduce.gemm_reduce}}}
STORES_BY_TMA = planning.stores_by_tma
GEMM_CONSTEXPRS = {mod: mod.gemm_constexprs for mod in (allgather, reducing)}


def _without_tma_out(constexprs):
    def made(*args, **kwargs):
        made_here = constexprs(*args, **kwargs)
        made_here.pop("TMA_OUT", None)
        return made_here
    return made


def use(way):
    """The operators (and this tree's core) as `way` says: new, ptr or old."""
    for mod, names in KERNELS["old" if way == "old" else "new"].items():
        for name, kernel in names.items():
            setattr(mod, name, kernel)
        mod.gemm_constexprs = _without_tma_out(GEMM_CONSTEXPRS[mod]) if way == "old" else GEMM_CONSTEXPRS[mod]
    planning.stores_by_tma = STORES_BY_TMA if way == "new" else (lambda *args: False)


def main(wanted):
    rank, world, uid = bootstrap()
    comm = Communicator.init(world, rank, uid)
    dev = torch.device("cuda", torch.cuda.current_device())
    ctx = OpsContext.of(comm)
    print(torch.cuda.get_device_name(), f"rounds {ROUNDS}, {REPS} calls a graph; % of torch.matmul", flush=True)
    for op, what, m, k, n in shapes_for(TOKENS, 1):
        label = f"{op} {what}"
        if wanted and label not in wanted:
            continue
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16) / 8
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16) / 8
        local = torch.randn(gemm_rows(op, m, 1), k, device=dev, dtype=torch.bfloat16) / 8
        core_out = local.new_empty(local.shape[0], n)
        if op in ("gemm_a2a", "a2a_gemm"):
            def call():
                return getattr(ops, op)(a, b, [m], comm, out_splits=[m])
        else:
            def call():
                return getattr(ops, op)(a, b, comm)
        runs, results = {"matmul": _ready(lambda: torch.matmul(local, b), REPS)}, []
        for way in ("new", "ptr", "old"):
            use(way)
            core = old_core.core_matmul if way == "old" else ops_core.core_matmul
            runs[f"core {way}"] = _ready(lambda core=core: core(local, b, core_out, ctx.sm_count, 1), REPS)
            results.append(call().clone())
            runs[f"op {way}"] = _ready(call, REPS)
        use("new")
        same = all(torch.equal(results[0], r) for r in results[1:])
        times = in_turns({name: (lambda run=run: _timed(run, REPS, None)) for name, run in runs.items()}, ROUNDS)
        mm = times["matmul"]
        pc = {name: 100 * mm / t for name, t in times.items()}
        print(f"{label:28s} matmul {2.0 * local.shape[0] * k * n / mm / 1e12:6.1f} TFLOP/s | core old "
              f"{pc['core old']:5.1f} ptr {pc['core ptr']:5.1f} new {pc['core new']:5.1f} | op old {pc['op old']:5.1f} "
              f"ptr {pc['op ptr']:5.1f} new {pc['op new']:5.1f} | results equal {same}", flush=True)
        a = b = local = core_out = runs = results = None
        torch.cuda.empty_cache()
    comm.destroy()


if __name__ == "__main__":
    main(sys.argv[1:])
