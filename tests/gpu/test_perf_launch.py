# SPDX-License-Identifier: MIT
"""The peers `cco perf --suites launch` measures CCO against (NCCL and torch SymmetricMemory
through torch.distributed): their calls made as the suite makes them, in a one-process group,
so the anchor code is exercised on a single GPU. The suite itself, with two processes, runs
in run_all.sh (step perf-launch)."""

import os
import socket

import pytest
import torch

from cco_tools.perf.suites.launch import Anchors


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def anchors():
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    torch.cuda.set_device(0)
    a = Anchors(0, 1, 0, 1 << 18)
    assert a.why is None, a.why
    yield a
    a.close()
    dist.destroy_process_group()


@pytest.mark.parametrize("count", [2048, 1 << 18])
def test_every_peer_sums_what_the_suite_gives_it(anchors, count):
    value = torch.arange(count, device="cuda:0", dtype=torch.float32) % 251
    for name, make, buf in (("nccl", anchors.nccl, anchors.nccl_buf), ("one", anchors.one_shot, None),
                            ("two", anchors.two_shot, anchors.symm_buf)):
        anchors.fill(count, value)
        result = make(count)()
        torch.cuda.synchronize()
        got = result if buf is None else buf[:count]
        assert torch.equal(got, value), name  # one rank: the sum is the input


def test_peers_capture_in_a_graph(anchors):
    """The suite times each peer in a CUDA graph: each must capture and replay. (With one rank
    NCCL's in-place sum has nothing to do, and torch warns that its graph is empty.)"""
    count = 4096
    value = torch.ones(count, device="cuda:0", dtype=torch.float32)
    for make in (anchors.nccl, anchors.one_shot, anchors.two_shot):
        anchors.fill(count, value)
        fn = make(count)
        fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(3):
                fn()
        g.replay()
        torch.cuda.synchronize()
