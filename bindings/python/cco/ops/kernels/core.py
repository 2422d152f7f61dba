# SPDX-License-Identifier: MIT
"""The GEMM core every operator shares, and the signalling its tiles use.

Everything is made of plain Triton plus CCO calls for what only CCO knows: this rank's LSA
index (DevComm.lsa_rank), where each rank's copy of the workspace window is
(Window.lsa_ptr), whether the communicator was aborted (DevComm.aborted) and a system-scope
fence (system_fence). The workspace (see cco.ops.planning) starts with per-program call
counters, status words and start flags; its areas' byte offsets are kernel arguments.

Signals: a producer stores a tile (or chunk) into a peer's workspace, fences at system scope
(every thread its own stores), synchronises the program, then one thread raises the flag
with a release store at system scope. A consumer polls the flag in its own workspace with
acquire loads until it holds this call's epoch; the value read is shared with the program's
threads through the barrier Triton puts behind a scalar atomic, so their loads come after
it. Epochs rise by one per call (int32, compared wrap-safe), so no flag is ever reset.

A wait gives up after `max_polls` polls, or at once when the communicator was aborted or
another program of this rank already gave up; it then sets status word 0, and the call's
result is void (cco.ops.check raises). Nothing waits forever.

Trace: where the device communicator traces (CCO_TRACE), each program records its tiles and
the other units of its phases as ranges of the device-side trace (trace_begin / trace_end:
a tag of ccoTraceTag and the unit's index), beside the CCO calls' own records. Off, a range
costs the test of the device communicator's trace field (trace_begin) and of a zero start.
"""

import triton
import triton.language as tl

from cco.ir.triton import cco

_ABORT_EVERY = tl.constexpr(256)   # polls between two looks at the abort flag


@triton.jit
def ptr_at(address, DTYPE: tl.constexpr):
    """DTYPE* at a byte address (uint64 / int64) that is 16-byte aligned: a window's areas
    start on 256-byte boundaries, and saying so keeps accesses 16 bytes wide."""
    return tl.multiple_of(address.to(tl.pointer_type(DTYPE), bitcast=True), 16)


@triton.jit
def word_at(address):
    """int32* at a 4-byte aligned byte address (a flag or count word: no wider promise)."""
    return address.to(tl.pointer_type(tl.int32), bitcast=True)


@triton.jit
def rank_bases(dc, ws, WORLD: tl.constexpr):
    """(this rank's LSA index, LSA rank 0's copy of the workspace, the distance between two
    ranks' copies): rank q's copy starts at base + q * stride (the flat LSA range)."""
    me = cco.DevComm.lsa_rank(dc)
    base = cco.Window.lsa_ptr(ws, 0, 0).to(tl.int64)
    if WORLD > 1:
        stride = cco.Window.lsa_ptr(ws, 1, 0).to(tl.int64) - base
    else:
        stride = base - base
    return me, base, stride


@triton.jit
def trace_begin(dc):
    """The device clock where dc traces, else 0 (no clock read): a range's start."""
    return cco.Trace.clock(dc)


@triton.jit
def trace_end(dc, tag, unit, begin):
    """Records [begin, now] as the program's range `tag` (cco.TraceTag) of unit `unit`, once per
    program; nothing where begin is 0."""
    cco.Trace.range(dc, tag, unit, begin, coop=cco.CoopScope.BLOCK)


@triton.jit
def begin_call(mine, off_counters):
    """This call's epoch (1, 2, ...): this program's count of calls so far, plus one."""
    return tl.load(ptr_at(mine + off_counters, tl.int32) + tl.program_id(0)) + 1


@triton.jit
def end_call(mine, off_counters, epoch):
    tl.store(ptr_at(mine + off_counters, tl.int32) + tl.program_id(0), epoch)


@triton.jit
def raise_flag(address, epoch):
    """Announces everything this program stored so far (peers' memory included) with
    flag = epoch at `address` (any rank's copy of the workspace)."""
    cco.system_fence(0)
    tl.debug_barrier()
    tl.atomic_xchg(word_at(address), epoch, sem="release", scope="sys")


@triton.jit
def wait_flag(address, epoch, status, dc, max_polls):
    """Waits until the flag at `address` (this rank's workspace) holds `epoch` or later;
    gives up as the module says. Returns 1 when it gave up."""
    flag = word_at(address)
    seen = tl.atomic_add(flag, 0, sem="acquire", scope="sys")
    late = (seen - epoch) < 0
    if late:
        polls = 0
        if tl.load(status, volatile=True) != 0:
            polls = max_polls
        while ((seen - epoch) < 0) & (polls < max_polls):
            seen = tl.atomic_add(flag, 0, sem="acquire", scope="sys")
            polls += 1
            if polls % _ABORT_EVERY == 0:
                if (cco.DevComm.aborted(dc) != 0) | (tl.load(status, volatile=True) != 0):
                    polls = max_polls
        late = (seen - epoch) < 0
        if late:
            tl.store(status, 1)
    return late.to(tl.int32)


@triton.jit
def say_hello(base, stride, me, off_hello, off_counts, counts_for, epoch, WORLD: tl.constexpr,
              SEND_COUNTS: tl.constexpr):
    """Program 0 raises this call's start flag on every peer, with the rows it sends each where
    SEND_COUNTS (counts_for: a pointer to W int32 by receiver rank; not read otherwise)."""
    if tl.program_id(0) == 0:
        par = (epoch % 2).to(tl.int64)
        for d in tl.static_range(1, WORLD):
            peer = (me + d) % WORLD
            there = base + peer.to(tl.int64) * stride
            slot = (par * WORLD + me) * 4
            if SEND_COUNTS:
                tl.store(ptr_at(there + off_counts, tl.int32) + (par * WORLD + me), tl.load(counts_for + peer))
            raise_flag(there + off_hello + slot, epoch)


@triton.jit
def open_call(dc, ws, off_counters, off_status, off_hello, off_counts, counts_for, WORLD: tl.constexpr,
              SEND_COUNTS: tl.constexpr):
    """What every operator's kernel does first: (this rank's LSA index, rank 0's copy of the
    workspace, the distance between copies, this rank's copy, this call's epoch, its parity (which
    half of the workspace the call uses), the status word), with this call's start flag raised on
    every peer (with counts_for[peer], the rows sent to it, where SEND_COUNTS)."""
    me, base, stride = rank_bases(dc, ws, WORLD)
    mine = base + me.to(tl.int64) * stride
    epoch = begin_call(mine, off_counters)
    par = (epoch % 2).to(tl.int64)
    status = ptr_at(mine + off_status, tl.int32)
    say_hello(base, stride, me, off_hello, off_counts, counts_for, epoch, WORLD, SEND_COUNTS)
    return me, base, stride, mine, epoch, par, status


@triton.jit
def await_hellos(mine, me, off_hello, off_counts, expected, epoch, status, dc, max_polls, WORLD: tl.constexpr):
    """Program 0 waits for every peer's start flag of this call; where `expected` (W int32 by
    sender rank) is given, a sender that announced another row count marks status word 1."""
    if tl.program_id(0) == 0:
        par = (epoch % 2).to(tl.int64)
        for d in tl.static_range(1, WORLD):
            peer = (me + d) % WORLD
            wait_flag(mine + off_hello + (par * WORLD + peer) * 4, epoch, status, dc, max_polls)
            if expected is not None:
                said = tl.load(ptr_at(mine + off_counts, tl.int32) + (par * WORLD + peer), volatile=True)
                if said != tl.load(expected + peer):
                    tl.store(status + 1, 1)


@triton.jit
def tile_coords(t, MT, NT, GROUP_M: tl.constexpr):
    """Tile t of an MT x NT grid in grouped order (GROUP_M tile rows share the columns of B
    while they are in L2)."""
    per_group = GROUP_M * NT
    group = t // per_group
    first = group * GROUP_M
    size = tl.minimum(MT - first, GROUP_M)
    mt = first + (t % per_group) % size
    nt = (t % per_group) // size
    return mt, nt


@triton.jit
def mma(a_ptr, sam, b_ptr, sbk, sbn, nrows, col0, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        EVEN_K: tl.constexpr, EVEN_N: tl.constexpr):
    """The fp32 product of rows [0, nrows) of A (a_ptr, row stride sam, unit column stride)
    with columns [col0, col0 + BN) of B (strides sbk, sbn), K deep. Rows past nrows repeat
    valid ones (their results are never stored), so A's loads need no mask."""
    rm = tl.arange(0, BM) % tl.maximum(nrows, 1)
    rn = col0 + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None].to(tl.int64) * sam + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            if EVEN_N:
                b = tl.load(b_ptrs)
            else:
                b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        else:
            kk = k * BK + rk
            a = tl.load(a_ptrs, mask=kk[None, :] < K, other=0.0)
            b = tl.load(b_ptrs, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * sbk
    return acc


@triton.jit
def store_tile(dst_ptr, row_stride, nrows, col0, N, value, BM: tl.constexpr, BN: tl.constexpr):
    """value (BM x BN) into rows [0, nrows) and columns [col0, col0 + BN) ∩ [0, N) of a
    row-major matrix at dst_ptr."""
    rm = tl.arange(0, BM)
    rn = col0 + tl.arange(0, BN)
    ptrs = dst_ptr + rm[:, None].to(tl.int64) * row_stride + rn[None, :]
    tl.store(ptrs, value, mask=(rm[:, None] < nrows) & (rn[None, :] < N))


@triton.jit
def load_tile(src_ptr, row_stride, nrows, col0, N, BM: tl.constexpr, BN: tl.constexpr):
    """The BM x BN tile at rows [0, nrows), columns [col0, ...) of a row-major matrix, as
    fp32 (zeros outside), read past L1 (peers wrote it)."""
    rm = tl.arange(0, BM)
    rn = col0 + tl.arange(0, BN)
    ptrs = src_ptr + rm[:, None].to(tl.int64) * row_stride + rn[None, :]
    return tl.load(ptrs, mask=(rm[:, None] < nrows) & (rn[None, :] < N), other=0.0,
                   cache_modifier=".cg").to(tl.float32)


@triton.jit
def copy_rows(src_ptr, src_stride, dst_ptr, dst_stride, nrows, ncols, BR: tl.constexpr, BC: tl.constexpr):
    """rows [0, nrows) x columns [0, ncols) of one row-major matrix into another."""
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    for r0 in range(0, nrows, BR):
        rows = r0 + r
        for c0 in range(0, ncols, BC):
            cols = c0 + c
            mask = (rows[:, None] < nrows) & (cols[None, :] < ncols)
            v = tl.load(src_ptr + rows[:, None].to(tl.int64) * src_stride + cols[None, :], mask=mask,
                        cache_modifier=".cg")
            tl.store(dst_ptr + rows[:, None].to(tl.int64) * dst_stride + cols[None, :], v, mask=mask)


def cdiv(a, b):
    return triton.cdiv(a, b)
