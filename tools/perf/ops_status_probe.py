# SPDX-License-Identifier: MIT
"""Which cco.ops call gives up, and where: each operator called 25 times over a transport with
small integer inputs, each call checked on its own (the plan's status word, the result against
torch), the first bad call named, and any error the proxy met on its own.

    python -m cco.launch -n 2 tools/perf/ops_status_probe.py [gda|lsa|sdma] [M,K,N]
    CCO_TEST_NODES_PER_HOST=2 CCO_NET=tcp CCO_SOCKET_IFNAME==lo \\
        python -m cco.launch -n 2 tools/perf/ops_status_probe.py gda     (two virtual nodes over tcp)
"""

import sys
import time

import torch

from cco import Communicator, ops
from cco.ops.context import OpsContext
from cco.runtime import bootstrap

CALLS = 25


def ints(shape, seed, dev):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(-2, 3, shape, generator=g).float().to(torch.bfloat16).to(dev)


def status_of(comm, op):
    """Status words 0 and 1 of op's plan (0 0: nothing gave up, every count agreed), and what a
    wait that ran out of time waited for ("" if none)."""
    torch.cuda.synchronize()
    for key, plan in OpsContext.of(comm).plans.items():
        if key[0] == op:
            words, waited = OpsContext.plan_status(plan)
            return words[:2], waited
    return [0, 0], ""


def main(transport, shape):
    """shape: (M, K, N), M the rows of a shard (gemm_ar and gemm_rs multiply M x W rows)."""
    M, K, N = shape
    rank, world, uid = bootstrap()
    dev = torch.device("cuda", torch.cuda.current_device())
    comm = Communicator.init(world, rank, uid)
    for op in ("gemm_rs", "gemm_ar", "ag_gemm", "gemm_ag"):
        first_bad, started = None, time.monotonic()
        for call in range(CALLS):
            rows = M * world if op in ("gemm_ar", "gemm_rs") else M
            a_all = [ints((rows, K), 100 * call + r, dev) for r in range(world)]
            b = ints((K, N), 7 + call, dev)
            got = getattr(ops, op)(a_all[rank], b, comm, transport=transport)
            if op in ("gemm_ar", "gemm_rs"):
                want = sum((x.float() @ b.float()) for x in a_all).to(torch.bfloat16)
                if op == "gemm_rs":
                    want = want[rank * M:(rank + 1) * M]   # this rank's M of the M x W rows
            else:
                want = (torch.cat(a_all).float() @ b.float()).to(torch.bfloat16)
            words, waited = status_of(comm, op)
            if words[0] or not torch.equal(got, want):
                first_bad = (call, words + ([waited] if waited else []), int((got != want).sum()))
                break
        verdict = "clean" if first_bad is None else \
            f"call {first_bad[0]} bad (status {first_bad[1]}, {first_bad[2]} elements differ)"
        print(f"rank {rank}: {op} over {transport}, {CALLS} calls: {verdict} ({time.monotonic() - started:.1f} s)",
              flush=True)
        try:
            comm.check_async_error()
        except Exception as e:  # noqa: BLE001 (what the proxy met, named)
            print(f"rank {rank}: the proxy: {e}", flush=True)
        comm.barrier()
        if first_bad is not None:
            break   # the plans' epochs are out of step now
    comm.abort()
    comm.destroy()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gda",
         tuple(int(x) for x in sys.argv[2].split(",")) if len(sys.argv) > 2 else (256, 128, 512))
