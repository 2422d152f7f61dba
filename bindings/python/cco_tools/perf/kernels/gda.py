# SPDX-License-Identifier: MIT
"""GDA kernels in Triton for `cco perf`: a ping-pong of signals, puts or put_values with a
signal (the round trip through two proxies) and a put-then-flush loop (one transfer's latency, or bandwidth at
large sizes).

Every CCO call is made by all threads of the program with coop=BLOCK; statuses add up into
one word, so any failed call shows. Runtime integers are not specialised: a value of 1 or a
multiple of 16 would otherwise load a new variant while a peer's kernel is waiting.
"""

import triton
import triton.language as tl

from cco.ir.triton import cco

SIGNAL = tl.constexpr(1)  # the signal the ping-pong bounces


@triton.jit
def _post(dc, win, peer, nbytes, KIND: tl.constexpr):
    """One message to `peer` with signal SIGNAL += 1: KIND 0 a signal alone, 1 a put of
    `nbytes` (window offset 0 here to offset 64 there), 2 a put_value of 8 bytes."""
    if KIND == 0:
        bad = cco.Gda.signal(dc, 0, peer, SIGNAL, 1, coop=cco.CoopScope.BLOCK, signal_op=cco.SignalOp.INC)
    elif KIND == 1:
        bad = cco.Gda.put(dc, 0, peer, win, 64, win, 0, nbytes, SIGNAL, 1, coop=cco.CoopScope.BLOCK,
                          thread_mode=cco.ThreadMode.INDEPENDENT, signal_op=cco.SignalOp.INC)
    else:
        bad = cco.Gda.put_value(dc, 0, peer, win, 64, nbytes, SIGNAL, 1, coop=cco.CoopScope.BLOCK,
                                thread_mode=cco.ThreadMode.INDEPENDENT, signal_op=cco.SignalOp.INC)
    return bad


@triton.jit(do_not_specialize=["peer", "rounds", "nbytes"])
def pingpong(dc, win, status, peer, rounds, nbytes, KIND: tl.constexpr, FIRST: tl.constexpr):
    """`rounds` round trips with `peer`: FIRST sends a message (_post) and waits for the
    answer; the other waits, then answers the same way."""
    bad = 0
    for _ in range(rounds):
        if not FIRST:
            bad += cco.Gda.wait_signal(dc, 0, SIGNAL, 1, 64, coop=cco.CoopScope.BLOCK)
        bad += _post(dc, win, peer, nbytes, KIND)
        if FIRST:
            bad += cco.Gda.wait_signal(dc, 0, SIGNAL, 1, 64, coop=cco.CoopScope.BLOCK)
    bad += cco.Gda.flush(dc, 0, coop=cco.CoopScope.BLOCK)
    tl.atomic_add(status, bad)


@triton.jit(do_not_specialize=["peer", "count", "src", "dst", "nbytes"])
def put_flush(dc, win, status, peer, count, src, dst, nbytes, EACH: tl.constexpr, COOP: tl.constexpr):
    """`count` times: put `nbytes` from this rank's window offset `src` to the peer's offset
    `dst`; EACH: flush after every put (each transfer's latency), else once at the end (the
    copies run back to back: bandwidth). COOP: the calling group (WARP with num_warps=1)."""
    bad = 0
    for _ in range(count):
        bad += cco.Gda.put(dc, 0, peer, win, dst, win, src, nbytes, 0, 0, coop=COOP,
                           thread_mode=cco.ThreadMode.INDEPENDENT, signal_op=cco.SignalOp.NONE)
        if EACH:
            bad += cco.Gda.flush(dc, 0, coop=COOP)
    bad += cco.Gda.flush(dc, 0, coop=COOP)
    tl.atomic_add(status, bad)


@triton.jit(do_not_specialize=["peer", "count", "src", "dst", "nbytes"])
def put_pieces(dc, win, status, peer, count, src, dst, nbytes, PIECE: tl.constexpr):
    """`count` times: put `nbytes` from this rank's window offset `src` to the peer's offset
    `dst` as puts of PIECE bytes, one after another (a transfer a kernel cuts up); one flush
    at the end."""
    bad = 0
    for _ in range(count):
        for k in range(nbytes // PIECE):
            bad += cco.Gda.put(dc, 0, peer, win, dst + k * PIECE, win, src + k * PIECE, PIECE, 0, 0,
                               coop=cco.CoopScope.BLOCK, thread_mode=cco.ThreadMode.INDEPENDENT,
                               signal_op=cco.SignalOp.NONE)
    bad += cco.Gda.flush(dc, 0, coop=cco.CoopScope.BLOCK)
    tl.atomic_add(status, bad)


@triton.jit(do_not_specialize=["peer", "count"])
def lone_call(dc, win, status, peer, count, OP: tl.constexpr):
    """`count` times one call and nothing else, for what a call costs a kernel launch:
    OP 0 none (the launch alone), 1 flush, 2 a signal to `peer`, 3 a signal then a flush,
    4 read_signal, 5 a put_value of 8 bytes to `peer` with its signal (nobody waits)."""
    bad = 0
    for _ in range(count):
        if OP == 1:
            bad += cco.Gda.flush(dc, 0, coop=cco.CoopScope.BLOCK)
        elif OP == 2:
            bad += cco.Gda.signal(dc, 0, peer, SIGNAL + 1, 1, coop=cco.CoopScope.BLOCK, signal_op=cco.SignalOp.INC)
        elif OP == 3:
            bad += cco.Gda.signal(dc, 0, peer, SIGNAL + 1, 1, coop=cco.CoopScope.BLOCK, signal_op=cco.SignalOp.INC)
            bad += cco.Gda.flush(dc, 0, coop=cco.CoopScope.BLOCK)
        elif OP == 4:
            bad += (cco.Gda.read_signal(dc, 0, SIGNAL + 1, 64) >> 40).to(tl.int32)  # never that many
        elif OP == 5:
            bad += cco.Gda.put_value(dc, 0, peer, win, 128, 8, SIGNAL + 1, 1, coop=cco.CoopScope.BLOCK,
                                     thread_mode=cco.ThreadMode.INDEPENDENT, signal_op=cco.SignalOp.INC)
    tl.atomic_add(status, bad)
