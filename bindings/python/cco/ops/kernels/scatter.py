# SPDX-License-Identifier: MIT
"""Multiply, then scatter: gemm_ag (every result row to every rank) and gemm_a2a (each
result row to the rank its split names), fused into one persistent kernel.

A tile's epilogue stores its rows where they belong: rows this rank keeps straight into its
result, the others into a slot (this rank's) of the receiver's workspace. gemm_ag flags every
tile at every peer as it is stored; gemm_a2a counts, per receiver, the tiles with rows for it
and the tile that completes the count raises that receiver's one flag. Once its own tiles
are done a program copies flagged slots into the result (nothing a program waits for needs
a wait of its own first, so nothing can wait in a cycle).

Table (int32, cco.ops.planning.scatter_table): DOFF[W+1] first row of a for each rank,
DTILES[W] tiles holding rows for each rank, SRC/CNT/OUT[W] receiver side in rotated order,
SENDR/RECVR[W] rows to / from each rank.
"""

import triton
import triton.language as tl

from cco.ir.triton import cco
from cco.ops.kernels.core import a_operand, b_operand, copy_rows, mma, out_operand, store_out, store_tile, tile_coords
from cco.ops.kernels.signals import (await_hellos, count_landed, count_tile, end_call, gda_put, landed_before,
                                     note_failure, open_call, ptr_at, quiet_when_last, raise_flag, sdma_queue,
                                     trace_begin, trace_end, wait_copies, wait_for)


@triton.jit(do_not_specialize=["M", "timeout", "active"])
def gemm_scatter(dc, ws, a, b, out, table, M, K, N, stride_am, stride_bk, stride_bn,
                 off_counters, off_status, off_hello, off_counts, off_flags, off_arrivals, off_slots, off_outbox,
                 off_sent, off_landed, timeout, active,
                 WORLD: tl.constexpr, CAP: tl.constexpr, MT: tl.constexpr, NT: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                 EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, BROADCAST: tl.constexpr, CHECK_COUNTS: tl.constexpr,
                 T_DOFF: tl.constexpr, T_DTILES: tl.constexpr, T_SRC: tl.constexpr, T_CNT: tl.constexpr,
                 T_OUT: tl.constexpr, T_SENDR: tl.constexpr, T_RECVR: tl.constexpr, BC: tl.constexpr,
                 ES: tl.constexpr, GDA: tl.constexpr, SIG_FLAGS: tl.constexpr, NSIG: tl.constexpr,
                 SDMA: tl.constexpr, QUEUES: tl.constexpr, TMA: tl.constexpr, B_T: tl.constexpr,
                 ROWS16: tl.constexpr, TMA_OUT: tl.constexpr):
    """BROADCAST: out[me * M + r] = (a @ b)[r] on every rank (gemm_ag). Else rows
    [DOFF[j], DOFF[j+1]) of a @ b go to rank j, which stores those from rank i at OUT (gemm_a2a).
    active == 0: returns at once (loads the binary before any rank waits on it).

    GDA: puts carry whole rows (a tile's rows are not contiguous in a slot). gemm_ag stores
    each tile into this rank's own slot of its own workspace (no peer writes there), counts the
    tiles of its row block (arrivals, 2 x MT), and the tile that completes it puts the block to
    every peer, flagged per row block. gemm_a2a stores the rows into this rank's outbox for
    their receiver and the tile that completes a receiver's count puts everything it gets.
    SDMA: the same as copies, peer d (rank me - d) on queue (d - 1) % QUEUES. gemm_ag's row
    blocks come from several programs and land in any order, so a receiver waits for all of a
    sender's copies of the call (MT a call, counted over every call so far). gemm_a2a's rows
    for a receiver go as one copy from the outbox, by the tile that completes them; a receiver
    waits for it counting from the copies the calls before landed (off_landed:
    signals.count_landed; a sender with no rows for it sends none).

    ROWS16: a result row (N x ES bytes) is a multiple of 16 bytes long, so every row of a slot
    or an outbox starts on 16 bytes (the workspace's areas are ALIGN-aligned, the flat range and
    its slices far more), which gemm_a2a's per-row stores are told."""
    if active != 0:
        OT: tl.constexpr = out.dtype.element_ty
        PUTS: tl.constexpr = GDA or SDMA   # rows go out from this rank's own slot, by puts or copies
        pid = tl.program_id(0)
        programs = tl.num_programs(0)
        me, base, stride, mine, epoch, par, status = open_call(dc, ws, off_counters, off_status, off_hello,
                                                               off_counts, off_sent, table + T_SENDR, WORLD,
                                                               CHECK_COUNTS, GDA, NSIG)
        slot_elems = N.to(tl.int64) * CAP   # one sender's slot
        slot_bytes = slot_elems * ES
        a_in = a_operand(a, M, K, stride_am, BM, BK, TMA)
        b_in = b_operand(b, K, N, stride_bk, stride_bn, BK, BN, TMA, B_T)
        mine_out = out_operand(out + (me * M).to(tl.int64) * N, M, N, BM, BN, TMA_OUT and BROADCAST)   # gemm_ag's

        for g in range(pid, MT * NT, programs):
            traced = trace_begin(dc)  # the tile's range: its product and its stores into the peers
            mt, nt = tile_coords(g, MT, NT, GROUP_M)
            row0 = mt * BM
            nrows = tl.minimum(BM, M - row0)
            acc = mma(a_in, row0, stride_am, b_in, stride_bk, stride_bn, nrows, nt * BN, N,
                      K, BM, BN, BK, EVEN_K, EVEN_N, TMA, B_T)
            value = acc.to(OT)
            if BROADCAST:
                store_out(mine_out, row0, nrows, nt * BN, N, value, BM, BN, TMA_OUT)
                if PUTS:
                    if WORLD > 1:
                        at = (par * WORLD + me) * slot_elems + row0.to(tl.int64) * N
                        store_tile(ptr_at(mine + off_slots, OT) + at, N, nrows, nt * BN, N, value, BM, BN)
                        arrivals = ptr_at(mine + off_arrivals, tl.int32) + par * MT + mt
                        if count_tile(arrivals) == NT - 1:
                            tl.store(arrivals, 0)   # for the call that uses this half next
                            if SDMA:
                                cco.system_fence(0)   # the row block's stores, for the copy engine
                            for d in tl.static_range(1, WORLD):
                                peer = (me + WORLD - d) % WORLD   # rank me - 1 reads this rank's rows first
                                if GDA:
                                    gda_put(dc, ws, mine, off_sent, status, peer, off_slots + at * ES,
                                            off_slots + at * ES, nrows.to(tl.int64) * N * ES,
                                            SIG_FLAGS + (par * WORLD + me) * MT + mt, epoch, NSIG)
                                else:
                                    note_failure(status, cco.Sdma.put(dc, peer, ws, off_slots + at * ES, ws,
                                                                      off_slots + at * ES, nrows.to(tl.int64) * N * ES,
                                                                      (d - 1) % QUEUES, coop=cco.CoopScope.BLOCK))
                else:
                    for d in tl.static_range(1, WORLD):
                        peer = (me + WORLD - d) % WORLD   # rank me - 1 reads this rank's rows first
                        slot = (ptr_at(base + peer.to(tl.int64) * stride + off_slots, OT) +
                                (par * WORLD + me) * slot_elems)
                        store_tile(slot + row0.to(tl.int64) * N, N, nrows, nt * BN, N, value, BM, BN)
                    for d in tl.static_range(1, WORLD):
                        peer = (me + WORLD - d) % WORLD
                        flag = off_flags + ((par * WORLD + me) * (MT * NT) + g).to(tl.int64) * 4
                        raise_flag(base + peer.to(tl.int64) * stride + flag, epoch)
            else:
                rows = row0 + tl.arange(0, BM)
                cols = nt * BN + tl.arange(0, BN)
                dest = tl.zeros((BM,), tl.int32)
                for j in tl.static_range(1, WORLD):
                    dest += (rows >= tl.load(table + T_DOFF + j)).to(tl.int32)
                first = tl.load(table + T_DOFF + dest)   # each row's receiver's first row
                inside = (rows < M)[:, None] & (cols < N)[None, :]
                # Rows this rank keeps: straight into its result, at its own block's place.
                keep = (dest == me)[:, None] & inside
                out_row = (tl.load(table + T_OUT) + rows - tl.load(table + T_DOFF + me)).to(tl.int64)
                tl.store(out + out_row[:, None] * N + cols[None, :], value, mask=keep)
                # The others: into the receiver's slot for this rank (GDA, SDMA: this rank's outbox
                # for the receiver, laid out as that slot). One rank has none.
                if WORLD > 1:
                    if PUTS:
                        there = mine + off_outbox + (par * WORLD + dest).to(tl.int64) * slot_bytes
                    else:
                        there = base + dest.to(tl.int64) * stride + off_slots + (par * WORLD + me) * slot_bytes
                    there += (rows - first).to(tl.int64) * N * ES
                    row_ptrs = there.to(tl.pointer_type(OT), bitcast=True)
                    if ROWS16:   # every row starts on 16 bytes: stores 16 bytes wide (else 2 bytes each)
                        row_ptrs = tl.multiple_of(row_ptrs, 16)
                    tl.store(row_ptrs[:, None] + cols[None, :], value, mask=(dest != me)[:, None] & inside)
                count_and_flag(dc, ws, row0, nrows, me, base, stride, mine, status, table, off_flags, off_arrivals,
                               off_slots, off_outbox, off_sent, slot_bytes, N, par, epoch, WORLD, T_DOFF, T_DTILES,
                               T_SENDR, ES, GDA, SIG_FLAGS, NSIG, SDMA, QUEUES)
            trace_end(dc, cco.TraceTag.TILE, g, traced)

        # Copy what the peers sent into the result.
        if BROADCAST and WORLD > 1:
            for u in range(pid, (WORLD - 1) * MT * NT, programs):
                traced = trace_begin(dc)  # a peer's tile: waited for, then copied
                g = u // (WORLD - 1)
                src = (me + 1 + u % (WORLD - 1)) % WORLD
                mt, nt = tile_coords(g, MT, NT, GROUP_M)
                row0 = mt * BM
                nrows = tl.minimum(BM, M - row0)
                if SDMA:   # src's copies land in any order: wait for all of this call's
                    wait_copies(dc, src, sdma_queue(src, me, WORLD, QUEUES), epoch.to(tl.int64) * MT, status,
                                timeout)
                elif GDA:
                    wait_for(dc, mine, off_flags, (par * WORLD + src) * MT + mt, epoch, status, timeout, GDA,
                             SIG_FLAGS)
                else:
                    wait_for(dc, mine, off_flags, (par * WORLD + src) * (MT * NT) + g, epoch, status, timeout, GDA,
                             SIG_FLAGS)
                slot = ptr_at(mine + off_slots, OT) + (par * WORLD + src) * slot_elems + row0.to(tl.int64) * N
                _copy_tile(slot, out + (src * M + row0).to(tl.int64) * N, nrows, nt * BN, N, BM, BN)
                trace_end(dc, cco.TraceTag.WAIT, u, traced)
        elif not BROADCAST:
            for i in tl.static_range(1, WORLD):
                src = tl.load(table + T_SRC + i)
                cnt = tl.load(table + T_CNT + i)
                chunks = tl.cdiv(cnt, BM)
                if pid < chunks:
                    if SDMA:   # src's one copy of the call
                        before = landed_before(mine, off_landed, src)
                        wait_copies(dc, src, sdma_queue(src, me, WORLD, QUEUES), before + 1, status, timeout)
                    else:
                        wait_for(dc, mine, off_flags, par * WORLD + src, epoch, status, timeout, GDA, SIG_FLAGS)
                for c in range(pid, chunks, programs):
                    slot = ptr_at(mine + off_slots, OT) + (par * WORLD + src) * slot_elems + (c * BM).to(tl.int64) * N
                    dst = out + (tl.load(table + T_OUT + i) + c * BM).to(tl.int64) * N
                    copy_rows(slot, N, dst, N, tl.minimum(BM, cnt - c * BM), N, 32, BC)

        if SDMA:   # a copy the proxy refused fails here, not as a receiver's timeout
            quiet_when_last(dc, mine, off_counters, status, me, WORLD)
        if CHECK_COUNTS:
            await_hellos(dc, mine, me, off_hello, off_counts, table + T_RECVR, epoch, status, timeout, WORLD, GDA)
        else:
            await_hellos(dc, mine, me, off_hello, off_counts, None, epoch, status, timeout, WORLD, GDA)
        if SDMA and not BROADCAST:   # at most CAP rows from a sender: one copy, or none
            count_landed(mine, off_landed, off_counts, table + T_SRC, table + T_CNT, par, WORLD, CAP, CHECK_COUNTS)
        end_call(mine, off_counters, epoch)


@triton.jit
def _copy_tile(src, dst, nrows, col0, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = col0 + tl.arange(0, BN)
    offs = rm[:, None].to(tl.int64) * N + rn[None, :]
    mask = (rm[:, None] < nrows) & (rn[None, :] < N)
    tl.store(dst + offs, tl.load(src + offs, mask=mask, cache_modifier=".cg"), mask=mask)


@triton.jit
def count_and_flag(dc, ws, row0, nrows, me, base, stride, mine, status, table, off_flags, off_arrivals, off_slots,
                   off_outbox, off_sent, slot_bytes, N, par, epoch, WORLD: tl.constexpr, T_DOFF: tl.constexpr,
                   T_DTILES: tl.constexpr, T_SENDR: tl.constexpr, ES: tl.constexpr, GDA: tl.constexpr,
                   SIG_FLAGS: tl.constexpr, NSIG: tl.constexpr, SDMA: tl.constexpr, QUEUES: tl.constexpr):
    """After a gemm_a2a tile: counts it for every receiver (other than this rank) it held rows
    for; the tile that completes a receiver's count raises its flag (GDA: puts the rows for it,
    flagged; SDMA: copies them, counted as they land) and resets the count for the call that
    uses this half next."""
    last_row = row0 + nrows - 1
    for j in tl.static_range(0, WORLD):
        lo = tl.load(table + T_DOFF + j)
        hi = tl.load(table + T_DOFF + j + 1)
        if (me != j) & (lo < hi) & (lo <= last_row) & (hi > row0):
            arrivals = ptr_at(mine + off_arrivals, tl.int32) + (par * WORLD + j)
            if count_tile(arrivals) == tl.load(table + T_DTILES + j) - 1:
                tl.store(arrivals, 0)
                if GDA:
                    rows = tl.load(table + T_SENDR + j).to(tl.int64)
                    gda_put(dc, ws, mine, off_sent, status, j, off_slots + (par * WORLD + me) * slot_bytes,
                            off_outbox + (par * WORLD + j) * slot_bytes, rows * N * ES, SIG_FLAGS + par * WORLD + me,
                            epoch, NSIG)
                elif SDMA:
                    cco.system_fence(0)   # every tile's rows for j, for the copy engine
                    rows = tl.load(table + T_SENDR + j).to(tl.int64)
                    note_failure(status, cco.Sdma.put(dc, j, ws, off_slots + (par * WORLD + me) * slot_bytes, ws,
                                                      off_outbox + (par * WORLD + j) * slot_bytes, rows * N * ES,
                                                      sdma_queue(me, j, WORLD, QUEUES), coop=cco.CoopScope.BLOCK))
                else:
                    raise_flag(base + stride * j + off_flags + (par * WORLD + me) * 4, epoch)
