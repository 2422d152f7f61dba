# SPDX-License-Identifier: MIT
"""What a `cco perf` report records about the run that made it, so that a figure can be
checked against its machine, versions, settings and command without a hand-written note."""

import datetime
import os
import shutil
import socket
import subprocess
import sys

import cco
from cco.runtime import mps_serves

# Settings that change a figure or its anchors.
_ENV_PREFIXES = ("CCO_", "MORI_", "NCCL_", "TORCH_SYMM_MEM_", "CUDA_MPS_", "CUDA_VISIBLE_DEVICES")
# Never recorded: a unique id carries the communicator's secret (its peers authenticate with
# it), and a report is a file people commit and share.
_ENV_SECRET_WORDS = ("UNIQUE_ID", "UID", "SECRET", "KEY", "TOKEN", "PASSWORD")


def _recorded(name):
    return name.startswith(_ENV_PREFIXES) and not any(word in name.upper() for word in _ENV_SECRET_WORDS)


def _driver_version():
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.split("\n")[0].strip() or None


def run_meta(argv, platform, world, ranks_as, device=None, trials=None):
    """The run's record: command (`argv`: what followed `cco`), versions, settings, machine,
    the trials of each figure. device: the reporting process's current GPU (rank 0's, where
    ranks are processes)."""
    meta = {
        "command": [os.path.basename(sys.executable), "-m", "cco_tools", *argv],
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "platform": platform,
        "ranks": world,
        "ranks_as": ranks_as,
        "trials": trials,
        "cco": cco.__version__,
        "python": sys.version.split()[0],
        "env": {k: v for k, v in sorted(os.environ.items()) if _recorded(k)},
    }
    if platform == "cpu":
        return meta
    import torch  # noqa: PLC0415 (a GPU run has it; the cpu platform does not need it)
    import triton  # noqa: PLC0415
    meta.update({
        "device": device,
        "gpu": torch.cuda.get_device_properties(0).name,
        "gpus_visible": torch.cuda.device_count(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "driver": _driver_version(),
        "nccl": ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None,
        "mps": mps_serves(),
    })
    return meta
