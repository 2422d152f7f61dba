# SPDX-License-Identifier: MIT
"""What every FlyDSL example shares: run on this job's AMD GPUs, or compile only.

    python -m cco.launch -n 2 examples/flydsl/03_put.py          # on AMD GPUs (never run here)
    COMPILE_ONLY=1 ARCH=gfx942 python examples/flydsl/03_put.py   # ahead of time, no GPU

Compile-only needs FlyDSL's linker ($ROCM_PATH/llvm/bin/ld.lld) and, without torch, a torch
stand-in on PYTHONPATH (tests/flydsl/torch_stub): FlyDSL imports torch at import time.
"""

import os


def compile_only():
    return os.environ.get("COMPILE_ONLY") == "1"


def job():
    """(rank, world, unique id) of this rank, from cco.launch, torchrun or mpirun."""
    from cco.runtime import bootstrap

    return bootstrap()


def build(launch, *args):
    """Compiles `launch` for `args` (placeholders under COMPILE_ONLY) and reports the chip."""
    import flydsl.compiler as flyc

    from cco.device import flydsl as cco

    flyc.compile(launch, *args)
    print(f"compiled for {cco.target_arch()} with {cco.bitcode_path(cco.target_arch())}")
