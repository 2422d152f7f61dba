# SPDX-License-Identifier: MIT
"""The guide's python/01_barrier: a host barrier across ranks, the whole lifecycle, no kernel.

    python -m cco.launch -n 4 examples/python/01_barrier.py           (GPUs)
    CCO_PLATFORM=cpu python -m cco.launch -n 4 examples/python/01_barrier.py   (no GPU)
    torchrun --standalone --nproc_per_node=4 examples/python/01_barrier.py  (the id over gloo)
    mpirun -np 4 python examples/python/01_barrier.py                  (the id over mpi4py)

Each rank creates the communicator, allocates and registers a window, creates a device
communicator, meets the others at the barrier a few times, and tears everything down (the
context manager frees what the communicator tracks).
"""

import time

from cco import GDA_CONNECTION_NONE, CCODevCommRequirements, Communicator
from cco.runtime import bootstrap, run_script


def main():
    rank, world, uid = bootstrap()  # from whichever launcher started this process
    with Communicator.init(world, rank, uid, per_rank_vmm=64 << 20) as comm:
        mem = comm.alloc_mem(4096)
        comm.register_window(mem.ptr, mem.size)
        comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_NONE))
        start = time.perf_counter()
        for _ in range(10):
            comm.barrier()
        took = (time.perf_counter() - start) / 10 * 1e6
        print(f"rank {comm.rank}/{comm.world_size}: 10 barriers, {took:.1f} us each: OK")


if __name__ == "__main__":
    raise SystemExit(run_script(main))
