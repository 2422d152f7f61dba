# SPDX-License-Identifier: MIT
"""SDMA kernels in Triton for `cco perf` and the SDMA example: a put+signal ping-pong through
two ranks' copy-engine queues, and a put-then-quiet loop (one copy's latency, or bandwidth at
large sizes). Peers are LSA ranks. Every CCO call is made by all threads of the program with
coop=BLOCK; statuses add up into one word.
"""

import triton
import triton.language as tl

from cco.ir.triton import cco


@triton.jit(do_not_specialize=["peer", "rounds", "nbytes", "queue"])
def pingpong(dc, win, status, peer, rounds, nbytes, queue, FIRST: tl.constexpr):
    """`rounds` round trips with `peer` on `queue`: FIRST puts `nbytes` (window offset 0 here
    to offset 64 there) with a signal and waits for the answer; the other waits, then answers
    the same way."""
    bad = 0
    for _ in range(rounds):
        if not FIRST:
            bad += cco.Sdma.wait_signal(dc, peer, queue, 1, coop=cco.CoopScope.BLOCK)
        bad += cco.Sdma.put(dc, peer, win, 64, win, 0, nbytes, queue, 0, coop=cco.CoopScope.BLOCK,
                            signal=cco.SdmaSignal.ON)
        if FIRST:
            bad += cco.Sdma.wait_signal(dc, peer, queue, 1, coop=cco.CoopScope.BLOCK)
    bad += cco.Sdma.quiet(dc, peer, coop=cco.CoopScope.BLOCK)
    tl.atomic_add(status, bad)


@triton.jit(do_not_specialize=["peer", "count", "src", "dst", "nbytes", "queue", "slots"])
def put_quiet(dc, win, status, peer, count, src, dst, nbytes, queue, slots, EACH: tl.constexpr):
    """`count` times: put `nbytes` from this rank's window offset `src` to the peer's offset
    `dst` + (i % slots) * nbytes on `queue` without a signal (puts to `slots` distinct places, as
    a transfer cut into pieces has them); EACH: quiet the queue after every put (each copy's
    latency), else once at the end (the copies run back to back: bandwidth). With several
    programs, program p posts puts p, p + programs, ... into the same queue at once."""
    bad = 0
    for i in range(tl.program_id(0), count, tl.num_programs(0)):
        at = dst + (i % slots).to(tl.int64) * nbytes
        bad += cco.Sdma.put(dc, peer, win, at, win, src, nbytes, queue, 0, coop=cco.CoopScope.BLOCK,
                            signal=cco.SdmaSignal.OFF)
        if EACH:
            bad += cco.Sdma.quiet_queue(dc, peer, queue)
    bad += cco.Sdma.quiet_queue(dc, peer, queue)
    tl.atomic_add(status, bad)


@triton.jit(do_not_specialize=["peer", "count", "src", "dst", "nbytes", "queue"])
def post_puts(dc, win, status, peer, count, src, dst, nbytes, queue):
    """`count` puts of `nbytes` (this rank's window offset `src` -> the peer's `dst`) on `queue`,
    no signal, no wait: the kernel ends once they are posted and the copy engine moves the bytes
    while other kernels run. A later kernel's quiet_queue waits for them."""
    bad = 0
    for _ in range(count):
        bad += cco.Sdma.put(dc, peer, win, dst, win, src, nbytes, queue, 0, coop=cco.CoopScope.BLOCK,
                            signal=cco.SdmaSignal.OFF)
    tl.atomic_add(status, bad)


@triton.jit(do_not_specialize=["peer", "queue"])
def quiet_queue(dc, status, peer, queue):
    """Waits until every put posted on `queue` to `peer` has landed."""
    tl.atomic_add(status, cco.Sdma.quiet_queue(dc, peer, queue))
