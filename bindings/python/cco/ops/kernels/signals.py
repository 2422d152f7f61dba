# SPDX-License-Identifier: MIT
"""How the operators' programs tell each other that data is there, on either transport.

The workspace (see cco.ops.planning) starts with per-program call counters, status words,
start flags and row counts; its areas' byte offsets are kernel arguments. Epochs rise by one
per call (int32): every announcement holds the epoch of the data it announces, so nothing is
ever reset, and a CUDA graph replays with fresh epochs (the counters are in device memory).

LSA (load/store): a producer stores a tile (or chunk) into a peer's workspace through the
peer's mapping (Window.lsa_ptr), fences at system scope (every thread its own stores),
synchronises the program, then one thread raises the flag with a release store at system
scope. A consumer polls the flag in its own workspace with acquire loads until it holds this
call's epoch; the value read is shared with the program's threads through the barrier Triton
puts behind a scalar atomic, so their loads come after it.

GDA (puts through the device communicator, to any world rank): a producer stores into its own
workspace (an outbox that mirrors what the peer receives), fences at system scope, then puts
the bytes into the peer's workspace with a signal attached (rows of `a` go as they lie in a
window, flushed before the call ends); a signal becomes visible only after
its payload landed. A flag there is a GDA signal (signal id = the flag's index), and the put
adds (epoch - the epoch this rank last announced with it there), which this rank keeps in its
`sent` area, so the signal reads the epoch as an LSA flag would. A consumer polls
Gda.read_signal (acquire) until it reaches this call's epoch. Row counts travel as put_value
with the start signal attached.

SDMA: copy engines carry the data (Sdma.put on the queue the sender uses for that receiver),
and the receiver's count of copies landed from a sender is the flag. ag_gemm and a2a_gemm post
a receiver's chunks in order from one program, so a chunk is there once the count reaches every
chunk of the earlier calls (kept in the workspace: splits change) plus this call's up to it;
gemm_ag's row blocks are copied by whichever program completes them, in any order, so a
receiver waits for all of the call's; gemm_a2a's rows for a receiver go as one copy, counted as
a2a_gemm's; the reduce pair's tile rows land in any order too, and are waited for all together
(cco.ops.kernels.reduce). Start flags stay LSA's.

A wait gives up once `timeout` ticks of the GPU's clock went by (device_clock: nanoseconds on
NVIDIA, 10 ns on AMD; the host converts CCO_TIMEOUT_MS), looked at every _ABORT_EVERY polls
beside the abort flag, or at once when the communicator was aborted or another program of this
rank already gave up; it then sets status word 0, and the call's result is void
(cco.ops.check raises). A GDA call that fails (a peer lost) sets it too. Nothing waits forever.

Trace: where the device communicator traces (CCO_TRACE), each program records its tiles and
the other units of its phases as ranges of the device-side trace (trace_begin / trace_end:
a tag of ccoTraceTag and the unit's index), beside the CCO calls' own records. Off, a range
costs the test of the device communicator's trace field (trace_begin) and of a zero start.
"""

import triton
import triton.language as tl
from triton.language import core

from cco.ir.triton import cco

_ABORT_EVERY = tl.constexpr(256)   # polls between two looks at the abort flag and the clock
COUNT_BYTES = tl.constexpr(8)      # a row count's word (a GDA put_value writes 8 bytes)


@core.extern
def device_clock(_semantic=None):
    """The GPU's constant-rate clock, int64: NVIDIA's %globaltimer (ns), AMD CDNA's
    s_memrealtime (100 MHz). Chosen by the target being compiled for, so every kernel has it
    without a constant of its own (cco.ops.planning.wait_ticks converts a timeout)."""
    if _semantic.builder.options.backend_name == "hip":
        asm, result = "s_memrealtime $0\n\ts_waitcnt lgkmcnt(0)", "=r"   # (an SMEM read: lgkmcnt)
    else:
        asm, result = "mov.u64 $0, %globaltimer;", "=l"
    return core.inline_asm_elementwise(asm, result, [], dtype=core.int64, is_pure=False, pack=1, _semantic=_semantic)


@core.extern
def device_pause(_semantic=None):
    """About a quarter of a microsecond idle (NVIDIA nanosleep 256 ns, AMD s_sleep 2: 128
    clocks), for a poll whose answer comes from the proxy's copies: programs polling without
    pause slow those copies (tools/perf/copy_beside_pollers_probe.cu). Returns 0."""
    if _semantic.builder.options.backend_name == "hip":
        asm, result = "s_sleep 2\n\tv_mov_b32 $0, 0", "=v"
    else:
        asm, result = "nanosleep.u32 256;\n\tmov.u32 $0, 0;", "=r"
    return core.inline_asm_elementwise(asm, result, [], dtype=core.int32, is_pure=False, pack=1, _semantic=_semantic)


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
def rank_bases(dc, ws, WORLD: tl.constexpr, GDA: tl.constexpr):
    """(this rank's index, rank 0's copy of the workspace, the distance between two ranks'
    copies): LSA: rank q's copy starts at base + q * stride (the flat LSA range), the index is
    the LSA rank. GDA: the world rank and this rank's own copy (stride 0: peers are reached by
    puts, never by address)."""
    if GDA:
        me = cco.DevComm.rank(dc)
        base = cco.Window.local_ptr(ws, 0).to(tl.int64)
        stride = base - base
    else:
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


# --- LSA: flags in the workspace ----------------------------------------------------------

@triton.jit
def raise_flag(address, epoch):
    """Announces everything this program stored so far (peers' memory included) with
    flag = epoch at `address` (any rank's copy of the workspace)."""
    cco.system_fence(0)
    tl.debug_barrier()
    tl.atomic_xchg(word_at(address), epoch, sem="release", scope="sys")


@triton.jit
def _behind(dc, address, index, queue, want, KIND: tl.constexpr):
    """The watched value minus `want` (< 0: not there yet), read with acquire order: an LSA
    flag word at `address` (int32: wraps, so the comparison stays right past 2**31 calls),
    GDA signal `index`, or the count of copies SDMA peer `index` landed here on `queue`
    (int64)."""
    if KIND == 0:
        return tl.atomic_add(word_at(address), 0, sem="acquire", scope="sys") - want
    elif KIND == 1:
        return cco.Gda.read_signal(dc, index).to(tl.int64) - want
    else:
        return cco.Sdma.read_signal(dc, index, queue).to(tl.int64) - want


@triton.jit
def _poll(dc, address, index, queue, want, status, timeout, KIND: tl.constexpr):
    """Polls until _behind is no longer negative; gives up once `timeout` ticks of
    device_clock passed, or at once when the communicator was aborted or another program of
    this rank gave up (status word 0, which it then sets). Returns 1 when it gave up. A wait
    whose own time ran out also notes what it waited for (_note_wait). An SDMA count's wait
    pauses before each poll after its first (device_pause)."""
    behind = _behind(dc, address, index, queue, want, KIND)
    late = behind < 0
    if late:
        start = device_clock()
        polls = 0
        ran_out = start < 0   # (false)
        if KIND == 0:
            gave_up = tl.atomic_add(status, 0, sem="relaxed", scope="gpu") != 0   # (every thread the same)
        else:
            gave_up = tl.load(status, volatile=True) != 0
        while late & (gave_up == 0):
            if KIND == 2:   # an SDMA count: copies microseconds away, which unpaused polls slow
                device_pause()
            behind = _behind(dc, address, index, queue, want, KIND)
            late = behind < 0
            polls += 1
            if polls % _ABORT_EVERY == 0:
                ran_out = device_clock() - start > timeout
                gave_up = _stop(dc, status, ran_out, late, KIND)
        if late:
            tl.store(status, 1)
            if ran_out:
                _note_wait(status, address, index, queue, want, behind, KIND)
    return late.to(tl.int32)


@triton.jit
def _stop(dc, status, ran_out, late, KIND: tl.constexpr):
    """Whether a wait still late gives up: the communicator was aborted, another program of
    this rank gave up (status word 0), or its time ran out. A thread reads these on its own;
    an LSA flag's poll, though, is a scalar atomic whose value reaches the program's threads
    through a barrier, so they must all leave the loop at the same poll: there, the verdict of
    the thread that makes the scalar atomics goes into the status word and every thread reads
    it back. (A GDA or SDMA poll has no barrier: a warp may leave a poll earlier than another.)"""
    over = (cco.DevComm.aborted(dc) != 0) | (tl.load(status, volatile=True) != 0) | ran_out
    if KIND == 0:
        tl.atomic_or(status, (late & over).to(tl.int32), sem="relaxed", scope="gpu")
        over = tl.atomic_add(status, 0, sem="relaxed", scope="gpu") != 0
    return over


@triton.jit
def _note_wait(status, address, index, queue, want, behind, KIND: tl.constexpr):
    """What a wait that ran out of time waited for, in status words 2-6 (cco.ops.context
    explains them in ops.check's error): 1 + KIND; the signal or the SDMA peer (KIND 1, 2) or
    the flag's address, low and high 32 bits (KIND 0); the SDMA queue; the value wanted and the
    value read, low 32 bits. Plain stores: programs that run out together each leave theirs,
    any of which says what never came."""
    tl.store(status + 2, KIND + 1)
    if KIND == 0:
        tl.store(status + 3, address.to(tl.int32))   # (a narrowing cast keeps the low 32 bits)
        tl.store(status + 4, (address >> 32).to(tl.int32))
    else:
        tl.store(status + 3, index)
        tl.store(status + 4, queue)
    tl.store(status + 5, want.to(tl.int32))
    tl.store(status + 6, (want + behind).to(tl.int32))


@triton.jit
def wait_flag(address, epoch, status, dc, timeout):
    """Waits until the flag at `address` (this rank's workspace) holds `epoch` or later.
    The value read is shared with the program's threads through the barrier Triton puts
    behind a scalar atomic, so their loads come after it."""
    return _poll(dc, address, 0, 0, epoch, status, timeout, 0)


# --- GDA: puts and signals that read as epochs ---------------------------------------------

@triton.jit
def _signal_step(mine, off_sent, peer, sig, epoch, NSIG: tl.constexpr):
    """What to add to signal `sig` at `peer` so that it reads `epoch`: the difference to the
    epoch this rank last announced with it there (this rank's `sent` record, now updated).
    One program announces a given signal to a given peer in a call."""
    sent = ptr_at(mine + off_sent, tl.int32) + (peer * NSIG + sig)
    last = tl.load(sent, volatile=True)
    tl.debug_barrier()   # every thread read the old record before any writes the new one
    tl.store(sent, epoch)
    return (epoch - last).to(tl.uint64)


@triton.jit
def note_failure(status, failed):
    """A GDA or SDMA call that failed (a lost peer, an abort, a queue that timed out) voids the
    call; status word 7 keeps the device status it returned (cco.ops.planning.describe_failed_call;
    plain stores: of several, any one)."""
    if failed != 0:
        tl.store(status + 7, failed)
        tl.store(status, 1)


@triton.jit
def gda_put(dc, ws, mine, off_sent, status, peer, dst_off, src_off, nbytes, sig, epoch, NSIG: tl.constexpr):
    """nbytes at src_off of this rank's workspace into dst_off of peer's, then signal sig
    there reads epoch."""
    gda_put_from(dc, ws, ws, src_off, mine, off_sent, status, peer, dst_off, nbytes, sig, epoch, NSIG)


@triton.jit
def gda_put_from(dc, ws, src_win, src_off, mine, off_sent, status, peer, dst_off, nbytes, sig, epoch,
                 NSIG: tl.constexpr):
    """nbytes at src_off of window src_win into dst_off of peer's workspace, then signal sig
    there reads epoch. The program's stores of the source come first (system scope: the agent
    that copies them may be the host's proxy or a copy engine)."""
    cco.system_fence(0)
    add = _signal_step(mine, off_sent, peer, sig, epoch, NSIG)
    note_failure(status, cco.Gda.put(dc, peer, ws, dst_off, src_win, src_off, nbytes, signal_id=sig, signal_val=add,
                                     signal_op=cco.SignalOp.ADD, coop=cco.CoopScope.BLOCK))


@triton.jit
def gda_signal(dc, ws, mine, off_sent, status, peer, sig, epoch, NSIG: tl.constexpr,
               count_off=0, count=0, WITH_COUNT: tl.constexpr = False):
    """Signal sig at peer reads epoch; WITH_COUNT: `count` lands first at count_off there."""
    add = _signal_step(mine, off_sent, peer, sig, epoch, NSIG)
    if WITH_COUNT:
        note_failure(status, cco.Gda.put_value(dc, peer, ws, count_off, count.to(tl.uint64), signal_id=sig,
                                               signal_val=add, signal_op=cco.SignalOp.ADD, coop=cco.CoopScope.BLOCK))
    else:
        note_failure(status, cco.Gda.signal(dc, peer, signal_id=sig, signal_val=add, signal_op=cco.SignalOp.ADD,
                                            coop=cco.CoopScope.BLOCK))


@triton.jit
def wait_signal(dc, sig, epoch, status, timeout):
    """Waits until GDA signal sig reads `epoch` or more (acquire, in every thread: its later
    loads see what the puts before the signal carried)."""
    return _poll(dc, 0, sig, 0, epoch.to(tl.int64), status, timeout, 1)


@triton.jit
def wait_copies(dc, peer, queue, least, status, timeout):
    """SDMA: waits until the copies `peer` put here on `queue` number `least` (int64; a count
    over every call so far) or more."""
    return _poll(dc, 0, peer, queue, least, status, timeout, 2)


@triton.jit
def sdma_queue(sender, receiver, WORLD: tl.constexpr, QUEUES: tl.constexpr):
    """SDMA: the queue `sender` copies to `receiver` on, as both compute it: receiver d = sender
    - d (rank - 1 first, the one that needs a sender's rows first) on queue (d - 1) % QUEUES."""
    return ((sender - receiver + WORLD) % WORLD - 1) % QUEUES


@triton.jit
def quiet_when_last(dc, mine, off_counters, status, me, WORLD: tl.constexpr):
    """SDMA, where any program may post a copy (the tile that completes a row block or a
    receiver's rows): the last program of the call to get here quiets every peer's queues.
    Each program posted its copies before it arrived, so that quiet covers every copy of the
    call: one the proxy refused fails this call, and none still reads this rank's memory when
    the kernel ends. (A quiet per program would miss the copies programs post after it.)
    The count is the word after the programs' call counters, back to 0 for the next call."""
    tl.debug_barrier()   # the program's posts (made by its thread 0) before its arrival
    ended = ptr_at(mine + off_counters, tl.int32) + tl.num_programs(0)
    if tl.atomic_add(ended, 1, sem="acq_rel", scope="gpu") == tl.num_programs(0) - 1:
        tl.store(ended, 0)
        for d in tl.static_range(1, WORLD):
            note_failure(status, cco.Sdma.quiet(dc, (me + d) % WORLD, coop=cco.CoopScope.BLOCK))


@triton.jit
def landed_before(mine, off_landed, src):
    """SDMA: the copies from sender src that the calls before this one counted (count_landed)."""
    return tl.load(ptr_at(mine + off_landed, tl.int64) + src)


@triton.jit
def count_landed(mine, off_landed, off_counts, sources, rows_from, par, WORLD: tl.constexpr, PER: tl.constexpr,
                 ANNOUNCED: tl.constexpr):
    """SDMA: the copies each sender posted here this call (a copy per PER rows it sends here:
    the rows it announced with its start flag, else rows_from[i] for sender sources[i], i = 1..W-1)
    added to landed[sender] (W int64, then the call's count of programs done, int32), where the
    next call's waits start from (landed_before). By the last program to end the call: every other
    one has done all its waits (the acq_rel count orders their reads of landed before the update),
    and program 0 has seen every start flag. Counting what senders announced, not what this rank
    expected, keeps the count true after a call whose counts disagreed (ops.check reports that
    call)."""
    landed = ptr_at(mine + off_landed, tl.int64)
    done = (landed + WORLD).to(tl.pointer_type(tl.int32), bitcast=True)
    if tl.atomic_add(done, 1, sem="acq_rel", scope="gpu") == tl.num_programs(0) - 1:
        for i in tl.static_range(1, WORLD):
            src = tl.load(sources + i)
            if ANNOUNCED:
                rows = tl.load(ptr_at(mine + off_counts, tl.int32) + (par * WORLD + src) * (COUNT_BYTES // 4),
                               volatile=True)
            else:
                rows = tl.load(rows_from + i)
            tl.store(landed + src, tl.load(landed + src) + tl.cdiv(rows, PER))
        tl.store(done, 0)


@triton.jit
def wait_for(dc, mine, off_flags, index, epoch, status, timeout, GDA: tl.constexpr, SIG_FLAGS: tl.constexpr):
    """Waits for flag `index` of the flags area: its word in this rank's workspace (LSA) or
    signal SIG_FLAGS + index (GDA)."""
    if GDA:
        late = wait_signal(dc, SIG_FLAGS + index, epoch, status, timeout)
    else:
        late = wait_flag(mine + off_flags + index.to(tl.int64) * 4, epoch, status, dc, timeout)
    return late


@triton.jit
def count_tile(arrivals):
    """Every thread's stores of this tile ordered (system scope), then one arrival: acq_rel,
    so the tile that completes a count has seen the others' stores and, announcing them,
    passes them on. Returns the count before this arrival."""
    cco.system_fence(0)
    tl.debug_barrier()
    return tl.atomic_add(arrivals, 1, sem="acq_rel", scope="sys")


# --- the start of a call and its end -------------------------------------------------------

@triton.jit
def say_hello(dc, ws, base, stride, me, status, off_hello, off_counts, off_sent, counts_for, epoch,
              WORLD: tl.constexpr, SEND_COUNTS: tl.constexpr, GDA: tl.constexpr, NSIG: tl.constexpr):
    """Program 0 raises this call's start flag on every peer, with the rows it sends each where
    SEND_COUNTS (counts_for: a pointer to W int32 by receiver rank; not read otherwise). GDA:
    start flag (par, sender) is signal par * W + sender."""
    if tl.program_id(0) == 0:
        par = (epoch % 2).to(tl.int64)
        for d in tl.static_range(1, WORLD):
            peer = (me + d) % WORLD
            at = par * WORLD + me
            if GDA:
                if SEND_COUNTS:
                    gda_signal(dc, ws, base, off_sent, status, peer, at, epoch, NSIG, off_counts + at * COUNT_BYTES,
                               tl.load(counts_for + peer), True)
                else:
                    gda_signal(dc, ws, base, off_sent, status, peer, at, epoch, NSIG)
            else:
                there = base + peer.to(tl.int64) * stride
                if SEND_COUNTS:
                    tl.store(ptr_at(there + off_counts, tl.int32) + at * (COUNT_BYTES // 4), tl.load(counts_for + peer))
                raise_flag(there + off_hello + at * 4, epoch)


@triton.jit
def open_call(dc, ws, off_counters, off_status, off_hello, off_counts, off_sent, counts_for, WORLD: tl.constexpr,
              SEND_COUNTS: tl.constexpr, GDA: tl.constexpr, NSIG: tl.constexpr):
    """What every operator's kernel does first: (this rank's index, rank 0's copy of the
    workspace, the distance between copies, this rank's copy, this call's epoch, its parity (which
    half of the workspace the call uses), the status word), with this call's start flag raised on
    every peer (with counts_for[peer], the rows sent to it, where SEND_COUNTS)."""
    me, base, stride = rank_bases(dc, ws, WORLD, GDA)
    mine = base + me.to(tl.int64) * stride
    epoch = begin_call(mine, off_counters)
    par = (epoch % 2).to(tl.int64)
    status = ptr_at(mine + off_status, tl.int32)
    say_hello(dc, ws, base, stride, me, status, off_hello, off_counts, off_sent, counts_for, epoch, WORLD,
              SEND_COUNTS, GDA, NSIG)
    return me, base, stride, mine, epoch, par, status


@triton.jit
def await_hellos(dc, mine, me, off_hello, off_counts, expected, epoch, status, timeout, WORLD: tl.constexpr,
                 GDA: tl.constexpr):
    """Program 0 waits for every peer's start flag of this call; where `expected` (W int32 by
    sender rank) is given, a sender that announced another row count marks status word 1."""
    if tl.program_id(0) == 0:
        par = (epoch % 2).to(tl.int64)
        for d in tl.static_range(1, WORLD):
            peer = (me + d) % WORLD
            at = par * WORLD + peer
            if GDA:
                wait_signal(dc, at, epoch, status, timeout)
            else:
                wait_flag(mine + off_hello + at * 4, epoch, status, dc, timeout)
            if expected is not None:
                said = tl.load(ptr_at(mine + off_counts, tl.int32) + at * (COUNT_BYTES // 4), volatile=True)
                if said != tl.load(expected + peer):
                    tl.store(status + 1, 1)
