# SPDX-License-Identifier: MIT
"""A one-shot all-reduce without barriers: every rank pushes its input into a receive slot of
every peer's window, and each element is its own flag.

Receive buffers hold a sentinel (the bits of -0.0) until a peer's value lands; a rank waits on
the data itself instead of on a barrier, so a call costs one NVLink write latency where the
barrier one-shot pays two barriers (each a round trip). Inputs equal to -0.0 are sent as +0.0
(the sum is the same but for the sign of a zero), so a value never looks like the sentinel.

Three receive buffers rotate: call k lands in buffer k % 3 and clears buffer (k - 1) % 3, which
the previous call (an earlier kernel) read. A peer writes that buffer again only in call k + 2,
which it reaches after reading this rank's call k + 1, pushed by a later kernel than the clear:
the kernel boundary orders the clear before any such write (under programmatic dependent
launch, the wait for the previous kernel that every call makes before touching memory does).
Two buffers would not do: a peer may start call k + 1 as soon as it has this rank's call k,
while this rank still clears.

Each program keeps the buffer its next call lands in (0, 1, 2, in the window, so a CUDA graph
replays it correctly) and handles the same blocks on every rank, so every rank must launch the
same grid. Every rank adds the values in rank order, so all ranks get the same bits.
"""

import triton
import triton.language as tl

from cco.ir.triton import cco
from cco_tools.perf.kernels.lsa import (_aligned, _AllReduceLaunch, _check_pdl, _f32, _next_kernel_may_start,
                                        _peer_bases, _prior_kernel_done)

SENTINEL = tl.constexpr(-2147483648)      # int32 bits of -0.0
_POLLS_BETWEEN_ABORT_CHECKS = tl.constexpr(1024)
_MAX_POLLS = tl.constexpr(1 << 26)        # then the call gives up: status 1 (seconds, never a hang)
_ALIGN = 256


@triton.jit
def _i32(address):
    return _aligned(address, tl.int32)


@triton.jit
def _wait_block(slot, offs, mask, dc, BLOCK: tl.constexpr):
    """The block of a receive slot once no element holds the sentinel; (values, gave_up)."""
    bits = tl.load(slot + offs, mask=mask, other=0, volatile=True)
    pending = tl.sum(((bits == SENTINEL) & mask).to(tl.int32), axis=0)
    polls = 0
    aborted = 0
    while (pending > 0) & (polls < _MAX_POLLS) & (aborted == 0):
        bits = tl.load(slot + offs, mask=mask, other=0, volatile=True)
        pending = tl.sum(((bits == SENTINEL) & mask).to(tl.int32), axis=0)
        polls += 1
        if polls % _POLLS_BETWEEN_ABORT_CHECKS == 0:
            aborted = cco.DevComm.aborted(dc)
    return bits.to(tl.float32, bitcast=True), (pending > 0).to(tl.int32)


@triton.jit
def push_allreduce(dc, win, out, n, buffers_offset, slot_bytes, counters_offset, status_offset,
                   NRANKS: tl.constexpr, BLOCK: tl.constexpr, PDL: tl.constexpr = False):
    """out[i] = sum over the LSA ranks of their window's float32 element i (see the module)."""
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    me = cco.DevComm.lsa_rank(dc)
    base, stride = _peer_bases(win, NRANKS)
    mine = base + me * stride
    # Under PDL the previous call may still run: its turn store and its clears come first.
    _prior_kernel_done(PDL)
    counter = (mine + counters_offset).to(tl.pointer_type(tl.int32), bitcast=True) + pid
    turn = tl.load(counter)  # 0, 1 or 2: kept in range, so no count of calls ever overflows
    # Offsets in 64 bits: Triton passes a Python int below 2**31 as int32, and three buffers of
    # 8 ranks' slots pass 2**31 bytes from 32M floats up.
    slot_bytes = slot_bytes.to(tl.int64)
    buffer_bytes = NRANKS * slot_bytes
    here = buffers_offset.to(tl.int64) + turn.to(tl.int64) * buffer_bytes  # this call's buffer
    landing = here + me * slot_bytes  # my slot in it, at every peer
    stale = mine + buffers_offset.to(tl.int64) + ((turn + 2) % 3).to(tl.int64) * buffer_bytes
    gave_up = 0
    for start in range(pid * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(_f32(mine) + offs, mask=mask)
        x = tl.where(x == 0.0, 0.0, x)  # -0.0 would read as the sentinel
        for p in tl.static_range(NRANKS):
            if p != me:
                tl.store(_f32(base + p * stride + landing) + offs, x, mask=mask)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for p in tl.static_range(NRANKS):
            if p == me:
                acc += x
            else:
                slot = _i32(mine + here + p * slot_bytes)
                values, late = _wait_block(slot, offs, mask, dc, BLOCK)
                gave_up = gave_up | late
                acc += values
        tl.store(out + offs, acc, mask=mask)
        for p in tl.static_range(NRANKS):
            if p != me:
                tl.store(_i32(stale + p * slot_bytes) + offs,
                         tl.full([BLOCK], SENTINEL, tl.int32), mask=mask)
    tl.store(counter, (turn + 1) % 3)
    _next_kernel_may_start(PDL)
    if gave_up != 0:
        tl.store((mine + status_offset).to(tl.pointer_type(tl.int32), bitcast=True), 1)


@triton.jit
def _prepare(dc, win, buffers_offset, buffers_bytes, counters_offset, status_offset, BLOCK: tl.constexpr):
    """This rank's receive buffers to the sentinel, its turns and status to 0. No
    argument differs between ranks: ranks that are threads of one process share its binary
    (a second one, loaded while a peer's barrier spins, would wait for that barrier)."""
    pid = tl.program_id(0)
    base = cco.Window.lsa_ptr(win, cco.DevComm.lsa_rank(dc), 0)
    words = buffers_bytes // 4
    buffers = _i32(base + buffers_offset)
    for start in range(pid * BLOCK, words, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        tl.store(buffers + offs, tl.full([BLOCK], SENTINEL, tl.int32), mask=offs < words)
    if pid == 0:
        zeros = (base + counters_offset).to(tl.pointer_type(tl.int32), bitcast=True)
        count = (status_offset - counters_offset) // 4 + 1
        for start in range(0, count, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            tl.store(zeros + offs, tl.zeros([BLOCK], tl.int32), mask=offs < count)


@triton.jit
def _ready(dc):
    """Every rank has prepared its buffers before any rank's first push."""
    cco.LsaBarrier.sync(dc, 0, coop=cco.CoopScope.BLOCK)


def _round_up(value, to=_ALIGN):
    return (value + to - 1) // to * to


class PushAllReduce(_AllReduceLaunch):
    """out = the sum over the LSA ranks of the first `count` float32 of their window
    (push_allreduce), one launch per call; `graph=True`: see _AllReduceLaunch.

    The window holds the input at offset 0; from byte `offset` (a multiple of 256 past the
    input; default: right after it) three receive buffers of `nranks` slots, the programs'
    turns and a status word, window_bytes(count, nranks, programs, offset) in all, used
    by nothing else while the object lives. Every rank builds it together, on the stream its
    calls will use (it prepares its buffers there, then waits on a barrier for every rank's),
    with the same count and programs, and calls it in the same order. check() raises if a
    call gave up waiting for a peer.
    """

    @staticmethod
    def layout(count, nranks, programs, offset=None):
        buffers = _round_up(count * 4) if offset is None else offset
        if buffers % _ALIGN or buffers < count * 4:
            raise ValueError(f"PushAllReduce: offset {buffers} must be a multiple of {_ALIGN} past the input "
                             f"({count * 4} bytes)")
        slot = _round_up(count * 4)
        counters = buffers + 3 * nranks * slot
        status = counters + _round_up(programs * 4)
        return dict(slot=slot, buffers=buffers, counters=counters, status=status, end=status + _ALIGN)

    @classmethod
    def window_bytes(cls, count, nranks, programs, offset=None):
        return cls.layout(count, nranks, programs, offset)["end"]

    def __init__(self, dc, win, out, count, nranks, programs, extern_libs, graph=False, num_warps=4, offset=None,
                 pdl=False):
        _check_pdl(pdl, "PushAllReduce")  # before its buffers are prepared
        grid = max(1, min(triton.cdiv(count, self.BLOCK), programs))
        at = self.layout(count, nranks, grid, offset)
        if win.size < at["end"]:
            raise ValueError(f"PushAllReduce of {count} float32 over {nranks} ranks needs a window of {at['end']} "
                             f"bytes (input, three receive buffers, call counts); this one has {win.size}")
        self._status = win.local_ptr + at["status"]
        _prepare[(min(64, triton.cdiv(3 * nranks * at["slot"] // 4, self.BLOCK)),)](
            dc.ptr, win.handle, at["buffers"], 3 * nranks * at["slot"], at["counters"], at["status"],
            BLOCK=self.BLOCK, extern_libs=extern_libs)
        _ready[(1,)](dc.ptr, extern_libs=extern_libs)
        super().__init__(push_allreduce, (dc.ptr, win.handle, out, count, at["buffers"], at["slot"], at["counters"],
                                          at["status"]), count, nranks, grid, extern_libs, graph, num_warps, pdl)

    def check(self):
        """Raises if a call so far gave up waiting for a peer (a peer that never made the same
        call, or an abort); waits for this rank's calls to end."""
        import torch

        from cco.memview import torch_view

        torch.cuda.synchronize()
        if int(torch_view(self._status, 1, torch.int32)[0]) != 0:
            raise RuntimeError("PushAllReduce: a call gave up waiting for a peer's values (a peer that never "
                               "called, or the communicator was aborted); its result and every later one are void")
