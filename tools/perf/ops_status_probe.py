# SPDX-License-Identifier: MIT
"""Which cco.ops call gives up, and where: each operator called 25 times over a transport with
small integer inputs, each call checked on its own (the plan's status word, the result against
torch), the first bad call named, and any error the proxy met on its own.

    python -m cco.launch -n 2 tools/perf/ops_status_probe.py [gda|lsa|sdma] [M,K,N] [OPS]
    OPS: the operators, each 25 calls in a row, comma-separated; ops joined by "+" take turns
    call by call (gemm_ar+gemm_rs: gemm_ar's call 0, gemm_rs's call 0, gemm_ar's call 1, ...)
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


def plan_of(comm, op):
    """op's plan on this rank (the probe calls each operator at one shape), or None."""
    return next((plan for key, plan in OpsContext.of(comm).plans.items() if key[0] == op), None)


def status_of(comm, op):
    """Status words 0 and 1 of op's plan (0 0: nothing gave up, every count agreed), and what a
    wait that ran out of time waited for ("" if none)."""
    torch.cuda.synchronize()
    plan = plan_of(comm, op)
    if plan is None:
        return [0, 0], ""
    words, waited = OpsContext.plan_status(plan)
    return words[:2], waited


def sdma_counts(comm, op):
    """SDMA: the copy counts in op's plan's remote pool (sender-major, then queue), as the
    waits read them."""
    from cco.memview import torch_view

    plan = plan_of(comm, op)
    if plan is None or not plan.dc.struct.sdmaSignals:
        return []
    s = plan.dc.struct
    return torch_view(s.sdmaSignals, (s.lsaSize * s.sdmaQueueCount,), torch.int64, device="cuda").tolist()


def call_checked(op, comm, transport, shape, call, rank, world, dev):
    """One call of op with small integer inputs; (status words [+ what a wait waited for],
    elements that differ from torch), both empty / 0 when the call was right."""
    M, K, N = shape
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
    return (words + ([waited] if waited else [])) if words[0] else [], int((got != want).sum())


def main(transport, shape, groups):
    """shape: (M, K, N), M the rows of a shard (gemm_ar and gemm_rs multiply M x W rows)."""
    rank, world, uid = bootstrap()
    dev = torch.device("cuda", torch.cuda.current_device())
    comm = Communicator.init(world, rank, uid)
    for group in groups:
        first_bad, started = None, time.monotonic()
        for call in range(CALLS):
            for op in group:
                status, differ = call_checked(op, comm, transport, shape, call, rank, world, dev)
                if status or differ:
                    first_bad = (op, call, status, differ)
                    break
            if first_bad:
                break
        name = "+".join(group)
        verdict = "clean" if first_bad is None else \
            f"{first_bad[0]}'s call {first_bad[1]} bad (status {first_bad[2]}, {first_bad[3]} elements differ)"
        print(f"rank {rank}: {name} over {transport}, {CALLS} calls: {verdict} ({time.monotonic() - started:.1f} s)",
              flush=True)
        if first_bad and transport == "sdma":
            for op in group:
                print(f"rank {rank}: {op}'s SDMA copy counts (sender, queue): {sdma_counts(comm, op)}", flush=True)
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
         tuple(int(x) for x in sys.argv[2].split(",")) if len(sys.argv) > 2 else (256, 128, 512),
         [g.split("+") for g in (sys.argv[3] if len(sys.argv) > 3 else "gemm_rs,gemm_ar,ag_gemm,gemm_ag").split(",")])
