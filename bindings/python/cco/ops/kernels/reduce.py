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
"""

import triton
import triton.language as tl

from cco.ir.triton import cco
from cco.ops.kernels.core import (await_hellos, end_call, load_tile, mma, open_call, ptr_at, raise_flag, store_tile,
                                  tile_coords, trace_begin, trace_end, wait_flag)


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


@triton.jit(do_not_specialize=["M", "max_polls", "active"])
def gemm_reduce(dc, ws, a, b, out, M, K, N, stride_am, stride_bk, stride_bn,
                off_counters, off_status, off_hello, off_counts, off_flags, off_slots, off_rflags, off_result,
                max_polls, active,
                WORLD: tl.constexpr, OWNED_MT: tl.constexpr, SLOT_ROWS: tl.constexpr, MT: tl.constexpr,
                NT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, ALL_REDUCE: tl.constexpr, ES: tl.constexpr):
    """ALL_REDUCE: out (M x N) = the sum over ranks of a @ b. Else out (M/W x N) = rows
    [rank M/W, ...) of that sum. active == 0: returns at once."""
    if active != 0:
        OT: tl.constexpr = out.dtype.element_ty
        pid = tl.program_id(0)
        programs = tl.num_programs(0)
        me, base, stride, mine, epoch, par, status = open_call(dc, ws, off_counters, off_status, off_hello,
                                                               off_counts, None, WORLD, False)
        M_OWN = M // WORLD
        OWNED: tl.constexpr = OWNED_MT * NT
        slot_elems = N.to(tl.int64) * SLOT_ROWS
        result_elems = M.to(tl.int64) * N

        # 1. partial tiles into their owners' slots
        for g in range(pid, WORLD * OWNED, programs):
            traced = trace_begin(dc)  # a partial tile, into its owner's slot
            owner = (me + 1 + g // OWNED) % WORLD
            t = g % OWNED
            omt, nt = tile_coords(t, OWNED_MT, NT, GROUP_M)
            row0, nrows, slot_row = _owned_rows(owner, omt, M, M_OWN, BM, WORLD, ALL_REDUCE)
            if nrows > 0:
                acc = mma(a + row0.to(tl.int64) * stride_am, stride_am, b, stride_bk, stride_bn, nrows, nt * BN, N,
                          K, BM, BN, BK, EVEN_K, EVEN_N)
                there = base + owner.to(tl.int64) * stride
                slot = ptr_at(there + off_slots, OT) + (par * WORLD + me) * slot_elems + slot_row.to(tl.int64) * N
                store_tile(slot, N, nrows, nt * BN, N, acc.to(OT), BM, BN)
                raise_flag(there + off_flags + ((par * WORLD + me) * OWNED + t).to(tl.int64) * 4, epoch)
            trace_end(dc, cco.TraceTag.TILE, g, traced)

        # 2. the owned tiles: sum the W partials
        for t in range(pid, OWNED, programs):
            traced = trace_begin(dc)  # an owned tile: the partials waited for and summed
            omt, nt = tile_coords(t, OWNED_MT, NT, GROUP_M)
            row0, nrows, slot_row = _owned_rows(me, omt, M, M_OWN, BM, WORLD, ALL_REDUCE)
            if nrows > 0:
                acc = tl.zeros((BM, BN), dtype=tl.float32)
                for r in tl.static_range(0, WORLD):
                    wait_flag(mine + off_flags + ((par * WORLD + r) * OWNED + t).to(tl.int64) * 4, epoch, status, dc,
                              max_polls)
                    slot = ptr_at(mine + off_slots, OT) + (par * WORLD + r) * slot_elems + slot_row.to(tl.int64) * N
                    acc += load_tile(slot, N, nrows, nt * BN, N, BM, BN)
                value = acc.to(OT)
                if ALL_REDUCE:
                    store_tile(out + row0.to(tl.int64) * N, N, nrows, nt * BN, N, value, BM, BN)
                    mt = row0 // BM
                    for d in tl.static_range(1, WORLD):
                        peer = (me + d) % WORLD
                        area = ptr_at(base + peer.to(tl.int64) * stride + off_result, OT) + par * result_elems
                        store_tile(area + row0.to(tl.int64) * N, N, nrows, nt * BN, N, value, BM, BN)
                    for d in tl.static_range(1, WORLD):
                        peer = (me + d) % WORLD
                        raise_flag(base + peer.to(tl.int64) * stride + off_rflags +
                                   (par * MT * NT + mt * NT + nt).to(tl.int64) * 4, epoch)
                else:
                    store_tile(out + (omt * BM).to(tl.int64) * N, N, nrows, nt * BN, N, value, BM, BN)
            trace_end(dc, cco.TraceTag.REDUCE, t, traced)

        # 3. gemm_ar: the tiles the others own
        if ALL_REDUCE:
            for u in range(pid, MT * NT, programs):
                mt = u // NT
                nt = u % NT
                if mt % WORLD != me:
                    traced = trace_begin(dc)  # another owner's tile: waited for, then copied
                    wait_flag(mine + off_rflags + (par * MT * NT + u).to(tl.int64) * 4, epoch, status, dc, max_polls)
                    row0 = mt * BM
                    nrows = tl.minimum(BM, M - row0)
                    area = ptr_at(mine + off_result, OT) + par * result_elems + row0.to(tl.int64) * N
                    value = load_tile(area, N, nrows, nt * BN, N, BM, BN).to(OT)
                    store_tile(out + row0.to(tl.int64) * N, N, nrows, nt * BN, N, value, BM, BN)
                    trace_end(dc, cco.TraceTag.WAIT, u, traced)

        await_hellos(mine, me, off_hello, off_counts, None, epoch, status, dc, max_polls, WORLD)
        end_call(mine, off_counters, epoch)
