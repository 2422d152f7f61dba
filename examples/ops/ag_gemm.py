# SPDX-License-Identifier: MIT
"""ag_gemm: all_gather(a) @ w, the gather overlapped with the GEMM (a column-parallel linear
after sequence parallelism). Each rank holds M/W rows of the activations and N/W columns of
the weight; every rank gets all M rows of its N/W columns.

    python -m cco.launch -n 2 examples/ops/ag_gemm.py [--transport gda|sdma]   (sdma: CCO_ENABLE_SDMA=1)
    torchrun --nproc_per_node 2 examples/ops/ag_gemm.py
"""

import argparse

import torch

from cco import Communicator, ops
from cco.runtime import bootstrap

M, K, N = 4096, 4096, 8192

parser = argparse.ArgumentParser()
parser.add_argument("--transport", default="lsa", choices=["lsa", "gda", "sdma"])
transport = parser.parse_args().transport

rank, world, uid = bootstrap()
with Communicator.init(world, rank, uid) as comm:
    pool = ops.symmetric_pool(comm, 256 << 20)      # activations in CCO symmetric memory
    torch.manual_seed(rank)
    with torch.cuda.use_mem_pool(pool):
        a = torch.randn(M // world, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(K, N // world, device="cuda", dtype=torch.bfloat16) / 64
    y, gathered = ops.ag_gemm(a, w, comm, transport=transport, return_gathered=True)
    torch.testing.assert_close(y, gathered @ w, rtol=2e-2, atol=2e-2)
    assert torch.equal(gathered[rank * (M // world):(rank + 1) * (M // world)], a)
    ops.check(comm)
    print(f"rank {rank}: ag_gemm {tuple(a.shape)} -> {tuple(y.shape)} ok")
