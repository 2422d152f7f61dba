# SPDX-License-Identifier: MIT
"""A one-shot all-reduce in Triton for 2-8 ranks: every rank reads every peer's buffer
through LSA peer pointers, sums, and writes its own result (cco_tools.perf.kernels.lsa has the
kernel: two LSA barriers around the reads, one barrier per program).

  python -m cco.launch -n 4 examples/triton/allreduce_oneshot.py [--elements N]
  torchrun --standalone --nproc_per_node=4 examples/triton/allreduce_oneshot.py

All ranks' kernels must run at the same time (they wait for each other): on one GPU that
needs MPS, or ranks as threads of one process (what `cco perf` does).
"""

import argparse

import triton

from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_NONE
from cco.ir.triton import cco
from cco_tools.perf.kernels.lsa import max_programs, oneshot_allreduce
from cco.memview import torch_view
from cco.runtime import bootstrap, gpu_torch, run_script

BLOCK = 1024


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=1 << 18)
    args = ap.parse_args(argv)
    # here: the kernel also compiles ahead of time without torch
    torch = gpu_torch("examples/triton/allreduce_oneshot.py")

    rank, nranks, uid = bootstrap()
    n = args.elements
    # Persistent programs: every rank's grid must be resident at once (ranks may share a GPU).
    programs = min(triton.cdiv(n, BLOCK), max_programs(nranks // max(1, torch.cuda.device_count())))
    with Communicator.init(nranks, rank, uid, per_rank_vmm=1 << 30) as comm:
        mem = comm.alloc_mem(n * 4)
        win = comm.register_window(mem.ptr, mem.size)
        reqs = CCODevCommRequirements()
        reqs.gda_connection_type = GDA_CONNECTION_NONE
        reqs.lsa_barrier_count = programs
        dc = comm.create_dev_comm(reqs)

        x = torch_view(mem.ptr, (n,), torch.float32)
        x.copy_(torch.arange(n, device=x.device, dtype=torch.float32) % 97 + rank)
        out = torch.empty_like(x)
        torch.cuda.synchronize()
        comm.barrier()
        oneshot_allreduce[(programs,)](dc.ptr, win.handle, out, n, 1, NRANKS=nranks, BLOCK=BLOCK,
                                       extern_libs=cco.get_extern_libs())
        torch.cuda.synchronize()
        want = (torch.arange(n, device=x.device, dtype=torch.float32) % 97) * nranks + sum(range(nranks))
        ok = torch.equal(out, want)
        comm.barrier()
        print(f"rank {rank}/{nranks}: all-reduce of {n} floats {'OK' if ok else 'WRONG'}", flush=True)
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(run_script(main))
