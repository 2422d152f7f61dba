# SPDX-License-Identifier: MIT
"""gemm_rs: a @ w reduce-scattered over M (torch's fused_matmul_reduce_scatter): rank r gets
rows [r M/W, (r+1) M/W) of the sum.

    python -m cco.launch -n 2 examples/ops/gemm_rs.py [--transport gda|sdma]   (sdma: CCO_ENABLE_SDMA=1)
    torchrun --nproc_per_node 2 examples/ops/gemm_rs.py
"""

import argparse

import torch

from cco import Communicator, ops
from cco.runtime import bootstrap

M, K, N = 4096, 8192, 4096

parser = argparse.ArgumentParser()
parser.add_argument("--transport", default="lsa", choices=["lsa", "gda", "sdma"])
transport = parser.parse_args().transport

rank, world, uid = bootstrap()
with Communicator.init(world, rank, uid) as comm:
    gen = [torch.Generator(device="cpu").manual_seed(r) for r in range(world)]
    a_all = [torch.randn(M, K // world, generator=g).to("cuda", torch.bfloat16) / 8 for g in gen]
    w_all = [torch.randn(K // world, N, generator=g).to("cuda", torch.bfloat16) / 8 for g in gen]
    y = ops.gemm_rs(a_all[rank], w_all[rank], comm, transport=transport)
    want = sum((x.float() @ v.float()) for x, v in zip(a_all, w_all))[rank * (M // world):(rank + 1) * (M // world)]
    torch.testing.assert_close(y.float(), want, rtol=3e-2, atol=3e-1)
    ops.check(comm)
    print(f"rank {rank}: gemm_rs -> {tuple(y.shape)} ok")
