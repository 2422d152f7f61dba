# SPDX-License-Identifier: MIT
"""Gather, then multiply: ag_gemm (every rank's a to every rank) and a2a_gemm (rows of a to
the rank its split names), fused into one persistent kernel.

Each program interleaves two jobs. It pushes chunks (BM rows of a) of this rank's rows into
the receivers' workspace slots, raising each chunk's flag there; and it multiplies tiles of
the gathered rows by b, in rotated order: this rank's own rows first, straight from `a`
(they need nobody), then each sender's slot, a tile waiting for the flag of its chunk. The
pushes are spread over the program's own-row tiles and all done before its first tile of a
peer's rows, so no program waits before every push it owes is out: whatever the order in
which programs and ranks run, every flag a wait needs is raised by a program that waits for
nothing first. Chunks go first to the rank that needs them first (rank - 1 reads this
rank's block right after its own).

Table (int32, cco.ops.planning.gather_table), fields at the word offsets below.
"""

import triton
import triton.language as tl

from cco.ir.triton import cco
from cco.ops.kernels.core import (a_operand, async_proxy_fence, b_operand, copy_rows, mma, out_operand, store_out,
                                   tile_coords)
from cco.ops.kernels.signals import (await_hellos, count_landed, end_call, gda_put_from, landed_before, note_failure,
                                     open_call, ptr_at, raise_flag, sdma_queue, trace_begin, trace_end, wait_copies,
                                     wait_for)


@triton.jit
def _field(table, at, i):
    return tl.load(table + at + i)


@triton.jit
def _push_unit(dc, ws, u, a, stride_am, table, me, base, stride, status, off_flags, off_slots, off_sent,
               src_win, src_off, K, epoch, WORLD: tl.constexpr, CAP: tl.constexpr, CHUNKS: tl.constexpr,
               BM: tl.constexpr, T_DST: tl.constexpr, T_SOFF: tl.constexpr, T_SCNT: tl.constexpr,
               T_UPRE: tl.constexpr, BC: tl.constexpr, DT: tl.constexpr, ES: tl.constexpr, GDA: tl.constexpr,
               SIG_FLAGS: tl.constexpr, NSIG: tl.constexpr):
    """Push unit u: chunk c of the rows this rank sends receiver DST[d], into its slot for this
    rank; then that chunk's flag (a PUSH range of the trace). GDA: a put from window src_win,
    where `a`'s rows start at src_off (`a` itself in a pool, or the host's copy of it)."""
    traced = trace_begin(dc)
    d = 0
    for j in tl.static_range(1, WORLD - 1):
        d += (u >= _field(table, T_UPRE, j)).to(tl.int32)
    dest = _field(table, T_DST, d)
    c = u - _field(table, T_UPRE, d)
    first = _field(table, T_SOFF, d) + c * BM
    nrows = tl.minimum(BM, _field(table, T_SCNT, d) - c * BM)
    par = (epoch % 2).to(tl.int64)
    flag = ((par * WORLD + me) * CHUNKS + c).to(tl.int64)
    at = ((par * WORLD + me) * CAP + c * BM).to(tl.int64) * K   # the chunk's first element in the slot
    if GDA:
        gda_put_from(dc, ws, src_win, src_off + first.to(tl.int64) * K * ES, base, off_sent, status, dest,
                     off_slots + at * ES, nrows.to(tl.int64) * K * ES, SIG_FLAGS + flag, epoch, NSIG)
    else:
        there = base + dest.to(tl.int64) * stride
        copy_rows(a + first.to(tl.int64) * stride_am, stride_am, ptr_at(there + off_slots, DT) + at, K, nrows, K,
                  32, BC)
        raise_flag(there + off_flags + flag * 4, epoch)
    trace_end(dc, cco.TraceTag.PUSH, u, traced)


@triton.jit
def _copy_out(dc, ws, src_win, src_off, table, d, me, status, off_slots, K, par, WORLD: tl.constexpr,
              CAP: tl.constexpr, BM: tl.constexpr, T_DST: tl.constexpr, T_SOFF: tl.constexpr, T_SCNT: tl.constexpr,
              ES: tl.constexpr, QUEUES: tl.constexpr):
    """SDMA: every chunk this rank sends receiver DST[d], in chunk order on queue d % QUEUES
    (receivers spread over the copy engines), from src_win at src_off (rows of K elements,
    contiguous) into its slot for this rank."""
    dest = _field(table, T_DST, d)
    count = _field(table, T_SCNT, d)
    first = _field(table, T_SOFF, d)
    for c in range(0, tl.cdiv(count, BM)):
        nrows = tl.minimum(BM, count - c * BM)
        at = ((par * WORLD + me) * CAP + c * BM).to(tl.int64) * K * ES
        note_failure(status, cco.Sdma.put(dc, dest, ws, off_slots + at, src_win,
                                          src_off + (first + c * BM).to(tl.int64) * K * ES,
                                          nrows.to(tl.int64) * K * ES, d % QUEUES, coop=cco.CoopScope.BLOCK))


@triton.jit
def _wait_chunk(dc, mine, me, status, off_flags, off_landed, src, c, par, epoch, timeout, WORLD: tl.constexpr,
                CHUNKS: tl.constexpr, GDA: tl.constexpr, SDMA: tl.constexpr, SIG_FLAGS: tl.constexpr,
                QUEUES: tl.constexpr):
    """Waits for chunk c of sender src's rows: its flag or signal; SDMA: src's copies here
    numbering those of the calls before this one (landed[src], see signals.count_landed) and this
    call's up to c, on the queue src uses for this rank (src's push order of this rank:
    DST[d] = src - 1 - d)."""
    if SDMA:
        wait_copies(dc, src, sdma_queue(src, me, WORLD, QUEUES), landed_before(mine, off_landed, src) + c + 1, status,
                    timeout)
    else:
        wait_for(dc, mine, off_flags, (par * WORLD + src) * CHUNKS + c, epoch, status, timeout, GDA, SIG_FLAGS)


@triton.jit(do_not_specialize=["M_OUT", "timeout", "active"])
def gather_gemm(dc, ws, a, b, out, gathered, table, M_OUT, K, N, stride_am, stride_bk, stride_bn,
                off_counters, off_status, off_hello, off_counts, off_flags, off_slots, off_sent, off_landed,
                src_win, src_off, timeout, active,
                WORLD: tl.constexpr, CAP: tl.constexpr, CHUNKS: tl.constexpr, NT: tl.constexpr,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, RETURN_GATHERED: tl.constexpr, CHECK_COUNTS: tl.constexpr,
                T_SRC: tl.constexpr, T_CNT: tl.constexpr, T_OUT: tl.constexpr, T_TPRE: tl.constexpr,
                T_DST: tl.constexpr, T_SOFF: tl.constexpr, T_SCNT: tl.constexpr, T_UPRE: tl.constexpr,
                T_LOCAL: tl.constexpr, T_SENDR: tl.constexpr, T_RECVR: tl.constexpr,
                BC: tl.constexpr, ES: tl.constexpr, GDA: tl.constexpr, SIG_FLAGS: tl.constexpr,
                NSIG: tl.constexpr, SDMA: tl.constexpr, QUEUES: tl.constexpr, TMA: tl.constexpr,
                B_T: tl.constexpr, TMA_OUT: tl.constexpr):
    """out[OUT[i] + r, :] = rows r of sender SRC[i]'s block (CNT[i] rows) @ b, for every i.
    active == 0: returns at once (loads the binary before any rank waits on it). GDA and SDMA
    read `a`'s rows from window src_win at src_off (`a` itself where it lies in a pool's window,
    else a copy of it the host made) and make sure every transfer is complete before the call
    ends (the source is reused). GDA: the chunks travel as puts (off_sent: see
    cco.ops.kernels.signals). SDMA: program d < W - 1 hands receiver d's chunks to a copy engine
    before its first tile; off_landed: the copies from each sender the calls before counted
    (signals.count_landed)."""
    if active != 0:
        DT: tl.constexpr = a.dtype.element_ty
        pid = tl.program_id(0)
        programs = tl.num_programs(0)
        me, base, stride, mine, epoch, par, status = open_call(dc, ws, off_counters, off_status, off_hello,
                                                               off_counts, off_sent, table + T_SENDR, WORLD,
                                                               CHECK_COUNTS, GDA, NSIG)
        b_in = b_operand(b, K, N, stride_bk, stride_bn, BK, BN, TMA, B_T)

        own_tiles = _field(table, T_TPRE, 1)
        units = _field(table, T_UPRE, WORLD - 1)
        if SDMA:
            units = units * 0   # no push units: the copy engines carry every chunk
            for d in range(pid, WORLD - 1, programs):
                _copy_out(dc, ws, src_win, src_off, table, d, me, status, off_slots, K, par, WORLD, CAP, BM, T_DST,
                          T_SOFF, T_SCNT, ES, QUEUES)
        local_first = _field(table, T_LOCAL, 0)
        my_units = tl.maximum(0, tl.cdiv(units - pid, programs))
        my_own = tl.maximum(0, tl.cdiv(own_tiles - pid, programs))
        pushed = 0
        it = 0   # this program's tiles so far
        # Source by source (tiles [TPRE[i], TPRE[i+1]) read sender SRC[i]'s rows): A's
        # descriptor is made once a source, not once a tile.
        for i in range(0, WORLD):
            src = _field(table, T_SRC, i)
            cnt = _field(table, T_CNT, i)
            lo = _field(table, T_TPRE, i)
            if i == 0:
                rows_at = a + local_first.to(tl.int64) * stride_am
                sam = stride_am
            else:
                rows_at = ptr_at(mine + off_slots, DT) + ((par * WORLD + src) * CAP).to(tl.int64) * K
                sam = K
            a_in = a_operand(rows_at, cnt, K, sam, BM, BK, TMA)
            o_in = out_operand(out + _field(table, T_OUT, i).to(tl.int64) * N, cnt, N, BM, BN, TMA_OUT)
            for g in range(lo + (pid - lo % programs + programs) % programs, _field(table, T_TPRE, i + 1), programs):
                traced = trace_begin(dc)  # the tile's range, its pushes and its wait included
                # Pushes due by now: spread over this program's own-row tiles, all before its
                # first tile of a peer's rows.
                due = my_units
                if g < own_tiles:
                    due = tl.minimum(my_units, tl.cdiv((it + 1) * my_units, tl.maximum(my_own, 1)))
                while pushed < due:
                    _push_unit(dc, ws, pid + pushed * programs, a, stride_am, table, me, base, stride, status,
                               off_flags, off_slots, off_sent, src_win, src_off, K, epoch, WORLD, CAP, CHUNKS, BM,
                               T_DST, T_SOFF, T_SCNT, T_UPRE, BC, DT, ES, GDA, SIG_FLAGS, NSIG)
                    pushed += 1
                mt, nt = tile_coords(g - lo, tl.cdiv(cnt, BM), NT, GROUP_M)
                row0 = mt * BM
                nrows = tl.minimum(BM, cnt - row0)
                if i != 0:
                    waited = trace_begin(dc)
                    _wait_chunk(dc, mine, me, status, off_flags, off_landed, src, mt, par, epoch, timeout, WORLD,
                                CHUNKS, GDA, SDMA, SIG_FLAGS, QUEUES)
                    if TMA:   # the rows came through another proxy (a peer's stores, a copy, a put)
                        async_proxy_fence()
                    trace_end(dc, cco.TraceTag.WAIT, g, waited)
                acc = mma(a_in, row0, sam, b_in, stride_bk, stride_bn, nrows, nt * BN, N, K, BM, BN, BK, EVEN_K,
                          EVEN_N, TMA, B_T)
                store_out(o_in, row0, nrows, nt * BN, N, acc.to(out.dtype.element_ty), BM, BN, TMA_OUT)
                trace_end(dc, cco.TraceTag.TILE, g, traced)
                it += 1
        while pushed < my_units:
            _push_unit(dc, ws, pid + pushed * programs, a, stride_am, table, me, base, stride, status, off_flags,
                       off_slots, off_sent, src_win, src_off, K, epoch, WORLD, CAP, CHUNKS, BM, T_DST,
                       T_SOFF, T_SCNT, T_UPRE, BC, DT, ES, GDA, SIG_FLAGS, NSIG)
            pushed += 1

        if RETURN_GATHERED:
            # The gathered rows as well: chunk u of position i = u // CHUNKS, from `a` or a slot.
            for u in range(pid, WORLD * CHUNKS, programs):
                i = u // CHUNKS
                c = u % CHUNKS
                cnt = _field(table, T_CNT, i)
                if c * BM < cnt:
                    src = _field(table, T_SRC, i)
                    nrows = tl.minimum(BM, cnt - c * BM)
                    dst = gathered + (_field(table, T_OUT, i) + c * BM).to(tl.int64) * K
                    if i == 0:
                        copy_rows(a + (local_first + c * BM).to(tl.int64) * stride_am, stride_am, dst, K, nrows, K,
                                  32, BC)
                    else:
                        _wait_chunk(dc, mine, me, status, off_flags, off_landed, src, c, par, epoch, timeout, WORLD,
                                    CHUNKS, GDA, SDMA, SIG_FLAGS, QUEUES)
                        slot = ptr_at(mine + off_slots, DT) + ((par * WORLD + src) * CAP + c * BM).to(tl.int64) * K
                        copy_rows(slot, K, dst, K, nrows, K, 32, BC)

        if SDMA:
            for d in range(pid, WORLD - 1, programs):
                note_failure(status, cco.Sdma.quiet(dc, _field(table, T_DST, d), coop=cco.CoopScope.BLOCK))
        if GDA:
            if my_units > 0:   # the puts read `a` or its copy: done before either may change
                note_failure(status, cco.Gda.flush(dc, coop=cco.CoopScope.BLOCK))
        if CHECK_COUNTS:
            await_hellos(dc, mine, me, off_hello, off_counts, table + T_RECVR, epoch, status, timeout, WORLD, GDA)
        else:
            await_hellos(dc, mine, me, off_hello, off_counts, None, epoch, status, timeout, WORLD, GDA)
        if SDMA:
            count_landed(mine, off_landed, off_counts, table + T_SRC, table + T_CNT, par, WORLD, BM, CHECK_COUNTS)
        end_call(mine, off_counters, epoch)
