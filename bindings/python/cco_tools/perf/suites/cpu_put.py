# SPDX-License-Identifier: MIT
"""`cco perf --suites put` on the cpu platform: rank 0 copies its [0, S) into rank 1's [S, 2S)
through peer pointers (the kernel's job on a GPU), against the anchor memmove between two
local buffers of the same sizes; at the end, rank 1 checks that rank 0's bytes arrived."""

import ctypes
import time

from cco_tools.perf import report as R
from cco_tools.perf.measure import Timing, spread_of, sweep


def run(ctx):
    group, top = ctx.group, ctx.options.max_bytes
    rows = ctx.report.suite("put through peer pointers",
                            [R.size(), R.number("reps"), R.figure("put", "GB/s"), R.spread(),
                             R.figure("memmove", "GB/s"), R.figure("put/memmove", "%")],
                            note="rank 0 copies its [0, S) into rank 1's [S, 2S) (the kernel's job on a GPU); reps: "
                                 "copies in each timed run")
    sender = group.local.get(0)
    if sender is not None:
        ctypes.memset(sender.ptr(0, 0), 7, top)
    trials = ctx.options.trials
    for size in sweep(min(max(4096, ctx.options.min_bytes), top), top):
        reps = max(3, min(2000, (256 << 20) // size))

        def timed(rk, to, size=size, reps=reps):
            src, dst = rk.ptr(0, 0), rk.ptr(*to)
            t0 = time.perf_counter()
            for _ in range(reps):
                ctypes.memmove(dst, src, size)
            return (time.perf_counter() - t0) / reps

        t_put = t_local = Timing([0.0] * trials)  # the ranks that copy nothing agree on the sender's
        if sender is not None:
            t_put = Timing([timed(sender, (1, top)) for _ in range(trials)])
            t_local = Timing([timed(sender, (0, top)) for _ in range(trials)])
        t_put, t_local = group.slowest(t_put), group.slowest(t_local)
        rows.append([size, reps, size / t_put / 1e9, spread_of(t_put), size / t_local / 1e9, 100 * t_local / t_put])
    group.align()  # rank 0's last put has landed
    receiver = group.local.get(1)
    if receiver is not None:  # rank 1 sees rank 0's bytes in its own memory
        got = (ctypes.c_uint8 * 64).from_address(receiver.ptr(1, top))
        if bytes(got) != b"\x07" * 64:
            raise RuntimeError("cco perf: rank 1 does not see rank 0's put")
