# SPDX-License-Identifier: MIT
"""What every FlyDSL example shares: run on this job's AMD GPUs, or compile only.

    python -m cco.launch -n 2 examples/flydsl/03_put.py          # on AMD GPUs (never run here)
    COMPILE_ONLY=1 ARCH=gfx942 python examples/flydsl/03_put.py   # ahead of time, no GPU

Compile-only needs FlyDSL's linker ($ROCM_PATH/llvm/bin/ld.lld) and, without torch, a torch
stand-in on PYTHONPATH (tests/flydsl/torch_stub): FlyDSL imports torch at import time.
"""

import os

# FlyDSL imports torch as it loads: where either is missing, say what to install rather than
# end in a traceback from FlyDSL's insides.
try:
    import flydsl.compiler  # noqa: F401
except ModuleNotFoundError as missing:
    if missing.name == "flydsl" or (missing.name or "").startswith("flydsl."):
        raise SystemExit("these examples need FlyDSL (pip install flydsl, or tools/setup test)") from None
    if missing.name == "torch":
        raise SystemExit("FlyDSL imports torch: install torch, or for COMPILE_ONLY=1 put the stand-in on "
                         "PYTHONPATH (PYTHONPATH=tests/flydsl/torch_stub)") from None
    raise


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
