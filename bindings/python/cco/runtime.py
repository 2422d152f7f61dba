"""Who am I: rank, world size and the unique id, from whatever launched this process.

  - `python -m cco.launch -n N script.py` (CCO's launcher): CCO_RANK, CCO_WORLD_SIZE and
    CCO_UNIQUE_ID (hex) in the environment;
  - torchrun: RANK / WORLD_SIZE; the id travels through torch.distributed (gloo);
  - mpirun: mpi4py's COMM_WORLD broadcasts the id.
bootstrap() also picks this process's GPU (LOCAL_RANK, or the rank on this host, modulo
the visible GPUs) when torch sees one.
"""

import os

from cco.communicator import Communicator


def _from_cco_launcher():
    if "CCO_UNIQUE_ID" not in os.environ:
        return None
    return (int(os.environ["CCO_RANK"]), int(os.environ["CCO_WORLD_SIZE"]),
            bytes.fromhex(os.environ["CCO_UNIQUE_ID"]))


def _from_torchrun():
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ or "MASTER_ADDR" not in os.environ:
        return None
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    box = [Communicator.get_unique_id() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return rank, world, box[0]


def _from_mpi():
    if not any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")):
        return None
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    uid = comm.bcast(Communicator.get_unique_id() if rank == 0 else None, root=0)
    return rank, comm.Get_size(), uid


def local_rank(rank):
    """This rank's index among the ranks of its host, as the launcher tells it."""
    for name in ("LOCAL_RANK", "CCO_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"):
        if name in os.environ:
            return int(os.environ[name])
    return rank


def launched():
    """(rank, world_size, uid) when a launcher started this process, else None."""
    return _from_cco_launcher() or _from_torchrun() or _from_mpi()


def bootstrap(select_device=True):
    """(rank, world_size, uid) for this process; a single process is rank 0 of 1."""
    found = launched()
    if found is None:
        found = (0, 1, Communicator.get_unique_id())
    if select_device:
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.set_device(local_rank(found[0]) % torch.cuda.device_count())
        except ImportError:
            pass
    return found
