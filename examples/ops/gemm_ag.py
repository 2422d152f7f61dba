# SPDX-License-Identifier: MIT
"""gemm_ag: all_gather(a @ w), each tile sent to every rank as soon as it is computed.

    python -m cco.launch -n 2 examples/ops/gemm_ag.py [--transport gda|sdma]   (sdma: CCO_ENABLE_SDMA=1)
    torchrun --nproc_per_node 2 examples/ops/gemm_ag.py
"""

import argparse

import torch

from cco import Communicator, ops
from cco.runtime import bootstrap

M, K, N = 4096, 4096, 4096

parser = argparse.ArgumentParser()
parser.add_argument("--transport", default="lsa", choices=["lsa", "gda", "sdma"])
transport = parser.parse_args().transport

rank, world, uid = bootstrap()
with Communicator.init(world, rank, uid) as comm:
    torch.manual_seed(0)
    w = torch.randn(K, N, device="cuda", dtype=torch.bfloat16) / 64          # the same on every rank
    shards = [torch.randn(M // world, K, device="cuda", dtype=torch.bfloat16) for _ in range(world)]
    y = ops.gemm_ag(shards[rank], w, comm, transport=transport)
    torch.testing.assert_close(y, torch.cat(shards) @ w, rtol=2e-2, atol=2e-2)
    ops.check(comm)
    print(f"rank {rank}: gemm_ag -> {tuple(y.shape)} ok")
