# SPDX-License-Identifier: MIT
"""a2a_gemm: MoE dispatch, then the expert GEMM. Each rank routes its rows to the ranks that
hold their experts (splits[j] rows to rank j, any counts, zeros too) and multiplies what it
received by its expert weight; torch.distributed.all_to_all_single's semantics.

    python -m cco.launch -n 2 examples/ops/a2a_gemm.py [--transport gda|sdma]   (sdma: CCO_ENABLE_SDMA=1)
    torchrun --nproc_per_node 2 examples/ops/a2a_gemm.py
"""

import argparse

import torch

from cco import Communicator, ops
from cco.runtime import bootstrap

M, HIDDEN, FFN = 2048, 7168, 2048

parser = argparse.ArgumentParser()
parser.add_argument("--transport", default="lsa", choices=["lsa", "gda", "sdma"])
transport = parser.parse_args().transport

rank, world, uid = bootstrap()
with Communicator.init(world, rank, uid) as comm:
    gen = [torch.Generator(device="cpu").manual_seed(r) for r in range(world)]
    a_all = [torch.randn(M, HIDDEN, generator=g).to("cuda", torch.bfloat16) / 8 for g in gen]
    w = torch.randn(HIDDEN, FFN, device="cuda", dtype=torch.bfloat16) / 64
    # uneven routing: rank r sends (r + 1 + j) / total of its rows to rank j
    splits_all = []
    for r in range(world):
        weights = [r + 1 + j for j in range(world)]
        s = [M * x // sum(weights) for x in weights]
        s[-1] += M - sum(s)
        splits_all.append(s)
    recv = [splits_all[r][rank] for r in range(world)]
    y = ops.a2a_gemm(a_all[rank], w, splits_all[rank], comm, transport=transport, out_splits=recv)
    got_rows = torch.cat([a_all[r][sum(splits_all[r][:rank]):sum(splits_all[r][:rank + 1])] for r in range(world)])
    torch.testing.assert_close(y, got_rows @ w, rtol=2e-2, atol=2e-2)
    ops.check(comm)
    print(f"rank {rank}: a2a_gemm received {recv} rows -> {tuple(y.shape)} ok")
