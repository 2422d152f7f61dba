# SPDX-License-Identifier: MIT
"""Whether CCO's split (`cco perf --suites ops`' anchor: torch.matmul, then the collective as a
CCO kernel whose programs meet at LSA barriers) meets its barriers with every rank sharing one
GPU: each collective of the split three times at a small shape, each call checked on its own,
timed on the host, and (CCO_TRACE set) each rank's barrier rounds as the device traced them.
Where a call failed, rank 0 prints for its first three such calls when each rank called, launched
and finished, and when each rank's barrier rounds began and ended: a rank whose rounds all begin
when its peers' end (their timeout) was not resident beside them.

    CCO_TRACE=/tmp/tr python -m cco.launch -n 4 tools/perf/ops_split_residency_probe.py
    PROGS=16 python -m cco.launch -n 4 tools/perf/ops_split_residency_probe.py

PROGS: programs per rank (default: max_programs, the GPU's SMs split among its ranks);
PROBE_OUT: where each rank leaves its times and traces (default /tmp/split-probe).
"""

import json
import os
import time

import torch

from cco import Communicator
from cco.ops.context import OpsContext
from cco.runtime import bootstrap
from cco_tools.perf.kernels.lsa import max_programs
from cco_tools.perf.kernels.ops_split import COLLECTIVES, Split

STEPS = 3


def ints(shape, seed, dev):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(-2, 3, shape, generator=g).float().to(torch.bfloat16).to(dev)


def now_us():
    return time.monotonic_ns() / 1000.0   # CLOCK_MONOTONIC: one clock for every rank of the host


def rounds_of(path, base):
    """The LSA barrier rounds in one rank's trace file: round -> (begin, end) ranges and verdicts."""
    if not os.path.exists(path):
        return "no trace (CCO_TRACE unset)"
    events = [e for e in json.load(open(path)).get("traceEvents", [])
              if e.get("ph") == "X" and e.get("name", "").startswith("lsa.barrier")]
    by_round = {}
    for e in events:
        by_round.setdefault(e["args"].get("round"), []).append(e)
    parts = []
    for rnd, es in sorted(by_round.items(), key=lambda item: item[0]):
        begins = [e["ts"] - base for e in es]
        ends = [e["ts"] + e["dur"] - base for e in es]
        verdicts = sorted({e["args"].get("status") for e in es})
        parts.append(f"round {rnd} x{len(es)}: begin {min(begins):.0f}..{max(begins):.0f} "
                     f"end {min(ends):.0f}..{max(ends):.0f} {verdicts}")
    return "; ".join(parts)


def report(out, world):
    rows = [r for p in range(world) for r in json.load(open(f"{out}/rows-r{p}.json"))]
    order = list(COLLECTIVES)
    failed = sorted({(r["op"], r["step"]) for r in rows if not r["ok"]}, key=lambda k: (order.index(k[0]), k[1]))
    print(f"{sum(r['ok'] for r in rows)} of {len(rows)} calls clean", flush=True)
    for op, step in failed[:3]:
        these = sorted((r for r in rows if r["op"] == op and r["step"] == step), key=lambda r: r["rank"])
        base = min(r["times"][0] for r in these)
        print(f"=== {op} call {step} (us from the first rank's call; trace times on the trace's own origin)")
        for r in these:
            t = [x - base for x in r["times"]]
            trace = rounds_of(f"{out}/trace-{op}-{step}-r{r['rank']}.json", 0)
            print(f"rank {r['rank']} {'ok' if r['ok'] else 'FAILED'}: called {t[0]:.0f}, launched {t[1]:.0f}, "
                  f"finished {t[2]:.0f} | {trace}", flush=True)


def main():
    rank, world, uid = bootstrap()
    out = os.environ.get("PROBE_OUT", "/tmp/split-probe")
    os.makedirs(out, exist_ok=True)
    dev = torch.device("cuda", torch.cuda.current_device())
    comm = Communicator.init(world, rank, uid)
    m, k, n = 128 * world, 128, 384
    programs = int(os.environ.get("PROGS", "0")) or max_programs(OpsContext.of(comm).ranks_per_gpu)
    split = Split(comm, m * max(k, n) * 2, programs)
    rows = []
    for op in COLLECTIVES:
        for step in range(STEPS):
            a, b = ints((m, k), 10 * step + rank, dev), ints((k, n), 10 * step + 100 + rank, dev)
            torch.cuda.synchronize()
            called = now_us()
            split.call(op, a, b)()
            launched = now_us()
            torch.cuda.synchronize()
            finished = now_us()
            try:
                split.check()
                ok = True
            except RuntimeError:
                ok = False
            comm.trace_flush(split.dc, f"{out}/trace-{op}-{step}-r{rank}.json")
            rows.append(dict(rank=rank, op=op, step=step, ok=ok, times=[called, launched, finished]))
            print(f"rank {rank}, {programs} programs: {op} call {step} {'ok' if ok else 'FAILED'} "
                  f"(launch {launched - called:.0f} us, then {finished - launched:.0f} us to finish)", flush=True)
    json.dump(rows, open(f"{out}/rows-r{rank}.json", "w"))
    comm.barrier()
    if rank == 0:
        report(out, world)
    split.close()
    comm.destroy()


if __name__ == "__main__":
    main()
