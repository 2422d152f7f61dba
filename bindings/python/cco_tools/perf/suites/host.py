# SPDX-License-Identifier: MIT
"""`cco perf --suites host`: the host-side figures, per rank, in fresh processes:
  - the first ccoCommCreate of the process (the GPU context already exists, as it does
    in a framework process) and a second one,
  - ccoMemAlloc and ccoWindowRegister of a large window (1 GiB on GPUs),
  - ccoDevCommCreate.
Each rank is a process started here (`python -m cco_tools.perf.suites.host`); each reports
its times as one JSON line. The spread of a step is over the ranks.
"""

import json
import os
import statistics
import sys
import time

from cco._supervisor import CAPTURE, RankProcesses
from cco_tools.perf import report as R
from cco_tools.perf.report import size_label


def _worker():
    rank, world = int(os.environ["CCO_RANK"]), int(os.environ["CCO_WORLD_SIZE"])
    uids = [bytes.fromhex(h) for h in os.environ["CCO_PERF_UIDS"].split(",")]
    window = int(os.environ["CCO_PERF_WINDOW"])
    if os.environ.get("CCO_PLATFORM") != "cpu":
        import torch

        torch.cuda.set_device(rank % torch.cuda.device_count())  # ranks spread over the GPUs
        torch.zeros(1, device="cuda")  # the framework's context, before CCO starts
    from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_NONE

    # Start together: the parent says "go" once every rank has started up, so the first
    # create measures CCO, not process start-up skew.
    print("ready", flush=True)
    sys.stdin.readline()
    t0 = time.perf_counter()
    comm = Communicator.init(world, rank, uids[0], per_rank_vmm=2 * window)
    t1 = time.perf_counter()
    mem = comm.alloc_mem(window)
    t2 = time.perf_counter()
    win = comm.register_window(mem.ptr, window)
    t3 = time.perf_counter()
    reqs = CCODevCommRequirements()
    reqs.gda_connection_type = GDA_CONNECTION_NONE
    reqs.lsa_barrier_count = 64
    dc = comm.create_dev_comm(reqs)
    t4 = time.perf_counter()
    second = Communicator.init(world, rank, uids[1], per_rank_vmm=1 << 30)
    t5 = time.perf_counter()
    second.destroy()
    comm.destroy_dev_comm(dc)
    comm.deregister_window(win)
    comm.free_mem(mem)
    comm.destroy()
    print(json.dumps({"rank": rank, "create_ms": 1e3 * (t1 - t0), "alloc_ms": 1e3 * (t2 - t1),
                      "register_ms": 1e3 * (t3 - t2), "devcomm_ms": 1e3 * (t4 - t3),
                      "second_create_ms": 1e3 * (t5 - t4)}), flush=True)


def measure(world, window, platform):
    """Every rank's times (one dict each)."""
    from cco import Communicator

    uids = [Communicator.get_unique_id() for _ in range(2)]  # this process hosts both rendezvous
    env = dict(os.environ, CCO_WORLD_SIZE=str(world), CCO_PERF_UIDS=",".join(u.hex() for u in uids),
               CCO_PERF_WINDOW=str(window), CCO_PLATFORM=platform)
    command = [sys.executable, "-m", __name__]
    with RankProcesses([command] * world, [dict(env, CCO_RANK=str(r)) for r in range(world)], stdout=CAPTURE,
                       stderr=CAPTURE, stdin=True) as ranks:
        ranks.await_line("ready", 120, "cco perf host")
        ranks.send_line("go")
        outputs = ranks.wait(300).check("cco perf host")
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]


def run(ctx):
    opts = ctx.options
    world, window, platform = opts.host_ranks, opts.host_window, opts.platform
    ctx.progress("host: control plane")
    results = measure(world, window, platform)
    rows = ctx.report.suite(f"host control plane, {world} ranks as processes, {platform} platform",
                            [R.text("step", 24), R.figure("median", "ms"), R.figure("max", "ms"), R.spread()],
                            note=f"window {size_label(window)}; first create = the process's first ccoCommCreate; "
                                 "spread: over the ranks")
    for key, label in (("create_ms", "ccoCommCreate (first)"), ("second_create_ms", "ccoCommCreate (second)"),
                       ("alloc_ms", f"ccoMemAlloc {size_label(window)}"),
                       ("register_ms", f"ccoWindowRegister {size_label(window)}"),
                       ("devcomm_ms", "ccoDevCommCreate")):
        values = sorted(r[key] for r in results)
        median = statistics.median(values)
        rows.append([label, median, values[-1], 100 * (values[-1] - values[0]) / median if median > 0 else None])


if __name__ == "__main__":
    _worker()
