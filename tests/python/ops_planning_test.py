# SPDX-License-Identifier: MIT
"""cco.ops on the CPU: the host-side operand checks, the workspace layouts and per-call
tables, and the tables driven through a model of each kernel's loops (numpy, tile by tile,
the same index arithmetic as the Triton code) against the torch reference semantics: every
operator's result for 1, 2, 3 and 4 ranks, row counts that are and are not multiples of the
tile, and uneven all-to-all splits, empty ones included. Also: no program of the gather
kernel waits before it has pushed everything it owes, and the pool's allocator."""

import ctypes
import shutil
import sys
import types

import numpy as np
import pytest

from cco.ops import checks, planning
from cco.ops.checks import Operand, OperandError
from ops_model import cdiv, tile_coords
from ops_model import rand_ints as _rand

TILES = planning.TileConfig(bm=4, bn=8, bk=4, warps=4, stages=1, group_m=2)


def op_(shape, dtype="bfloat16", strides=None):
    return Operand(tuple(shape), dtype, strides)


# --- checks ----------------------------------------------------------------------------------

def test_shapes_and_dtypes_are_checked_with_the_reason():
    cases = [
        (dict(op="gemm_ar", a=op_((8, 4)), b=op_((5, 6))), "a's columns must equal b's rows"),
        (dict(op="gemm_ar", a=op_((8, 4, 1)), b=op_((4, 6))), "a must be a matrix"),
        (dict(op="gemm_ar", a=op_((8, 4), "float32"), b=op_((4, 6), "float32")), "a is float32"),
        (dict(op="gemm_ar", a=op_((8, 4)), b=op_((4, 6), "float16")), "a is bfloat16 and b is float16"),
        (dict(op="gemm_rs", a=op_((10, 4)), b=op_((4, 6))), "not a multiple of the 4 ranks"),
        (dict(op="gemm_a2a", a=op_((8, 4)), b=op_((4, 6)), splits=[1, 2, 3]), "splits has 3 entries"),
        (dict(op="gemm_a2a", a=op_((8, 4)), b=op_((4, 6)), splits=[1, 2, 3, 1]), "add up to 7 rows"),
        (dict(op="gemm_a2a", a=op_((8, 4)), b=op_((4, 6)), splits=[9, -1, 0, 0]), "negative count"),
        (dict(op="a2a_gemm", a=op_((9, 4)), b=op_((4, 6))), "do not divide among 4 ranks"),
        (dict(op="ag_gemm", a=op_((8, 4)), b=op_((4, 6)), out=op_((8, 6))), "the result is 32x6"),
        (dict(op="gemm_ag", a=op_((8, 4)), b=op_((4, 6)), out=op_((32, 6), "float16")), "out is float16"),
        (dict(op="gemm_ar", a=op_((8, 4), "float8_e4m3fn"), b=op_((4, 6), "float8_e4m3fn"), fp8_supported=False),
         "need a GPU with e4m3"),
        (dict(op="gemm_ar", a=op_((0, 4)), b=op_((4, 6))), "empty operand"),
        (dict(op="nope", a=op_((8, 4)), b=op_((4, 6))), "unknown operator"),
    ]
    for kwargs, text in cases:
        with pytest.raises(OperandError, match=text) as err:
            checks.problem(world=4, **kwargs)
        assert str(err.value).startswith("cco.ops.")


def test_problems_follow_the_shard_rules():
    p = checks.problem("gemm_rs", op_((12, 4)), op_((4, 6)), 4)
    assert (p.out_rows, p.a_rows, p.k, p.n) == (3, 12, 4, 6)
    assert checks.problem("gemm_ar", op_((13, 4)), op_((4, 6)), 4).out_rows == 13   # any M
    p = checks.problem("ag_gemm", op_((5, 4)), op_((4, 6)), 3)
    assert (p.out_rows, p.send, p.recv) == (15, (5, 5, 5), (5, 5, 5))
    p = checks.problem("a2a_gemm", op_((8, 4)), op_((4, 6)), 4)
    assert p.send == (2, 2, 2, 2) and p.recv is None and p.out_rows is None
    p = checks.problem("gemm_a2a", op_((8, 4)), op_((4, 6)), 2, splits=[8, 0], out_splits=[3, 0])
    assert (p.send, p.recv, p.out_rows) == ((8, 0), (3, 0), 3)
    p = checks.problem("gemm_ar", op_((8, 4), "float8_e4m3fn"), op_((4, 6), "float8_e4m3fn"), 2)
    assert (p.in_dtype, p.out_dtype) == ("float8_e4m3fn", "bfloat16")
    with pytest.raises(OperandError, match="transport='lsa' reaches 2 of 4"):
        checks.check_transport("gemm_ar", "lsa", 2, 4)
    with pytest.raises(OperandError, match="choose one of lsa, sdma, gda"):
        checks.check_transport("gemm_ar", "nvlink", 4, 4)
    for op in checks.OPERATORS:   # SDMA carries every operator within a node
        checks.check_transport(op, "sdma", 4, 4)
    with pytest.raises(OperandError, match="transport='sdma' reaches 2 of 4"):
        checks.check_transport("gemm_rs", "sdma", 2, 4)


def test_signature_names_what_ranks_must_share():
    a = checks.problem("gemm_ag", op_((8, 4)), op_((4, 6)), 2)
    b = checks.problem("gemm_ag", op_((8, 4)), op_((4, 7)), 2)
    assert planning.signature(a, TILES, "lsa") != planning.signature(b, TILES, "lsa")
    # all-to-all: the splits may differ between ranks, the shapes may not
    c = checks.problem("gemm_a2a", op_((8, 4)), op_((4, 6)), 2, splits=[1, 7])
    d = checks.problem("gemm_a2a", op_((8, 4)), op_((4, 6)), 2, splits=[5, 3])
    assert planning.signature(c, TILES, "lsa") == planning.signature(d, TILES, "lsa")


def test_b_layout_is_agreed_and_steers_the_tma_core():
    """b row-major or column-major (x @ w.t()): which the kernels are built for, so the ranks
    agree on it; the core reads by TMA only on TMA hardware where every row it reads (a's and
    a slot's K elements, b's N, or K when b is column-major) is a multiple of 16 bytes long."""
    row = checks.problem("gemm_ag", op_((8, 64)), op_((64, 24), strides=(24, 1)), 2)
    col = checks.problem("gemm_ag", op_((8, 64)), op_((64, 24), strides=(1, 64)), 2)
    odd = checks.problem("gemm_ag", op_((8, 64)), op_((64, 24), strides=(48, 2)), 2)   # neither: copied
    assert (row.b_kmajor, col.b_kmajor, odd.b_kmajor) == (False, True, False)
    assert planning.signature(row, TILES, "lsa") != planning.signature(col, TILES, "lsa")
    assert planning.uses_tma(True, row) and planning.uses_tma(True, col)
    assert not planning.uses_tma(False, row)                                       # no TMA on the GPU
    n12 = checks.problem("gemm_ag", op_((8, 64)), op_((64, 12), strides=(12, 1)), 2)   # 24-byte rows of b
    assert not planning.uses_tma(True, n12)
    n12_col = checks.problem("gemm_ag", op_((8, 64)), op_((64, 12), strides=(1, 64)), 2)
    assert planning.uses_tma(True, n12_col)                       # column-major: b's rows are K long
    k36 = checks.problem("gemm_ag", op_((8, 36)), op_((36, 24), strides=(24, 1)), 2)    # 72-byte rows of a
    assert not planning.uses_tma(True, k36)
    fp8 = checks.problem("gemm_ag", op_((8, 24), "float8_e4m3fn"), op_((24, 32), "float8_e4m3fn"), 2)
    assert not planning.uses_tma(True, fp8)                       # 24 one-byte elements a row of a


def test_the_result_is_stored_by_tma_where_its_rows_are_16_byte_multiples():
    """The result's own tiles leave by TMA (cco.ops.kernels.core.store_out) on hardware that has
    it, where a result row (N elements of the output type) is a multiple of 16 bytes long; the
    inputs' rows do not matter."""
    n8 = checks.problem("gemm_ag", op_((8, 36)), op_((36, 8), strides=(8, 1)), 2)        # 16-byte rows
    n12 = checks.problem("gemm_ag", op_((8, 64)), op_((64, 12), strides=(12, 1)), 2)     # 24-byte rows
    assert planning.stores_by_tma(True, n8) and not planning.uses_tma(True, n8)   # a's rows: 72 bytes
    assert not planning.stores_by_tma(False, n8) and not planning.stores_by_tma(True, n12)
    fp8 = checks.problem("gemm_ag", op_((8, 32), "float8_e4m3fn"), op_((32, 8), "float8_e4m3fn"), 2)
    assert fp8.out_dtype == "bfloat16" and planning.stores_by_tma(True, fp8)   # 8 bf16 results a row


def test_a_result_that_does_not_start_on_16_bytes_is_refused():
    with pytest.raises(OperandError, match="out must start on a 16-byte boundary"):
        checks.problem("gemm_ar", op_((8, 4)), op_((4, 6)), 2, out=Operand((8, 6), "bfloat16", (6, 1), True, False))
    checks.problem("gemm_ar", op_((8, 4)), op_((4, 6)), 2, out=Operand((8, 6), "bfloat16", (6, 1), True, True))


# --- layouts ---------------------------------------------------------------------------------

def _check_layout(layout):
    spans = sorted(layout.areas.values())
    for (start, size), (nxt, _) in zip(spans, spans[1:]):
        assert start % planning.ALIGN == 0 and start + size <= nxt
    assert layout.size % planning.ALIGN == 0 and layout.size >= spans[-1][0] + spans[-1][1]


@pytest.mark.parametrize("world", [1, 2, 4, 8])
def test_workspaces_are_aligned_disjoint_and_sized(world):
    cfg = planning.TileConfig(128, 256, 64, 8, 4)
    for plan in (
        planning.gather_plan("ag_gemm", world, 0, 1000, 8192, 3584, "bfloat16", "bfloat16", cfg, 132, 1),
        planning.scatter_plan("gemm_ag", world, 0, 1000, 8192, 28672, "bfloat16", "bfloat16", cfg, 132, 1),
        planning.scatter_plan("gemm_a2a", world, 0, 1000, 8192, 7168, "bfloat16", "bfloat16", cfg, 132, 1),
        planning.reduce_plan("gemm_rs", world, 0, 4096 * world, 7168, 8192, "bfloat16", "bfloat16", cfg, 132, 1),
        planning.reduce_plan("gemm_ar", world, 0, 4100, 7168, 8192, "bfloat16", "bfloat16", cfg, 132, 1),
    ):
        _check_layout(plan.layout)
        assert plan.layout.nbytes("counters") == (plan.programs + 1) * 4   # + the programs that ended
    # the two halves of gemm_ag's slots: W senders x 1000 rows x N, bf16
    p = planning.scatter_plan("gemm_ag", world, 0, 1000, 8192, 28672, "bfloat16", "bfloat16", cfg, 132, 1)
    assert p.layout.nbytes("slots") == 2 * world * 1000 * 28672 * 2
    assert p.consts["FLAGS_PER_SOURCE"] == 8 * 112


@pytest.mark.parametrize("world", [1, 2, 3, 8])
@pytest.mark.parametrize("rows", [1, 200, 1000])
def test_gda_workspaces_hold_every_index_the_kernels_use(world, rows):
    """transport="gda": the largest signal id, outbox byte and arrival count each kernel forms
    (the kernels' own index arithmetic) lie inside what the plan sized."""
    cfg = planning.TileConfig(128, 256, 64, 8, 4)
    es, k, n = 2, 768, 1000

    def words(p, name):
        return p.layout.nbytes(name) // 4

    def common(p):
        c = p.consts
        _check_layout(p.layout)
        assert c["GDA"] and c["SIG_FLAGS"] == 2 * world     # start flags: half x sender
        assert words(p, "sent") == world * c["NSIG"]
        assert p.layout.nbytes("counts") == 2 * world * 8     # a put_value's 8 bytes per count
        return c

    for op in ("ag_gemm", "a2a_gemm"):
        p = planning.gather_plan(op, world, 0, rows, k, n, "bfloat16", "bfloat16", cfg, 132, 1, transport="gda")
        c = common(p)
        last_flag = (1 * world + world - 1) * c["CHUNKS"] + c["CHUNKS"] - 1      # half 1, sender W-1, last chunk
        assert c["SIG_FLAGS"] + last_flag == c["NSIG"] - 1
        assert p.layout.nbytes("stage") == rows * k * es and "outbox" not in p.layout.areas   # puts read a, or a copy
    p = planning.scatter_plan("gemm_ag", world, 0, rows, k, n, "bfloat16", "bfloat16", cfg, 132, 1, transport="gda")
    c = common(p)
    assert c["FLAGS_PER_SOURCE"] == c["MT"]                                     # a flag per row block
    assert c["SIG_FLAGS"] + (2 * world - 1) * c["MT"] + c["MT"] - 1 == c["NSIG"] - 1
    assert words(p, "arrivals") >= 2 * c["MT"] and "outbox" not in p.layout.areas   # puts from its own slot
    p = planning.scatter_plan("gemm_a2a", world, 0, rows, k, n, "bfloat16", "bfloat16", cfg, 132, 1, transport="gda")
    c = common(p)
    assert c["SIG_FLAGS"] + 2 * world - 1 == c["NSIG"] - 1 and words(p, "arrivals") >= 2 * world
    assert p.layout.nbytes("outbox") == 2 * world * c["CAP"] * n * es           # half x receiver
    for op in ("gemm_rs", "gemm_ar"):
        p = planning.reduce_plan(op, world, 0, rows * world, k, n, "bfloat16", "bfloat16", cfg, 132, 1,
                                 transport="gda")
        c = common(p)
        assert c["SIG_RFLAGS"] == c["SIG_FLAGS"] + 2 * world * c["OWNED_MT"]
        assert c["NSIG"] == c["SIG_RFLAGS"] + (2 * c["MT"] if op == "gemm_ar" else 0)
        assert words(p, "arrivals") >= 2 * world * c["OWNED_MT"] + 2 * c["OWNED_MT"]
        assert p.layout.nbytes("outbox") == 2 * world * c["SLOT_ROWS"] * n * es
    lsa = planning.reduce_plan("gemm_ar", world, 0, rows * world, k, n, "bfloat16", "bfloat16", cfg, 132, 1)
    assert not lsa.consts["GDA"] and "outbox" not in lsa.layout.areas and "sent" not in lsa.layout.areas
    # SDMA (ag_gemm): LSA's flags and slots, and a staging area for one shard
    p = planning.gather_plan("ag_gemm", world, 0, rows, k, n, "bfloat16", "bfloat16", cfg, 132, 1, transport="sdma")
    _check_layout(p.layout)
    assert p.consts["SDMA"] and not p.consts["GDA"] and p.layout.nbytes("stage") == rows * k * es
    assert p.consts["QUEUES"] == max(1, min(world - 1, planning.SDMA_QUEUES))


def test_programs_stay_resident_with_ranks_sharing_a_gpu():
    assert planning.programs_for(132, 1, 10_000) == 132
    # ranks sharing the GPU: all but one rank's programs leave a pair of SMs whole
    assert planning.programs_for(132, 4, 10_000) == 21
    assert planning.programs_for(132, 2, 10_000) == 65
    assert planning.programs_for(132, 8, 10_000) == 9
    assert planning.programs_for(132, 2, 5) == 5
    assert planning.programs_for(132, 200, 5) == 1
    # copies carry GDA's and SDMA's transfers, and a copy on one GPU needs a free SM
    assert planning.programs_for(132, 2, 10_000, "sdma") == 64
    assert planning.programs_for(132, 1, 10_000, "gda") == 130
    assert planning.programs_for(132, 1, 10_000, "lsa") == 132
    for sms, ranks in [(132, 2), (132, 3), (132, 4), (132, 8), (78, 4), (304, 8)]:
        share = planning.resident_programs(sms, ranks)
        assert share * ranks <= sms and (ranks - 1) * share <= sms // 2 - 1


def test_tile_configs():
    assert planning.tile_config("cuda", "bfloat16") == planning.TileConfig(128, 256, 64, 8, 4)
    assert planning.tile_config("cuda", "bfloat16", small_m=32).bm == 64
    assert planning.tile_config("hip", "float16").bn == 128


def test_tiles_touching():
    assert planning.tiles_touching(0, 0, 4, 3) == 0
    assert planning.tiles_touching(0, 4, 4, 3) == 3
    assert planning.tiles_touching(3, 2, 4, 3) == 6     # rows 3..4 straddle two tile rows
    assert planning.tiles_touching(5, 1, 4, 1) == 1


# --- the kernels' loops over the tables, on numpy ---------------------------------------------

def gather_model(world, a, b, send, broadcast, tiles=TILES, programs=3):
    """What gather_gemm computes on every rank: pushes into slots, then tiles from a or slots.
    Also asserts the push schedule: a program has pushed all it owes before its first
    tile of a peer's rows."""
    bm, bn = tiles.bm, tiles.bn
    rows = [x.shape[0] for x in a]
    cap = rows[0]
    k, n = b[0].shape
    recv = [tuple(send[r][q] for r in range(world)) for q in range(world)]
    tables = [planning.gather_table(world, q, send[q], recv[q], tiles, n, broadcast)[0] for q in range(world)]
    f = planning.gather_table_offsets(world)
    slots = np.full((world, world, cap, k), np.nan)   # [receiver][sender]
    # pushes (every program of every rank; order does not matter for the data)
    for me in range(world):
        t = tables[me]
        units = t[f["UPRE"] + world - 1]
        for u in range(units):
            d = sum(u >= t[f["UPRE"] + j] for j in range(1, world - 1))
            dest, c = t[f["DST"] + d], u - t[f["UPRE"] + d]
            first = t[f["SOFF"] + d] + c * bm
            nrows = min(bm, t[f["SCNT"] + d] - c * bm)
            slots[dest, me, c * bm:c * bm + nrows] = a[me][first:first + nrows]
    outs = []
    for me in range(world):
        t = tables[me]
        total, own, units = t[f["TPRE"] + world], t[f["TPRE"] + 1], t[f["UPRE"] + world - 1]
        out = np.full((sum(recv[me]), n), np.nan)
        for pid in range(programs):
            my_units = max(0, cdiv(units - pid, programs))
            my_own = max(0, cdiv(own - pid, programs))
            pushed = it = 0
            walked = []
            for i in range(world):   # source by source, as the kernel makes A's descriptor once a source
                src, cnt, lo = t[f["SRC"] + i], t[f["CNT"] + i], t[f["TPRE"] + i]
                for g in range(lo + (pid - lo % programs + programs) % programs, t[f["TPRE"] + i + 1], programs):
                    walked.append(g)
                    due = min(my_units, cdiv((it + 1) * my_units, max(my_own, 1))) if g < own else my_units
                    pushed = max(pushed, due)
                    if i > 0:
                        assert pushed == my_units, "a program would wait before its pushes are out"
                    mt, nt = tile_coords(g - lo, cdiv(cnt, bm), cdiv(n, bn), tiles.group_m)
                    r0, nr = mt * bm, min(bm, cnt - mt * bm)
                    block = a[me][t[f["LOCAL"]] + r0:t[f["LOCAL"]] + r0 + nr] if i == 0 else slots[me, src, r0:r0 + nr]
                    cols = slice(nt * bn, min(n, nt * bn + bn))
                    o = t[f["OUT"] + i] + r0
                    assert np.isnan(out[o:o + nr, cols]).all(), "a result tile written twice"
                    out[o:o + nr, cols] = block @ b[me][:, cols]
                    it += 1
            assert walked == list(range(pid, total, programs)), "a program's tiles are its own, in order"
        outs.append(out)
    return outs


def scatter_model(world, a, b, send, broadcast, tiles=TILES, programs=3):
    """What gemm_scatter computes on every rank."""
    bm, bn = tiles.bm, tiles.bn
    m = a[0].shape[0]
    n = b[0].shape[1]
    mt_, nt_ = cdiv(m, bm), cdiv(n, bn)
    recv = [tuple(send[r][q] for r in range(world)) for q in range(world)] if not broadcast else \
        [(m,) * world] * world
    tables = [planning.scatter_table(world, q, send[q] if not broadcast else (m,) * world, recv[q], tiles, n)[0]
              for q in range(world)]
    f = planning.scatter_table_offsets(world)
    slots = np.full((world, world, m, n), np.nan)
    outs = [np.full((sum(recv[q]), n), np.nan) for q in range(world)]
    flagged = np.zeros((world, world), int)  # a2a: [receiver][sender] flags raised
    for me in range(world):
        t = tables[me]
        arrivals = [0] * world
        for g in range(mt_ * nt_):
            mt, nt = tile_coords(g, mt_, nt_, tiles.group_m)
            r0, nr = mt * bm, min(bm, m - mt * bm)
            cols = slice(nt * bn, min(n, nt * bn + bn))
            value = a[me][r0:r0 + nr] @ b[me][:, cols]
            if broadcast:
                outs[me][me * m + r0:me * m + r0 + nr, cols] = value
                for q in range(world):
                    if q != me:
                        slots[q, me, r0:r0 + nr, cols] = value
                continue
            for r in range(nr):
                row = r0 + r
                dest = sum(row >= t[f["DOFF"] + j] for j in range(1, world))
                first = t[f["DOFF"] + dest]
                if dest == me:
                    outs[me][t[f["OUT"]] + row - t[f["DOFF"] + me], cols] = value[r]
                else:
                    slots[dest, me, row - first, cols] = value[r]
            for j in range(world):
                lo, hi = t[f["DOFF"] + j], t[f["DOFF"] + j + 1]
                if j != me and lo < hi and lo <= r0 + nr - 1 and hi > r0:
                    arrivals[j] += 1
                    if arrivals[j] == t[f["DTILES"] + j]:
                        flagged[j, me] += 1
    for me in range(world):
        t = tables[me]
        for i in range(1, world):
            src, cnt, o = t[f["SRC"] + i], t[f["CNT"] + i], t[f["OUT"] + i]
            if broadcast:
                outs[me][src * m:(src + 1) * m] = slots[me, src]
            elif cnt:
                assert flagged[me, src] == 1, "a receiver's flag raised other than once"
                outs[me][o:o + cnt] = slots[me, src, :cnt]
    return outs


def reduce_model(world, a, b, all_reduce, tiles=TILES, programs=3):
    bm, bn = tiles.bm, tiles.bn
    m_rows = a[0].shape[0]
    n = b[0].shape[1]
    plan = planning.reduce_plan("gemm_ar" if all_reduce else "gemm_rs", world, 0, m_rows, 1, n, "bfloat16",
                                "bfloat16", tiles, 132, 1)
    c = plan.consts
    owned, nt_ = c["OWNED_MT"] * c["NT"], c["NT"]
    m_own = m_rows // world
    slots = np.full((world, world, c["SLOT_ROWS"], n), np.nan)
    flags = np.zeros((world, world, owned), int)

    def owned_rows(owner, omt):
        if all_reduce:
            r0 = (owner + omt * world) * bm
            return r0, min(bm, m_rows - r0), omt * bm
        return owner * m_own + omt * bm, min(bm, m_own - omt * bm), omt * bm

    for me in range(world):
        for g in range(world * owned):
            owner, t = (me + 1 + g // owned) % world, g % owned
            omt, nt = tile_coords(t, c["OWNED_MT"], nt_, tiles.group_m)
            r0, nr, sr = owned_rows(owner, omt)
            if nr > 0:
                cols = slice(nt * bn, min(n, nt * bn + bn))
                slots[owner, me, sr:sr + nr, cols] = a[me][r0:r0 + nr] @ b[me][:, cols]
                flags[owner, me, t] += 1
    outs = [np.full((m_rows if all_reduce else m_own, n), np.nan) for _ in range(world)]
    for me in range(world):
        for t in range(owned):
            omt, nt = tile_coords(t, c["OWNED_MT"], nt_, tiles.group_m)
            r0, nr, sr = owned_rows(me, omt)
            if nr > 0:
                cols = slice(nt * bn, min(n, nt * bn + bn))
                assert (flags[me, :, t] == 1).all()
                total = sum(slots[me, r, sr:sr + nr, cols] for r in range(world))
                if all_reduce:
                    for q in range(world):
                        outs[q][r0:r0 + nr, cols] = total
                else:
                    outs[me][omt * bm:omt * bm + nr, cols] = total
    return outs


WORLDS = [1, 2, 3, 4]


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("m", [8, 7, 1])
def test_ag_gemm_model_equals_all_gather_then_matmul(world, m):
    k, n = 6, 13
    a = [_rand((m, k), r) for r in range(world)]
    b = [_rand((k, n), 100 + r) for r in range(world)]
    outs = gather_model(world, a, b, [(m,) * world] * world, broadcast=True)
    for r in range(world):
        np.testing.assert_array_equal(outs[r], np.concatenate(a) @ b[r])


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("m", [8, 7, 1])
def test_gemm_ag_model_equals_matmul_then_all_gather(world, m):
    k, n = 6, 13
    a = [_rand((m, k), r) for r in range(world)]
    b = [_rand((k, n), 100) for _ in range(world)]
    outs = scatter_model(world, a, b, None, broadcast=True)
    for r in range(world):
        np.testing.assert_array_equal(outs[r], np.concatenate([x @ b[0] for x in a]))


def _splits(world, m, seed):
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, m + 1, size=world - 1))
    s = np.diff(np.concatenate([[0], cuts, [m]]))
    return tuple(int(x) for x in s)


def _all_to_all(parts_by_rank, send, world):
    """torch's all_to_all_single: rank q gets rank 0's block for q, then rank 1's, ..."""
    outs = []
    for q in range(world):
        blocks = []
        for r in range(world):
            first = sum(send[r][:q])
            blocks.append(parts_by_rank[r][first:first + send[r][q]])
        outs.append(np.concatenate(blocks))
    return outs


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a2a_models_equal_all_to_all_single(world, seed):
    m, k, n = 11, 5, 9
    a = [_rand((m, k), seed * 10 + r) for r in range(world)]
    b = [_rand((k, n), 100 + r) for r in range(world)]
    send = [_splits(world, m, seed * 7 + r) for r in range(world)]
    if world > 1:
        send[0] = (m,) + (0,) * (world - 1)       # one rank sends all to rank 0, nothing elsewhere
    # gemm_a2a: the product's rows, exchanged (every rank the same b, as a shared expert)
    outs = scatter_model(world, a, [b[0]] * world, send, broadcast=False)
    want = _all_to_all([x @ b[0] for x in a], send, world)
    for q in range(world):
        np.testing.assert_array_equal(outs[q], want[q])
    # a2a_gemm: rows exchanged, then each rank's own b
    outs = gather_model(world, a, b, send, broadcast=False)
    want = _all_to_all(a, send, world)
    for q in range(world):
        np.testing.assert_array_equal(outs[q], want[q] @ b[q])


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("m_rows", [24, 13, 2])
def test_gemm_ar_model_equals_the_sum(world, m_rows):
    k, n = 5, 17
    a = [_rand((m_rows, k), r) for r in range(world)]
    b = [_rand((k, n), 50 + r) for r in range(world)]
    total = sum(x @ y for x, y in zip(a, b))
    for out in reduce_model(world, a, b, all_reduce=True):
        np.testing.assert_array_equal(out, total)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("m_own", [8, 5, 1])
def test_gemm_rs_model_equals_reduce_scatter(world, m_own):
    k, n = 5, 17
    m_rows = m_own * world
    a = [_rand((m_rows, k), r) for r in range(world)]
    b = [_rand((k, n), 50 + r) for r in range(world)]
    total = sum(x @ y for x, y in zip(a, b))
    for r, out in enumerate(reduce_model(world, a, b, all_reduce=False)):
        np.testing.assert_array_equal(out, total[r * m_own:(r + 1) * m_own])


def test_gemm_ar_owners_cover_every_row_once():
    for world in (1, 2, 3, 8):
        for m_rows in (1, 127, 128, 1000):
            rows = sorted(r for q in range(world) for r in planning.owned_rows_ar(q, world, m_rows, 128))
            assert rows == list(range(m_rows))


def test_rotated_order_starts_with_the_rank():
    assert planning.rotated(2, 4) == [2, 3, 0, 1]
    assert planning.recv_from_sends([(1, 2), (3, 4)], 1) == (2, 4)


# --- the pool's allocator --------------------------------------------------------------------

@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")), reason="no C compiler")
def test_pool_allocator_first_fit_and_merge(tmp_path, monkeypatch):
    from cco.ops import pool

    monkeypatch.setenv("CCO_CACHE", str(tmp_path))
    lib = ctypes.CDLL(pool.build_library())
    lib.cco_pool_init.argtypes = [ctypes.c_uint64, ctypes.c_size_t]
    lib.cco_pool_malloc.restype = ctypes.c_uint64
    lib.cco_pool_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    lib.cco_pool_free.argtypes = [ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    lib.cco_pool_in_use.restype = ctypes.c_size_t
    base, size = 1 << 40, 1 << 20        # arithmetic only: the region is never touched
    lib.cco_pool_init(base, size)
    a = lib.cco_pool_malloc(1000, 0, None)
    b = lib.cco_pool_malloc(4096, 0, None)
    c = lib.cco_pool_malloc(512, 0, None)
    assert (a, b, c) == (base, base + 1024, base + 1024 + 4096)
    assert lib.cco_pool_in_use() == 1024 + 4096 + 512
    lib.cco_pool_free(b, 4096, 0, None)
    assert lib.cco_pool_malloc(2048, 0, None) == b            # first fit reuses the hole
    assert lib.cco_pool_malloc(size, 0, None) == 0            # too large: NULL, not a crash
    lib.cco_pool_free(base + (1 << 30), 512, 0, None)         # not ours: ignored
    for p, n in ((a, 1000), (b, 2048), (c, 512)):
        lib.cco_pool_free(p, n, 0, None)
    assert lib.cco_pool_in_use() == 0
    assert lib.cco_pool_malloc(size, 0, None) == base          # merged back into one range
    # a second copy is a second pool with its own region
    other = ctypes.CDLL(pool.build_library())
    other.cco_pool_init.argtypes = [ctypes.c_uint64, ctypes.c_size_t]
    other.cco_pool_malloc.restype = ctypes.c_uint64
    other.cco_pool_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    other.cco_pool_init(base * 2, size)
    assert other.cco_pool_malloc(16, 0, None) == base * 2


def test_window_of_finds_a_tensor_in_its_communicators_pools_only(monkeypatch):
    from cco.ops import pool

    class Comm:
        destroyed = False

    class Win:
        def __init__(self, ptr, size):
            self.local_ptr, self.size = ptr, size

    class Tensor:
        def __init__(self, ptr):
            self.ptr = ptr

        def data_ptr(self):
            return self.ptr

    tp, dp, gone = Comm(), Comm(), Comm()
    gone.destroyed = True
    a, b, c = Win(1 << 20, 4096), Win(2 << 20, 4096), Win(3 << 20, 4096)
    monkeypatch.setattr(pool, "_pools", [(None, a, None, None, tp), (None, b, None, None, dp),
                                         (None, c, None, None, gone)])
    t = Tensor((1 << 20) + 256)
    assert pool.window_of(t) == (a, 256) and pool.window_of(t, tp) == (a, 256)
    assert pool.window_of(t, dp) is None                 # another communicator's pool: not its window
    assert pool.window_of(Tensor((2 << 20) + 4095), dp) == (b, 4095)
    assert pool.window_of(Tensor((2 << 20) + 4096)) is None   # one past the end
    assert pool.window_of(Tensor(3 << 20)) is None            # a destroyed communicator's pool
    assert pool.window_offset(t) == 256


def test_received_rows_come_from_every_rank_send_vector(monkeypatch):
    from cco.ops import alltoall

    capturing = [False]  # torch as far as the function asks it: is a graph being captured
    cuda = types.SimpleNamespace(is_current_stream_capturing=lambda: capturing[0])
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))

    class Ranks:  # what the context's allgather answers: every rank's (operator, send splits)
        rank = 1

        def __init__(self, gathered):
            self.gathered = gathered

        def allgather(self, value):
            return self.gathered

    class Plan:
        pass

    sends = [("gemm_a2a", (1, 2, 3)), ("gemm_a2a", (4, 5, 6)), ("gemm_a2a", (7, 8, 9))]
    assert alltoall._received(Ranks(sends), Plan(), "gemm_a2a", (4, 5, 6), None) == (2, 5, 8)
    assert alltoall._received(Ranks(sends), Plan(), "gemm_a2a", (4, 5, 6), [3, 3, 3]) == (3, 3, 3)
    mixed = sends[:2] + [("a2a_gemm", (7, 8, 9))]
    with pytest.raises(OperandError, match="other ranks called a2a_gemm"):
        alltoall._received(Ranks(mixed), Plan(), "gemm_a2a", (4, 5, 6), None)
    # The same splits here, other splits elsewhere: asked again, never taken from before.
    plan = Plan()
    assert alltoall._received(Ranks(sends), plan, "gemm_a2a", (4, 5, 6), None) == (2, 5, 8)
    other = [("gemm_a2a", (0, 6, 0)), sends[1], ("gemm_a2a", (0, 0, 15))]
    assert alltoall._received(Ranks(other), plan, "gemm_a2a", (4, 5, 6), None) == (6, 5, 0)
    # A capture cannot ask: it takes the last eager answer for its splits, or is refused.
    capturing[0] = True
    assert alltoall._received(Ranks(sends), plan, "gemm_a2a", (4, 5, 6), None) == (6, 5, 0)
    with pytest.raises(OperandError, match="out_splits is needed to capture"):
        alltoall._received(Ranks(sends), plan, "gemm_a2a", (1, 1, 13), None)


def test_a_wait_is_bounded_on_the_gpu_clock_by_the_timeout():
    """The device communicator's waitTimeoutMs (CCO_TIMEOUT_MS) in device_clock ticks: ns on
    NVIDIA (%globaltimer), 10 ns on AMD (s_memrealtime), past 2**31 (an i64 kernel argument);
    0 is none, as for every device wait."""
    assert planning.wait_ticks("cuda", 20000) == 20_000_000_000
    assert planning.wait_ticks("hip", 20000) == 2_000_000_000
    assert planning.wait_ticks("cuda", 1) == 1_000_000 and planning.wait_ticks("hip", 1) == 100_000
    assert planning.wait_ticks("cuda", 0) == planning.NO_WAIT_BOUND == 2**63 - 1
    assert planning.wait_ticks("cuda", 2**32 - 1) == (2**32 - 1) * 1_000_000   # the field's largest


def test_a_wait_that_ran_out_of_time_is_described():
    """Status words 2-6 as a kernel's _note_wait leaves them, in words: an LSA flag placed in
    its workspace area, a GDA signal, SDMA copies."""
    layout = planning.Layout()
    layout.add("status", planning.STATUS_WORDS * planning.INT32)
    flags_at = layout.add("flags", 64 * planning.INT32)
    base = 0x7F00_0000_0000
    address = base + flags_at + 5 * planning.INT32
    lsa = [1, 0, 1, address & 0xFFFFFFFF, address >> 32, 7, 6, 0]
    assert planning.describe_wait(lsa, layout, base) == \
        "a wait that ran out of time: LSA flag word 5 of the workspace's flags area, wanted 7, read 6"
    assert "GDA signal 37, wanted 3, read 2" in planning.describe_wait([1, 0, 2, 37, 0, 3, 2, 0], layout, base)
    assert "SDMA copies from rank 1 on queue 2, wanted 40, read 39" in \
        planning.describe_wait([1, 0, 3, 1, 2, 40, 39, 0], layout, base)
    outside = [1, 0, 1, 0x1000, 0, 1, 0, 0]
    assert "the LSA flag at 0x1000" in planning.describe_wait(outside, layout, base)


def test_a_failed_call_is_described_by_the_status_it_returned():
    """Status word 7 as note_failure leaves it: the ccoDeviceStatus of a failed GDA or SDMA call."""
    assert planning.describe_failed_call(1).startswith("a GDA or SDMA call returned TIMEOUT")
    assert "ABORTED (the proxy failed its ring" in planning.describe_failed_call(2)
    assert "INVALID_ARGUMENT" in planning.describe_failed_call(3)
    assert planning.describe_failed_call(9) == "a GDA or SDMA call returned device status 9"
    assert planning.STATUS_WORDS > 7   # the word is in the plan's status area


def test_descriptor_scratch_is_the_plans_and_set_only_around_its_launches(monkeypatch):
    """The TMA core's descriptors live in scratch Triton asks an allocator for at each launch:
    inside cco.ops.scratch.descriptor_scratch the plan's one buffer (made once, grown when a
    launch asks for more, never made inside a graph capture); outside it, the user's allocator."""
    import triton
    from triton.runtime import _allocation

    from cco.ops.scratch import descriptor_scratch

    made, capturing = [], [False]

    class Buffer:
        def __init__(self, size):
            self.size = size

        def numel(self):
            return self.size

    def empty(size, dtype, device):
        made.append((size, dtype, device))
        return Buffer(size)

    fake_torch = types.SimpleNamespace(empty=empty, int8="int8",
                                       cuda=types.SimpleNamespace(is_current_stream_capturing=lambda: capturing[0]))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)

    def users(size, alignment, stream):
        return "the user's"

    triton.set_allocator(users)
    try:
        plan = types.SimpleNamespace()
        with descriptor_scratch(plan, 3):
            first = _allocation._allocator.get()(512, 128, None)
            assert _allocation._allocator.get()(256, 128, None) is first   # the same buffer again
            grown = _allocation._allocator.get()(1024, 128, None)
            capturing[0] = True
            assert _allocation._allocator.get()(1024, 128, None) is grown   # big enough: no allocation
            with pytest.raises(RuntimeError, match="inside a CUDA graph capture"):
                _allocation._allocator.get()(4096, 128, None)
        assert made == [(512, "int8", 3), (1024, "int8", 3)] and plan.scratch is grown
        assert _allocation._allocator.get()(64, 16, None) == "the user's"
    finally:
        triton.set_allocator(_allocation.NullAllocator())
