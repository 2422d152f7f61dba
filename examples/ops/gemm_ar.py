# SPDX-License-Identifier: MIT
"""gemm_ar: the row-parallel linear, a @ w summed over the ranks (each holds a K/W slice);
every rank gets the same bits. Also captured in a CUDA graph and replayed.

    python -m cco.launch -n 2 examples/ops/gemm_ar.py [--transport gda|sdma]   (sdma: CCO_ENABLE_SDMA=1)
    torchrun --nproc_per_node 2 examples/ops/gemm_ar.py
"""

import argparse

import torch

from cco import Communicator, ops
from cco.runtime import bootstrap

M, K, N = 2048, 8192, 4096

parser = argparse.ArgumentParser()
parser.add_argument("--transport", default="lsa", choices=["lsa", "gda", "sdma"])
transport = parser.parse_args().transport

rank, world, uid = bootstrap()
with Communicator.init(world, rank, uid) as comm:
    gen = [torch.Generator(device="cpu").manual_seed(r) for r in range(world)]
    a_all = [torch.randn(M, K // world, generator=g).to("cuda", torch.bfloat16) / 8 for g in gen]
    w_all = [torch.randn(K // world, N, generator=g).to("cuda", torch.bfloat16) / 8 for g in gen]
    a, w = a_all[rank], w_all[rank]
    y = ops.gemm_ar(a, w, comm, transport=transport)
    want = sum((x.float() @ v.float()) for x, v in zip(a_all, w_all))
    torch.testing.assert_close(y.float(), want, rtol=3e-2, atol=3e-1)

    graph = torch.cuda.CUDAGraph()               # the first call (above) made the plan
    with torch.cuda.stream(torch.cuda.Stream()):
        graph.capture_begin()
        y_graph = ops.gemm_ar(a, w, comm, transport=transport)
        graph.capture_end()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y_graph, y)
    ops.check(comm)
    print(f"rank {rank}: gemm_ar {M}x{K // world}x{N} (eager and graph) ok")
