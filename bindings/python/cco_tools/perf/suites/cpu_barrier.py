# SPDX-License-Identifier: MIT
"""`cco perf --suites barrier` on the cpu platform: the host barrier (ccoBarrierAll) of every
rank, `rounds` of them per trial, the slowest rank counting."""

import time

from cco_tools.perf import report as R
from cco_tools.perf.measure import Timing, spread_of


def run(ctx):
    group, rounds = ctx.group, ctx.options.rounds
    rows = ctx.report.suite("host barrier (ccoBarrierAll)",
                            [R.number("ranks"), R.number("rounds"), R.figure("time", "us"), R.spread()])

    def barriers(rk):
        t0 = time.perf_counter()
        for _ in range(rounds):
            rk.comm.barrier()
        return time.perf_counter() - t0

    trials = []
    for _ in range(ctx.options.trials):
        group.align()
        trials.append(max(group.each(barriers).values()) / rounds)
    t = group.slowest(Timing(trials))
    rows.append([group.world, rounds, t * 1e6, spread_of(t)])
