# SPDX-License-Identifier: MIT
"""The guide's Triton lsa_copy: each rank copies its window's first N words into the
next rank's window, through the peer pointer cco.Window.lsa_ptr returns.

Run with any launcher:
  python -m cco.launch -n 2 examples/triton/lsa_copy.py
  torchrun --standalone --nproc_per_node=2 examples/triton/lsa_copy.py
  mpirun -np 2 python examples/triton/lsa_copy.py
(Several ranks on one GPU need MPS for their kernels to run at once; this example only
needs each kernel to finish, so it also works without.)
"""

import triton
import triton.language as tl

from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_NONE
from cco.ir.triton import cco
from cco.memview import torch_view
from cco.runtime import bootstrap, gpu_torch, run_script


@triton.jit
def lsa_copy(dev_comm, win, peer: tl.constexpr, N: tl.constexpr):
    me = cco.DevComm.lsa_rank(dev_comm)
    src_addr = cco.Window.lsa_ptr(win, me, 0)
    # The guide writes to offset 0 of the peer's copy; the destination here is the second
    # half, so a rank's source is never overwritten before it is read.
    dst_addr = cco.Window.lsa_ptr(win, peer, N * 4)
    src = src_addr.to(tl.pointer_type(tl.uint32), bitcast=True)
    dst = dst_addr.to(tl.pointer_type(tl.uint32), bitcast=True)
    offs = tl.arange(0, N)
    tl.store(dst + offs, tl.load(src + offs))


def main(n=256):
    torch = gpu_torch("examples/triton/lsa_copy.py")  # here: the kernel also compiles ahead of time without torch

    rank, nranks, uid = bootstrap()
    with Communicator.init(nranks, rank, uid, per_rank_vmm=256 * 1024 * 1024) as comm:
        mem = comm.alloc_mem(2 * n * 4)
        win = comm.register_window(mem.ptr, mem.size)
        reqs = CCODevCommRequirements()
        reqs.gda_connection_type = GDA_CONNECTION_NONE
        dc = comm.create_dev_comm(reqs)

        mine = torch_view(mem.ptr, (2 * n,), torch.int32)
        mine[:n] = torch.arange(n, dtype=torch.int32, device=mine.device) + rank * 1000  # payload rank*1000 + i
        torch.cuda.synchronize()
        comm.barrier()

        peer = (rank + 1) % nranks
        lsa_copy[(1,)](dc.ptr, win.handle, peer=peer, N=n, extern_libs=cco.get_extern_libs())
        torch.cuda.synchronize()
        comm.barrier()

        left = (rank - 1) % nranks
        want = torch.arange(n, dtype=torch.int32, device=mine.device) + left * 1000
        ok = torch.equal(mine[n:], want)
        print(f"rank {rank}/{nranks}: received rank {left}'s data: {'OK' if ok else 'WRONG'}", flush=True)
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(run_script(main))
