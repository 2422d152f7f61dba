# SPDX-License-Identifier: MIT
"""gemm_a2a: the expert GEMM, then MoE combine (or Ulysses attention's output all-to-all):
rows of a @ w go back to the ranks they came from, each tile stored at its receiver as soon
as it is computed.

    python -m cco.launch -n 2 examples/ops/gemm_a2a.py [--transport gda|sdma]   (sdma: CCO_ENABLE_SDMA=1)
    torchrun --nproc_per_node 2 examples/ops/gemm_a2a.py
"""

import argparse

import torch

from cco import Communicator, ops
from cco.runtime import bootstrap

M, FFN, HIDDEN = 2048, 2048, 7168

parser = argparse.ArgumentParser()
parser.add_argument("--transport", default="lsa", choices=["lsa", "gda", "sdma"])
transport = parser.parse_args().transport

rank, world, uid = bootstrap()
with Communicator.init(world, rank, uid) as comm:
    gen = [torch.Generator(device="cpu").manual_seed(r) for r in range(world)]
    a_all = [torch.randn(M, FFN, generator=g).to("cuda", torch.bfloat16) / 8 for g in gen]
    w = torch.randn(FFN, HIDDEN, device="cuda", dtype=torch.bfloat16) / 64
    splits = [M // world] * world          # Ulysses: equal blocks; learnt once, no out_splits needed
    y = ops.gemm_a2a(a_all[rank], w, splits, comm, transport=transport)
    block = M // world
    want = torch.cat([a_all[r][rank * block:(rank + 1) * block] @ w for r in range(world)])
    torch.testing.assert_close(y, want, rtol=2e-2, atol=2e-2)
    ops.check(comm)
    print(f"rank {rank}: gemm_a2a -> {tuple(y.shape)} ok")
