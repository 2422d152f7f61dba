# SPDX-License-Identifier: MIT
"""cco.ops: GEMMs fused with the collective that follows or precedes them.

    from cco import ops
    y = ops.ag_gemm(a, w, comm)          # all_gather(a) @ w, the gather overlapped with the GEMM

Each operator is one persistent Triton kernel that multiplies tiles and moves them to or
from the peers' symmetric memory itself (LSA: loads and stores through the peers' mappings),
signalling tile by tile. See docs/ops.md for the semantics of each, the signal protocol and
the limits.

  gemm_ar(a, b, comm)            all-reduce of a @ b                (row-parallel linear)
  gemm_rs(a, b, comm)            reduce-scatter of a @ b over M     (torch fused_matmul_reduce_scatter)
  ag_gemm(a, b, comm)            all_gather(a) @ b                  (torch fused_all_gather_matmul)
  gemm_ag(a, b, comm)            all_gather(a @ b)
  gemm_a2a(a, b, splits, comm)   all_to_all_single(a @ b)           (MoE combine, Ulysses)
  a2a_gemm(a, b, splits, comm)   all_to_all_single(a) @ b           (MoE dispatch)
  symmetric_pool(comm)           a torch.cuda.MemPool of CCO symmetric memory
  check(comm)                    raises if a call gave up waiting for a peer
"""

from cco.ops.allgather import ag_gemm, gemm_ag
from cco.ops.alltoall import a2a_gemm, gemm_a2a
from cco.ops.checks import OperandError
from cco.ops.context import check
from cco.ops.pool import symmetric_pool, window_offset
from cco.ops.reduce import gemm_ar, gemm_rs

__all__ = ["OperandError", "a2a_gemm", "ag_gemm", "check", "gemm_a2a", "gemm_ag", "gemm_ar", "gemm_rs",
           "symmetric_pool", "window_offset"]
