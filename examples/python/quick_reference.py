# SPDX-License-Identifier: MIT
"""The guide's Quick Reference, runnable: its lines unchanged except `from mori.cco` -> `from cco`.

The guide's snippet assumes three names from its surroundings: `rank`, `nranks` and
`comm_mpi` (anything with an mpi4py-style `bcast(obj, root=0)`). The launcher shim
below provides them, so the same file runs

    under mpirun, with mpi4py:      mpirun -np 4 python quick_reference.py
    under torchrun or cco.launch:   torchrun --standalone --nproc_per_node=4 quick_reference.py
                                    (the launcher has shared the id already: cco.runtime)
    under a plain launcher:         RANK=r WORLD_SIZE=4 CCO_BCAST_DIR=/shared/dir python quick_reference.py
                                    (one process per rank; rank 0 writes the id into the folder)
    alone:                          python quick_reference.py   (one rank)

On a machine without a GPU, set CCO_PLATFORM=cpu.
"""

import os
import pickle
import time


class FileBroadcast:
    """mpi4py's comm.bcast over a folder every rank can read: for launchers without MPI.

    The root publishes each value as one file, renamed into place so a reader never
    sees half of it; the others poll for it.
    """

    def __init__(self, folder, rank, timeout_s=60.0):
        self.folder, self.rank, self.timeout_s = folder, rank, timeout_s
        self.count = 0  # the n-th bcast of every rank meets the root's n-th file

    def bcast(self, obj, root=0):
        path = os.path.join(self.folder, f"bcast-{self.count}.pickle")
        self.count += 1
        if self.rank == root:
            partial = f"{path}.partial"
            with open(partial, "wb") as f:
                pickle.dump(obj, f)
            os.replace(partial, path)
            return obj
        deadline = time.monotonic() + self.timeout_s
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"rank {self.rank}: no broadcast from rank {root} in {path} after {self.timeout_s} s")
            time.sleep(0.01)
        with open(path, "rb") as f:
            return pickle.load(f)


class SharedByTheLauncher:
    """The launcher (cco.launch, torchrun over gloo, mpirun over mpi4py) shared rank 0's id
    already: the snippet's broadcast of the id returns that one."""

    def __init__(self, uid):
        self.uid = uid

    def bcast(self, obj, root=0):
        return self.uid


class SingleRank:
    """One rank alone: a broadcast returns what it was given."""

    def bcast(self, obj, root=0):
        return obj


if os.environ.get("CCO_BCAST_DIR"):
    rank, nranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    comm_mpi = FileBroadcast(os.environ["CCO_BCAST_DIR"], rank)
else:
    from cco.runtime import launched

    found = launched()  # None only where no launcher's variables are set
    if found is None:
        comm_mpi, rank, nranks = SingleRank(), 0, 1
    else:
        rank, nranks, launcher_uid = found
        comm_mpi = SharedByTheLauncher(launcher_uid)

# ---- the guide's Quick Reference, from here on -------------------------------------------

from cco import Communicator, CCODevCommRequirements, GDA_CONNECTION_NONE  # noqa: E402 (the guide's code starts here)

# Bootstrap: rank 0 mints a unique id, broadcast it out-of-band (MPI / torch.dist)
uid = Communicator.get_unique_id() if rank == 0 else None
uid = comm_mpi.bcast(uid, root=0)

# Create the communicator (reserves per-rank flat VMM)
with Communicator.init(nranks, rank, uid, per_rank_vmm=256 * 1024 * 1024) as comm:
    # Allocate symmetric memory and register a P2P/RDMA window over it
    mem = comm.alloc_mem(4096)
    win = comm.register_window(mem.ptr, mem.size)

    # Create a device communicator (pass into kernels)
    reqs = CCODevCommRequirements()
    reqs.gda_connection_type = GDA_CONNECTION_NONE
    reqs.lsa_barrier_count = 1
    dc = comm.create_dev_comm(reqs)

    comm.barrier()   # collective host barrier
# resources are released on context exit

# ---- end of the guide's lines ------------------------------------------------------------

print(f"rank {rank} of {nranks}: quick reference done")
