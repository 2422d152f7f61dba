# SPDX-License-Identifier: MIT
"""The GEMM core of cco.ops alone, an anchor of `cco perf --suites ops`: the same persistent
programs, grouped tiles, tile shape and product (cco.ops.kernels.core) that every operator
runs, with no communication around them. An operator against it is what the fused machinery
costs (plans, epochs, flags, the gather table, the scatter epilogue); it against torch.matmul
is the Triton core's own distance from cuBLAS.
"""

import triton
import triton.language as tl

from cco.ops import checks, planning
from cco.ops.context import gpu_features
from cco.ops.kernels.core import a_operand, b_operand, mma, out_operand, store_out, tile_coords
from cco.ops.scratch import descriptor_scratch


@triton.jit(do_not_specialize=["M"])
def core_gemm(a, b, c, M, N, K, stride_am, stride_bk, stride_bn, NT: tl.constexpr, BM: tl.constexpr,
              BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, EVEN_K: tl.constexpr, EVEN_N: tl.constexpr,
              TMA: tl.constexpr, B_T: tl.constexpr, TMA_OUT: tl.constexpr):
    """c (M x N, row-major) = a (M x K, unit column stride) @ b, tile by tile over the programs
    (NT: tiles across N, a constant as in the operators' kernels)."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    MT = tl.cdiv(M, BM)
    a_in = a_operand(a, M, K, stride_am, BM, BK, TMA)
    b_in = b_operand(b, K, N, stride_bk, stride_bn, BK, BN, TMA, B_T)
    c_out = out_operand(c, M, N, BM, BN, TMA_OUT)
    for t in range(pid, MT * NT, programs):
        mt, nt = tile_coords(t, MT, NT, GROUP_M)
        row0 = mt * BM
        nrows = tl.minimum(BM, M - row0)
        acc = mma(a_in, row0, stride_am, b_in, stride_bk, stride_bn, nrows, nt * BN, N, K, BM, BN, BK, EVEN_K, EVEN_N,
                  TMA, B_T)
        store_out(c_out, row0, nrows, nt * BN, N, acc.to(c.dtype.element_ty), BM, BN, TMA_OUT)


class _Scratch:
    """The descriptors' scratch of core_matmul's launches (cco.ops.scratch)."""


_SCRATCH = _Scratch()


def core_matmul(a, b, out, sm_count, ranks_per_gpu, backend="cuda"):
    """out = a @ b through core_gemm, with the tiles (planning.tile_config), the programs
    (planning.programs_for) and the way of reading tiles (planning.uses_tma) an operator
    multiplying a's rows would use; a and b laid out as the operators read them."""
    m, k = a.shape
    n = b.shape[1]
    dtype = str(a.dtype).split(".")[-1]
    t = planning.tile_config(backend, dtype, small_m=m)
    tiles = triton.cdiv(m, t.bm) * triton.cdiv(n, t.bn)
    grid = (planning.programs_for(sm_count, ranks_per_gpu, tiles),)
    b_t = checks.b_kmajor(checks.Operand(tuple(b.shape), dtype, tuple(b.stride())))
    problem = checks.Problem("core", 1, m, k, n, dtype, dtype, m, b_kmajor=b_t)
    tma_hardware = backend == "cuda" and gpu_features(a.device)[1]
    tma = planning.uses_tma(tma_hardware, problem)
    with descriptor_scratch(_SCRATCH, a.device):
        core_gemm[grid](a, b, out, m, n, k, a.stride(0), b.stride(0), b.stride(1), NT=triton.cdiv(n, t.bn), BM=t.bm,
                        BN=t.bn, BK=t.bk, GROUP_M=t.group_m, EVEN_K=k % t.bk == 0, EVEN_N=n % t.bn == 0, TMA=tma,
                        B_T=b_t, TMA_OUT=planning.stores_by_tma(tma_hardware, problem), num_warps=t.warps,
                        num_stages=t.stages)
    return out
