# SPDX-License-Identifier: MIT
"""The GEMM core every operator shares: tiles in grouped order, the fp32 product of a tile,
and the stores, loads and row copies around it. Plain Triton; the signalling between ranks
is in cco.ops.kernels.signals.

The product reads its tiles one of two ways (TMA, a constant of the launch: cco.ops.planning.
uses_tma). On NVIDIA sm_90 and later, with rows a multiple of 16 bytes apart, by the tensor
memory accelerator, through descriptors made on the device: B's once a program, A's once a
program per block of rows that share a source (all of `a`; in the gather kernel, `a` or one
peer's slot, chosen at run time: two descriptors fixed at launch would need two pipelined loops
and twice the shared memory). Making a descriptor costs a write of 128 bytes and a proxy fence,
so none is made per tile. Elsewhere by pointer loads (cp.async on NVIDIA).
"""

import triton
import triton.language as tl
from triton.language import core


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


@core.extern
def async_proxy_fence(_semantic=None):
    """fence.proxy.async.global: global memory this thread saw written by the generic proxy (a
    peer's rows, acquired through their flag or count) ordered before its TMA reads, which go
    through the async proxy; the PTX memory model asks a fence of data that crosses proxies.
    For kernels with TMA only (NVIDIA sm_90+)."""
    return core.inline_asm_elementwise("mov.u32 $0, 0;\n\tfence.proxy.async.global;", "=r", [], dtype=core.int32,
                                       is_pure=False, pack=1, _semantic=_semantic)


@triton.jit
def b_operand(b, K, N, sbk, sbn, BK: tl.constexpr, BN: tl.constexpr, TMA: tl.constexpr, B_T: tl.constexpr):
    """What mma reads B (K x N, strides sbk, sbn) through: TMA: a descriptor, made once a
    program (B_T: over b's transpose, N x K row-major, where b's columns are contiguous);
    else b itself."""
    if TMA:
        if B_T:
            return tl.make_tensor_descriptor(b, shape=[N, K], strides=[sbn, 1], block_shape=[BN, BK])
        else:
            return tl.make_tensor_descriptor(b, shape=[K, N], strides=[sbk, 1], block_shape=[BK, BN])
    else:
        return b


@triton.jit
def a_operand(a, rows, K, sam, BM: tl.constexpr, BK: tl.constexpr, TMA: tl.constexpr):
    """What mma reads A through: rows [0, rows) of a row-major matrix at `a` (row stride sam,
    K columns). TMA: a descriptor over them, which reads zeros past `rows` and past K; else the
    pointer itself."""
    if TMA:
        return tl.make_tensor_descriptor(a, shape=[tl.maximum(rows, 1), K], strides=[sam, 1], block_shape=[BM, BK])
    else:
        return a


@triton.jit
def mma(a_in, row0, sam, b, sbk, sbn, nrows, col0, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, TMA: tl.constexpr, B_T: tl.constexpr):
    """The fp32 product of rows [row0, row0 + nrows) of A (a_in from a_operand; row stride sam,
    unit column stride) with columns [col0, col0 + BN) of B (b from b_operand; strides sbk,
    sbn), K deep. Rows past nrows are zeros (TMA, past the descriptor's rows) or repeat valid
    ones; their results are never stored."""
    if TMA:
        return _mma_tma(a_in, row0, b, col0, K, BM, BN, BK, B_T)
    else:
        return _mma_pointers(a_in + row0.to(tl.int64) * sam, sam, b, sbk, sbn, nrows, col0, N, K, BM, BN, BK, EVEN_K,
                             EVEN_N)


@triton.jit
def _mma_tma(a_desc, row0, b_desc, col0, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, B_T: tl.constexpr):
    """mma through the descriptors of a_operand and b_operand."""
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([row0, k * BK])
        if B_T:
            b = b_desc.load([col0, k * BK]).T
        else:
            b = b_desc.load([k * BK, col0])
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def _mma_pointers(a_ptr, sam, b_ptr, sbk, sbn, nrows, col0, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr, EVEN_K: tl.constexpr, EVEN_N: tl.constexpr):
    """mma by pointer loads. Rows past nrows repeat valid ones, so A's loads need no mask."""
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
def out_operand(out, rows, N, BM: tl.constexpr, BN: tl.constexpr, TMA_OUT: tl.constexpr):
    """Where store_out writes: rows [0, rows) of a row-major matrix of N columns at `out`.
    TMA_OUT: a descriptor over them, whose stores stop at `rows` and N by themselves; a tile goes
    in two halves, so that one half's staging (32 KiB) fits in shared memory beside four stages
    of loads. Else the pointer itself."""
    if TMA_OUT:
        return tl.make_tensor_descriptor(out, shape=[tl.maximum(rows, 1), N], strides=[N, 1],
                                         block_shape=[BM, BN // 2])
    else:
        return out


@triton.jit
def store_out(o, row0, nrows, col0, N, value, BM: tl.constexpr, BN: tl.constexpr, TMA_OUT: tl.constexpr):
    """value (BM x BN) into rows [row0, row0 + nrows) and columns [col0, col0 + BN) ∩ [0, N) of
    what out_operand made. By TMA the stores are asynchronous: the tile's registers are free as
    soon as they are staged, and the next tile's loads start while the stores drain."""
    if TMA_OUT:
        left, right = tl.split(tl.permute(tl.reshape(value, (BM, 2, BN // 2)), (0, 2, 1)))
        o.store([row0, col0], left)
        o.store([row0, col0 + BN // 2], right)
    else:
        store_tile(o + row0.to(tl.int64) * N, N, nrows, col0, N, value, BM, BN)


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
