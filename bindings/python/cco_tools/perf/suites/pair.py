# SPDX-License-Identifier: MIT
"""What the GDA and SDMA perf suites share: ranks 0 and 1 as a pair, per-rank status words,
a recognisable pattern in rank 0's window, the memcpy anchor between the two windows, the LSA
flag ping-pong anchor, and the final check that a put of the whole span landed."""

import torch

from cco_tools.perf.kernels import lsa as K
from cco_tools.perf.measure import Timing
from cco_tools.perf.ranks import DIRECT_MAX  # noqa: F401 (the GDA suite's direct-path limit)

PAIR = (0, 1)


def status_words(group):
    """One int32 per rank of the pair, zeroed: kernels add their failed calls into it."""
    return group.on(PAIR, lambda rk: torch.zeros(1, dtype=torch.int32, device=f"cuda:{rk.device}"))


def check_status(group, status, what):
    bad = group.slowest(max((int(s.item()) for s in status.values()), default=0))
    if bad:
        raise RuntimeError(f"cco perf: {what}: {int(bad)} calls failed")


def pattern(rk, owner, span):
    return torch.arange(span // 8, device=f"cuda:{rk.device}", dtype=torch.int64) * 10 + owner


def fill_sources(group, span):
    """Ranks 0 and 1 hold their pattern in [0, span) of their windows."""
    for rk in group.held(PAIR):
        rk.view(rk.rank, 0, span // 8, torch.int64).copy_(pattern(rk, rk.rank, span))
    group.settle()


def memcpy(size, span):
    """The anchor: cudaMemcpyAsync of rank 0's [0, size) into rank 1's [span, span + size)."""
    def make(rk):
        src, dst = rk.view(0, 0, size // 8, torch.int64), rk.view(1, span, size // 8, torch.int64)
        return lambda: dst.copy_(src)
    return make


def check_landed(group, span, put_all, what, nbytes=None):
    """Clears rank 1's [span, 2 span), runs put_all (rank 0 puts its first `nbytes`, by default
    the whole span, there and waits), and checks that rank 0's pattern arrived and nothing
    more."""
    nbytes = span if nbytes is None else nbytes
    for rk in group.held([1]):
        rk.view(1, span, span // 8, torch.int64).zero_()
    group.settle()
    group.run_once(group.on([0], put_all))
    for rk in group.held([1]):
        want = torch.zeros(span // 8, device=f"cuda:{rk.device}", dtype=torch.int64)
        want[:nbytes // 8] = pattern(rk, 0, nbytes)
        if not torch.equal(rk.view(1, span, span // 8, torch.int64), want):
            raise RuntimeError(f"cco perf: {what} data check failed on rank 1")
    group.align()


def flag_pingpong_us(group, rounds, trials=1):
    """The floor of a round trip between ranks 0 and 1: two kernels bouncing a flag by stores
    through their windows (no CCO call), in microseconds (a Timing of `trials` runs, the flags
    cleared before each); NaN if a side gave up."""
    failed = status_words(group)

    def pingpong(count):
        def make(rk):
            mine, theirs = rk.view(rk.rank, 0, 1, torch.int32), rk.view(1 - rk.rank, 0, 1, torch.int32)
            return lambda: K.flag_pingpong[(1,)](mine, theirs, count, failed[rk.rank], FIRST=rk.rank == 0, num_warps=1)
        return make

    def reset_flags():
        for rk in group.held(PAIR):
            rk.view(rk.rank, 0, 2, torch.int32).zero_()
        group.settle()

    for r in PAIR:  # each side is its own binary: load both before either waits
        group.run_once(group.on([r], pingpong(0)))
    times = []
    for _ in range(trials):  # a run counts its rounds from 1: the flags start cleared
        reset_flags()
        times.append(group.time_kernels(group.on(PAIR, pingpong(rounds)), rounds))
        if group.slowest(max((int(f.item()) for f in failed.values()), default=0)):
            reset_flags()
            return float("nan")
    reset_flags()
    return Timing([t * 1e6 for t in Timing.of(times).trials])
