# SPDX-License-Identifier: MIT
"""Multiply, then reduce: gemm_rs (each rank gets the sum of its M/W rows) and gemm_ar
(every rank gets the whole sum), fused into one persistent kernel of three phases.

1. Partial tiles, owner by owner (rank + 1 first, this rank last): each goes into the
   owner's slot for this rank, and its flag up. Nothing waits here.
2. The tiles this rank owns: once the W partials' flags are up, their sum in rank order
   (fp32; every rank adds in the same order, so gemm_ar gives every rank the same bits)
   goes into the result; gemm_ar also stores it into every peer's result area and flags it.
3. gemm_ar: the tiles other ranks own, copied from the result area once flagged.
A phase waits only for earlier phases of other programs, which never wait on it: no cycle.

gemm_rs: rank q owns rows [q M/W, (q+1) M/W), tiled on their own. gemm_ar: rank q owns the
tile rows q, q + W, q + 2W, ... of M.

GDA: puts carry whole rows of a tile row (a tile's rows are not contiguous in a slot): a
partial tile goes into this rank's outbox for its owner (laid out as the owner's slot for this
rank) and the tile that completes its tile row (arrivals: 2 x W x OWNED_MT counts) puts the
row, flagged per tile row; this rank's own partials stay in its workspace, flagged per tile as
on LSA. gemm_ar's sums go into this rank's own result area (peers write only the rows they
own there) and the tile that completes a tile row puts it to every peer (counts after the
first ones: 2 x OWNED_MT), flagged per tile row (SIG_RFLAGS).

SDMA (whose copies, on one GPU, need the SMs planning.COPY_SMS leaves free: on an H100 a rank's
copies of its sums never completed while both ranks' programs held every SM): the same tile rows
as copies (cco.Sdma.put from the outbox, or from the own result area), each
receiver on its queue (peer d = rank me + d on queue (d - 1) % QUEUES; gemm_ar's sums on the
next QUEUES queues, so that a count never mixes the phases). Copies from several
programs land in any order, so a sum waits for all of a sender's partial tile rows of the call
and gemm_ar's phase 3 for all of an owner's sums (their numbers are fixed by the shape: counted
over every call so far, as gemm_ag's).
"""

import triton
import triton.language as tl

from cco.ir.triton import cco
from cco.ops.kernels.core import a_operand, b_operand, load_tile, mma, out_operand, store_out, store_tile, tile_coords
from cco.ops.kernels.signals import (await_hellos, count_tile, end_call, gda_put, note_failure, open_call, ptr_at,
                                     quiet_when_last, raise_flag, sdma_queue, trace_begin, trace_end, wait_copies,
                                     wait_flag, wait_for)


@triton.jit
def _owned_rows(owner, omt, M, M_OWN, BM: tl.constexpr, WORLD: tl.constexpr, ALL_REDUCE: tl.constexpr):
    """(first row in M, rows, slot row) of owner's tile row omt; rows <= 0: no such tile."""
    if ALL_REDUCE:
        row0 = (owner + omt * WORLD) * BM
        nrows = tl.minimum(BM, M - row0)
    else:
        row0 = owner * M_OWN + omt * BM
        nrows = tl.minimum(BM, M_OWN - omt * BM)
    return row0, nrows, omt * BM


@triton.jit
def _queue(sender, receiver, phase, WORLD: tl.constexpr, QUEUES: tl.constexpr):
    """SDMA: the queue `sender` copies to `receiver` on in `phase` (0: partials, 1: gemm_ar's
    sums); sender and receiver compute the same. Peers go round the other way from the other
    operators' (owner d = rank me + d, signals.sdma_queue with the two ranks swapped), each
    phase on QUEUES queues of its own."""
    return phase * QUEUES + sdma_queue(receiver, sender, WORLD, QUEUES)


@triton.jit
def _tile_rows_owned(owner, M, M_OWN, BM: tl.constexpr, WORLD: tl.constexpr, ALL_REDUCE: tl.constexpr):
    """How many tile rows `owner` sums (each a copy from every peer over SDMA, and gemm_ar's
    a copy to every peer)."""
    if ALL_REDUCE:
        return tl.maximum(0, tl.cdiv(tl.cdiv(M, BM) - owner, WORLD))
    else:
        return tl.cdiv(M_OWN, BM)


@triton.jit
def _share_sum(dc, ws, mine, status, off_result, off_sent, off_arrivals, value, row0, nrows, nt, omt, par,
               result_elems, N, me, epoch, WORLD: tl.constexpr, OWNED_MT: tl.constexpr, MT: tl.constexpr,
               NT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, ES: tl.constexpr, OT: tl.constexpr,
               GDA: tl.constexpr, SIG_RFLAGS: tl.constexpr, NSIG: tl.constexpr, QUEUES: tl.constexpr):
    """gemm_ar over GDA or SDMA: a summed tile into this rank's own result area (where peers
    write only the rows they own); the tile that completes its tile row puts (copies) the row to
    every peer."""
    if WORLD > 1:
        at = par * result_elems + row0.to(tl.int64) * N
        store_tile(ptr_at(mine + off_result, OT) + at, N, nrows, nt * BN, N, value, BM, BN)
        arrivals = ptr_at(mine + off_arrivals, tl.int32) + 2 * WORLD * OWNED_MT + par * OWNED_MT + omt
        if count_tile(arrivals) == NT - 1:
            tl.store(arrivals, 0)   # for the call that uses this half next
            if not GDA:
                cco.system_fence(0)   # every tile of the row, for the copy engine
            for d in tl.static_range(1, WORLD):
                peer = (me + d) % WORLD
                if GDA:
                    gda_put(dc, ws, mine, off_sent, status, peer, off_result + at * ES, off_result + at * ES,
                            nrows.to(tl.int64) * N * ES, SIG_RFLAGS + par * MT + row0 // BM, epoch, NSIG)
                else:
                    note_failure(status, cco.Sdma.put(dc, peer, ws, off_result + at * ES, ws, off_result + at * ES,
                                                      nrows.to(tl.int64) * N * ES,
                                                      _queue(me, peer, 1, WORLD, QUEUES), coop=cco.CoopScope.BLOCK))


@triton.jit(do_not_specialize=["M", "timeout", "active"])
def gemm_reduce(dc, ws, a, b, out, M, K, N, stride_am, stride_bk, stride_bn,
                off_counters, off_status, off_hello, off_counts, off_flags, off_slots, off_rflags, off_result,
                off_outbox, off_sent, off_arrivals, timeout, active,
                WORLD: tl.constexpr, OWNED_MT: tl.constexpr, SLOT_ROWS: tl.constexpr, MT: tl.constexpr,
                NT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, ALL_REDUCE: tl.constexpr, ES: tl.constexpr,
                GDA: tl.constexpr, SIG_FLAGS: tl.constexpr, SIG_RFLAGS: tl.constexpr, NSIG: tl.constexpr,
                SDMA: tl.constexpr, QUEUES: tl.constexpr, TMA: tl.constexpr, B_T: tl.constexpr,
                TMA_OUT: tl.constexpr):
    """ALL_REDUCE: out (M x N) = the sum over ranks of a @ b. Else out (M/W x N) = rows
    [rank M/W, ...) of that sum. active == 0: returns at once."""
    if active != 0:
        OT: tl.constexpr = out.dtype.element_ty
        PUTS: tl.constexpr = GDA or SDMA   # partials travel as tile rows from the outbox
        pid = tl.program_id(0)
        programs = tl.num_programs(0)
        me, base, stride, mine, epoch, par, status = open_call(dc, ws, off_counters, off_status, off_hello,
                                                               off_counts, off_sent, None, WORLD, False, GDA, NSIG)
        M_OWN = M // WORLD
        OWNED: tl.constexpr = OWNED_MT * NT
        slot_elems = N.to(tl.int64) * SLOT_ROWS
        result_elems = M.to(tl.int64) * N
        a_in = a_operand(a, M, K, stride_am, BM, BK, TMA)
        b_in = b_operand(b, K, N, stride_bk, stride_bn, BK, BN, TMA, B_T)
        o_in = out_operand(out, M if ALL_REDUCE else M_OWN, N, BM, BN, TMA_OUT)

        # 1. partial tiles into their owners' slots
        for g in range(pid, WORLD * OWNED, programs):
            traced = trace_begin(dc)  # a partial tile, into its owner's slot
            owner = (me + 1 + g // OWNED) % WORLD
            t = g % OWNED
            omt, nt = tile_coords(t, OWNED_MT, NT, GROUP_M)
            row0, nrows, slot_row = _owned_rows(owner, omt, M, M_OWN, BM, WORLD, ALL_REDUCE)
            if nrows > 0:
                acc = mma(a_in, row0, stride_am, b_in, stride_bk, stride_bn, nrows, nt * BN,
                          N, K, BM, BN, BK, EVEN_K, EVEN_N, TMA, B_T)
                at = (par * WORLD + me) * slot_elems + slot_row.to(tl.int64) * N   # in the owner's slots
                flag = ((par * WORLD + me) * OWNED + t).to(tl.int64) * 4
                if PUTS:
                    if owner != me:
                        box = (par * WORLD + owner) * slot_elems + slot_row.to(tl.int64) * N
                        store_tile(ptr_at(mine + off_outbox, OT) + box, N, nrows, nt * BN, N, acc.to(OT), BM, BN)
                        arrivals = ptr_at(mine + off_arrivals, tl.int32) + (par * WORLD + owner) * OWNED_MT + omt
                        if count_tile(arrivals) == NT - 1:
                            tl.store(arrivals, 0)   # for the call that uses this half next
                            if GDA:
                                gda_put(dc, ws, mine, off_sent, status, owner, off_slots + at * ES,
                                        off_outbox + box * ES, nrows.to(tl.int64) * N * ES,
                                        SIG_FLAGS + (par * WORLD + me) * OWNED_MT + omt, epoch, NSIG)
                            else:
                                cco.system_fence(0)   # every tile of the row, for the copy engine
                                note_failure(status, cco.Sdma.put(dc, owner, ws, off_slots + at * ES, ws,
                                                                  off_outbox + box * ES, nrows.to(tl.int64) * N * ES,
                                                                  _queue(me, owner, 0, WORLD, QUEUES),
                                                                  coop=cco.CoopScope.BLOCK))
                    else:
                        store_tile(ptr_at(mine + off_slots, OT) + at, N, nrows, nt * BN, N, acc.to(OT), BM, BN)
                        raise_flag(mine + off_flags + flag, epoch)
                else:
                    there = base + owner.to(tl.int64) * stride
                    store_tile(ptr_at(there + off_slots, OT) + at, N, nrows, nt * BN, N, acc.to(OT), BM, BN)
                    raise_flag(there + off_flags + flag, epoch)
            trace_end(dc, cco.TraceTag.TILE, g, traced)

        # 2. the owned tiles: sum the W partials
        for t in range(pid, OWNED, programs):
            traced = trace_begin(dc)  # an owned tile: the partials waited for and summed
            omt, nt = tile_coords(t, OWNED_MT, NT, GROUP_M)
            row0, nrows, slot_row = _owned_rows(me, omt, M, M_OWN, BM, WORLD, ALL_REDUCE)
            if nrows > 0:
                acc = tl.zeros((BM, BN), dtype=tl.float32)
                for r in tl.static_range(0, WORLD):
                    own_flag = mine + off_flags + ((par * WORLD + r) * OWNED + t).to(tl.int64) * 4
                    if PUTS and r != me:
                        if GDA:
                            wait_for(dc, mine, off_flags, (par * WORLD + r) * OWNED_MT + omt, epoch, status, timeout,
                                     GDA, SIG_FLAGS)
                        else:   # every partial tile row r sends this rank, this call's included
                            wait_copies(dc, r, _queue(r, me, 0, WORLD, QUEUES),
                                        epoch.to(tl.int64) * _tile_rows_owned(me, M, M_OWN, BM, WORLD, ALL_REDUCE),
                                        status, timeout)
                    else:
                        wait_flag(own_flag, epoch, status, dc, timeout)
                    slot = ptr_at(mine + off_slots, OT) + (par * WORLD + r) * slot_elems + slot_row.to(tl.int64) * N
                    acc += load_tile(slot, N, nrows, nt * BN, N, BM, BN)
                value = acc.to(OT)
                if ALL_REDUCE:
                    store_out(o_in, row0, nrows, nt * BN, N, value, BM, BN, TMA_OUT)
                    mt = row0 // BM
                    if PUTS:
                        _share_sum(dc, ws, mine, status, off_result, off_sent, off_arrivals, value, row0, nrows, nt,
                                   omt, par, result_elems, N, me, epoch, WORLD, OWNED_MT, MT, NT, BM, BN, ES, OT, GDA,
                                   SIG_RFLAGS, NSIG, QUEUES)
                    else:
                        for d in tl.static_range(1, WORLD):
                            peer = (me + d) % WORLD
                            area = ptr_at(base + peer.to(tl.int64) * stride + off_result, OT) + par * result_elems
                            store_tile(area + row0.to(tl.int64) * N, N, nrows, nt * BN, N, value, BM, BN)
                        for d in tl.static_range(1, WORLD):
                            peer = (me + d) % WORLD
                            raise_flag(base + peer.to(tl.int64) * stride + off_rflags +
                                       (par * MT * NT + mt * NT + nt).to(tl.int64) * 4, epoch)
                else:
                    store_out(o_in, omt * BM, nrows, nt * BN, N, value, BM, BN, TMA_OUT)
            trace_end(dc, cco.TraceTag.REDUCE, t, traced)

        # 3. gemm_ar: the tiles the others own
        if ALL_REDUCE:
            for u in range(pid, MT * NT, programs):
                mt = u // NT
                nt = u % NT
                if mt % WORLD != me:
                    traced = trace_begin(dc)  # another owner's tile: waited for, then copied
                    if GDA:
                        wait_for(dc, mine, off_rflags, par * MT + mt, epoch, status, timeout, GDA, SIG_RFLAGS)
                    elif SDMA:   # every sum the owner copies here, this call's included
                        owner = mt % WORLD
                        wait_copies(dc, owner, _queue(owner, me, 1, WORLD, QUEUES),
                                    epoch.to(tl.int64) * _tile_rows_owned(owner, M, M_OWN, BM, WORLD, ALL_REDUCE),
                                    status, timeout)
                    else:
                        wait_flag(mine + off_rflags + (par * MT * NT + u).to(tl.int64) * 4, epoch, status, dc,
                                  timeout)
                    row0 = mt * BM
                    nrows = tl.minimum(BM, M - row0)
                    area = ptr_at(mine + off_result, OT) + par * result_elems + row0.to(tl.int64) * N
                    value = load_tile(area, N, nrows, nt * BN, N, BM, BN).to(OT)
                    store_tile(out + row0.to(tl.int64) * N, N, nrows, nt * BN, N, value, BM, BN)
                    trace_end(dc, cco.TraceTag.WAIT, u, traced)

        if SDMA:   # a copy the proxy refused fails here, not as a receiver's timeout
            quiet_when_last(dc, mine, off_counters, status, me, WORLD)
        await_hellos(dc, mine, me, off_hello, off_counts, None, epoch, status, timeout, WORLD, GDA)
        end_call(mine, off_counters, epoch)
