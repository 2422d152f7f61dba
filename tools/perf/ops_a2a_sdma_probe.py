# SPDX-License-Identifier: MIT
"""Why gemm_a2a over SDMA sometimes returns a call early: tests/gpu/test_ops.py's sdma case's
all-to-all sequence (four calls with new splits, the second sending nothing from rank 0),
a2a_gemm and gemm_a2a taking turns, on a fresh plan per round (a new M each round). Every
call is checked against torch; a wrong one is named with what its rows hold (zeros, the rows
of the call before at that parity, or other), and with the plan's bookkeeping on this rank
right then: the copies each sender's calls counted (`landed`), the copies the remote pool
counted (what the waits read), the status words and the call counters.

    python -m cco.launch -n 2 tools/perf/ops_a2a_sdma_probe.py [ROUNDS] [free|barrier] [OPS]
    free: calls back to back (as the test); barrier: a host barrier between calls.
    OPS: gemm_a2a,a2a_gemm (default) or one of them.
Prints one line per wrong call and a verdict per rank: "R rounds, B wrong calls".
"""

import sys

import torch

from cco import Communicator, ops
from cco.memview import torch_view
from cco.ops.context import OpsContext
from cco.runtime import bootstrap

K, N = 96, 300


def ints(shape, seed, dev):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(-2, 3, shape, generator=g).float().to(torch.bfloat16).to(dev)


def splits_for(world, m, seed):
    import random

    rng = random.Random(seed)
    cuts = sorted(rng.randint(0, m) for _ in range(world - 1))
    return [b - a for a, b in zip([0] + cuts, cuts + [m])]


def plan_of(comm, op, m):
    return next((p for key, p in OpsContext.of(comm).plans.items() if key[0] == op and key[1] == m and
                 key[7] == "sdma"), None)


def bookkeeping(comm, op, m, world):
    """(landed per sender, remote pool counts per sender (queue 0), status words 0-7, counters of
    programs 0 and last), after a local synchronisation."""
    torch.cuda.synchronize()
    plan = plan_of(comm, op, m)
    ws = plan.workspace
    landed = ws.view(plan.layout["landed"], world, torch.int64).tolist()
    s = plan.dc.struct
    pool = torch_view(s.sdmaSignals, (s.lsaSize * s.sdmaQueueCount,), torch.int64, device="cuda").tolist()
    status = ws.view(plan.layout["status"], 8, torch.int32).tolist()
    counters = ws.view(plan.layout["counters"], plan.programs, torch.int32).tolist()
    return landed, pool[::s.sdmaQueueCount], status, (counters[0], counters[-1])


def what_rows_hold(got, want, before):
    bad = (got != want).any(dim=1).nonzero().flatten().tolist()
    if not bad:
        return ""
    rows = got[bad]
    kind = "zeros" if bool((rows == 0).all()) else "other"
    if kind == "other" and before is not None and before.shape == got.shape and bool((before[bad] == rows).all()):
        kind = "the call before's"
    return f"rows {bad[0]}..{bad[-1]} ({len(bad)}) hold {kind}"


def main(rounds, mode, names):
    rank, world, uid = bootstrap()
    dev = torch.device("cuda", torch.cuda.current_device())
    comm = Communicator.init(world, rank, uid)
    wrong = 0
    results = {}   # (op, parity) -> the last result at that parity
    for r in range(rounds):
        m = 200 + 8 * r   # a fresh plan (and devcomm) each round
        a_all = [ints((m, K), 11 * q + m, dev) for q in range(world)]
        b = ints((K, N), 4, dev)
        prods = [(x.float() @ b.float()).to(torch.bfloat16) for x in a_all]
        results.clear()
        for call in range(4):
            splits = [splits_for(world, m, 31 * call + q) for q in range(world)]
            if world > 1 and call == 1:
                splits[0] = [m] + [0] * (world - 1)
            recv = [splits[q][rank] for q in range(world)]
            lo = [sum(splits[q][:rank]) for q in range(world)]
            for op in names:
                if op == "gemm_a2a":
                    got = ops.gemm_a2a(a_all[rank], b, splits[rank], comm, out_splits=recv, transport="sdma")
                    want = torch.cat([prods[q][lo[q]:lo[q] + recv[q]] for q in range(world)])
                else:
                    got = ops.a2a_gemm(a_all[rank], b, splits[rank], comm, out_splits=recv, transport="sdma")
                    moved = torch.cat([a_all[q][lo[q]:lo[q] + recv[q]] for q in range(world)])
                    want = (moved.float() @ b.float()).to(torch.bfloat16)
                said = what_rows_hold(got, want, results.get((op, call % 2)))
                results[(op, call % 2)] = got.clone()
                if said:
                    wrong += 1
                    landed, pool, status, counters = bookkeeping(comm, op, m, world)
                    print(f"rank {rank}: round {r} M={m} {op} call {call} splits {splits}: {said}; landed {landed}, "
                          f"pool {pool}, status {status}, counters {counters}", flush=True)
                if mode == "barrier":
                    torch.cuda.synchronize()
                    comm.barrier()
        torch.cuda.synchronize()
        comm.barrier()
        for op in names:   # quiet now: every copy sent here has landed and been counted
            landed, pool, status, _ = bookkeeping(comm, op, m, world)
            if landed != pool or status[0]:
                print(f"rank {rank}: round {r} M={m} {op} at rest: landed {landed} != pool {pool} or status {status}",
                      flush=True)
    print(f"rank {rank}: {mode}: {rounds} rounds, {wrong} wrong calls", flush=True)
    comm.barrier()
    comm.destroy()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6, sys.argv[2] if len(sys.argv) > 2 else "free",
         (sys.argv[3] if len(sys.argv) > 3 else "gemm_a2a,a2a_gemm").split(","))
