# SPDX-License-Identifier: MIT
"""Who am I: rank, world size and the unique id, from whatever launched this process.

  - `python -m cco.launch -n N script.py` (CCO's launcher): CCO_RANK, CCO_WORLD_SIZE and
    CCO_UNIQUE_ID (hex) in the environment;
  - torchrun: RANK / WORLD_SIZE; the id travels through torch.distributed (gloo);
  - mpirun: mpi4py's COMM_WORLD broadcasts the id.
bootstrap() also picks this process's GPU (LOCAL_RANK, or the rank on this host, modulo
the visible GPUs) when torch sees one.

For scripts (the examples): run_script(main) ends the process with the message of a launch,
library or CCO error instead of a traceback, and gpu_torch() says what a GPU example lacks.
"""

import os
import sys

from cco import _abi
from cco._lib import LibraryError
from cco.communicator import Communicator
from cco.errors import CCOError

_LAUNCH_HINT = "start the ranks with `python -m cco.launch -n N script.py`, which sets all three"


class LaunchError(ValueError):
    """The launcher's environment is incomplete or malformed (CCO_RANK, CCO_WORLD_SIZE,
    CCO_UNIQUE_ID); the message names the variable and what is wrong with it."""


def _whole_number(name):
    text = os.environ.get(name)
    if text is None:
        raise LaunchError(f"cco: CCO_UNIQUE_ID is set but {name} is not: {_LAUNCH_HINT}")
    try:
        return int(text)
    except ValueError:
        raise LaunchError(f"cco: {name}={text!r} is not a whole number") from None


def _unique_id(text):
    digits = 2 * _abi.UNIQUE_ID_BYTES
    try:
        uid = bytes.fromhex(text)
    except ValueError:
        uid = None
    if uid is None or len(uid) != _abi.UNIQUE_ID_BYTES:
        shown = text if len(text) <= 24 else f"{text[:12]}...{text[-8:]}"
        raise LaunchError(f"cco: CCO_UNIQUE_ID={shown!r} ({len(text)} characters) is not an id: it must be the "
                          f"{digits} hex digits of Communicator.get_unique_id().hex() from rank 0; {_LAUNCH_HINT}")
    return uid


def _from_cco_launcher():
    if "CCO_UNIQUE_ID" not in os.environ:
        return None
    rank, world = _whole_number("CCO_RANK"), _whole_number("CCO_WORLD_SIZE")
    if world < 1:
        raise LaunchError(f"cco: CCO_WORLD_SIZE={world} (there must be at least one rank)")
    if not 0 <= rank < world:
        raise LaunchError(f"cco: CCO_RANK={rank} is not in [0, CCO_WORLD_SIZE={world})")
    return rank, world, _unique_id(os.environ["CCO_UNIQUE_ID"])


def _from_torchrun():
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ or "MASTER_ADDR" not in os.environ:
        return None
    try:
        import torch.distributed as dist
    except ImportError:
        raise LaunchError("cco: RANK, WORLD_SIZE and MASTER_ADDR say torchrun started this process, but torch is "
                          "not installed here") from None
    if not dist.is_initialized():
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    box = [Communicator.get_unique_id() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return rank, world, box[0]


def _from_mpi():
    if not any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")):
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        raise LaunchError("cco: the environment says an MPI launcher (mpirun) started this process, but mpi4py is "
                          "not installed: pip install mpi4py (or Debian's python3-mpi4py)") from None

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    uid = comm.bcast(Communicator.get_unique_id() if rank == 0 else None, root=0)
    return rank, comm.Get_size(), uid


def mps_serves(env=None):
    """Whether an MPS daemon serves the GPUs of a process with environment `env` (this one's
    by default): its pipe directory is named, or the default one's control pipe exists and the
    control daemon runs (a pipe can outlive it)."""
    if (os.environ if env is None else env).get("CUDA_MPS_PIPE_DIRECTORY"):
        return True
    return os.path.exists("/tmp/nvidia-mps/control") and _mps_daemon_runs()


def _mps_daemon_runs():
    """A process whose command is nvidia-cuda-mps-control runs (its name, 23 characters, is
    longer than the 15 that pgrep -x matches)."""
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return False
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().split(b"\0", 1)[0]
        except OSError:
            continue
        if os.path.basename(command) == b"nvidia-cuda-mps-control":
            return True
    return False


def mps_connections(env, ranks):
    """CUDA_DEVICE_MAX_CONNECTIONS for a rank process that shares a GPU under MPS, or None
    where none is to be set (no MPS, or `env` names it already). A proxy's and an SDMA queue's
    streams must run while this process's kernels wait for their copies, and CUDA spreads a
    process's streams over a few hardware work queues: under MPS, by default, so few that an
    SDMA copy stalled behind a waiting kernel (H100); 4 or 8 kept them moving. Every MPS client
    owns its queues out of one pool (3 clients of 32 exhausted it: their contexts failed), so 8
    each for up to 8 ranks, 4 beyond."""
    if "CUDA_DEVICE_MAX_CONNECTIONS" in env or not mps_serves(env):
        return None
    return "8" if ranks <= 8 else "4"


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
    """(rank, world_size, uid) for this process; a single process is rank 0 of 1. With
    select_device, also this rank's GPU, and under MPS its CUDA_DEVICE_MAX_CONNECTIONS where
    none is set (mps_connections)."""
    found = launched()
    if found is None:
        found = (0, 1, Communicator.get_unique_id())
    if select_device:
        local = os.environ.get("LOCAL_WORLD_SIZE", "")   # torchrun's ranks on this host
        connections = mps_connections(os.environ, int(local) if local.isdigit() else found[1])
        if connections:  # before the CUDA context is made, which reads it
            os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = connections
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.set_device(local_rank(found[0]) % torch.cuda.device_count())
        except ImportError:
            pass
    return found


def gpu_torch(what):
    """torch, for a script that drives a GPU through it; where torch is missing or sees no GPU,
    ends the process saying so (what: the script, as the message names it)."""
    try:
        import torch
    except ImportError:
        raise SystemExit(f"{what} launches its kernels through PyTorch, which is not installed here: install "
                         "torch built for your GPU (CUDA or ROCm). Without a GPU, CCO's host side runs on the cpu "
                         "platform: CCO_PLATFORM=cpu python -m cco.launch -n 2 examples/python/01_barrier.py") from None
    if not torch.cuda.is_available():
        raise SystemExit(f"{what} needs a GPU, and torch {torch.__version__} sees none (is the driver loaded, "
                         "CUDA_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES set to nothing?)")
    return torch


def run_script(main, *args):
    """main(*args)'s result, for `raise SystemExit(run_script(main))`: a launch error, a missing or
    mismatched libcco.so, or a failed CCO call ends the process with its message on stderr and
    exit status 1, instead of a traceback (any other exception keeps its traceback)."""
    try:
        return main(*args)
    except (LaunchError, LibraryError, CCOError) as e:
        print(f"{os.path.basename(sys.argv[0]) or 'cco'}: {e}", file=sys.stderr)
        return 1
