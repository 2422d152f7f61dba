# SPDX-License-Identifier: MIT
"""`cco perf --suites barrier` on GPUs: the LSA barrier's latency per coop scope and memory
order, every rank in a kernel that loops over the rounds; anchor: a flag ping-pong between
ranks 0 and 1 through their windows (no CCO call, one round trip per round)."""

import torch

from cco.ir.triton import cco as cco_ir
from cco_tools.perf import report as R
from cco_tools.perf.kernels import lsa as K
from cco_tools.perf.measure import Timing, spread_of


def run(ctx):
    group, progress, trials = ctx.group, ctx.progress, ctx.options.trials
    rows = ctx.report.suite(f"LSA barrier latency, {group.world} ranks",
                            [R.text("coop", 6), R.number("warps", width=5), R.text("order", 7),
                             R.figure("barrier", "us/round"), R.spread(), R.figure("pingpong", "us/rt"),
                             R.figure("barrier/pingpong", "")],
                            note="pingpong: two kernels bouncing a flag, no CCO (one round trip per round); "
                                 "order: the sync's memory order (acq_rel, the default, releases the coop's writes "
                                 "and acquires the peers'; a release waits for every earlier store to be "
                                 "acknowledged, the last round's included); coop=thread needs one thread per call, "
                                 "which Triton programs are not")
    rounds = ctx.options.barrier_rounds
    status = {r: torch.zeros(1, dtype=torch.int32, device=f"cuda:{rk.device}") for r, rk in group.local.items()}
    everyone = range(group.world)

    measured = []
    for coop, warps, order in (("block", 4, "acq_rel"), ("block", 4, "acquire"), ("block", 4, "relaxed"),
                               ("warp", 1, "acq_rel")):
        const = getattr(cco_ir.CoopScope, coop.upper())
        ordered = -1 if order == "acq_rel" else getattr(cco_ir.MemoryOrder, order.upper())  # acq_rel: the default form
        progress(f"barrier: coop={coop} order={order}")

        def loop(count, const=const, warps=warps, ordered=ordered):
            return lambda rk: lambda: K.barrier_loop[(1,)](rk.dc.ptr, count, status[rk.rank], COOP=const,
                                                           ORDER=ordered, num_warps=warps, extern_libs=group.libs)

        group.run_once(group.on(everyone, loop(100)))  # compile, warm up
        t = group.time_kernels(group.on(everyone, loop(rounds)), rounds, trials)
        bad = {r: int(s.item()) for r, s in status.items() if int(s.item()) != 0}
        if bad:
            raise RuntimeError(f"cco perf: barrier returned statuses {bad}")
        measured.append((coop, warps, order, t))

    # The anchor: a flag ping-pong between ranks 0 and 1 through their windows.
    pair = (0, 1)
    failed = group.on(pair, lambda rk: torch.zeros(1, dtype=torch.int32, device=f"cuda:{rk.device}"))

    def reset_flags():
        for rk in group.held(pair):
            rk.view(rk.rank, 0, 2, torch.int32).zero_()
        group.settle()

    reset_flags()

    def pingpong(count):
        def make(rk):
            peer = 1 - rk.rank
            mine = rk.view(rk.rank, 0, 1, torch.int32)
            theirs = rk.view(peer, 0, 1, torch.int32)
            return lambda: K.flag_pingpong[(1,)](mine, theirs, count, failed[rk.rank], FIRST=rk.rank == 0,
                                                 num_warps=1)
        return make

    progress("barrier: flag ping-pong anchor")
    # Each side is its own binary: load both before either spins (a load can wait for a
    # running kernel of the context).
    group.run_once(group.on([0], pingpong(0)))
    group.run_once(group.on([1], pingpong(0)))
    group.run_once(group.on(pair, pingpong(10)))
    runs = []
    for _ in range(trials):  # a run counts its rounds from 1: the flags start cleared
        reset_flags()
        runs.append(group.time_kernels(group.on(pair, pingpong(rounds)), rounds))
        if group.slowest(max((int(f.item()) for f in failed.values()), default=0)):
            runs = None  # the anchor lost its peer: report the barrier alone
            break
    t_pp = Timing.of(runs) if runs else float("nan")

    for coop, warps, order, t in measured:
        rows.append([coop, warps, order, t * 1e6, spread_of(t), t_pp * 1e6, t / t_pp])
    rows.append(["thread", 1, "acq_rel", None, None, t_pp * 1e6, None])
