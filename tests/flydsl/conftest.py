# SPDX-License-Identifier: MIT
"""What the FlyDSL tests share: FlyDSL's linker where it looks for it."""

import os
import shutil

import pytest


@pytest.fixture(scope="module")
def rocm(tmp_path_factory):
    """FlyDSL finds its linker under $ROCM_PATH/llvm/bin: Debian's ld.lld-19 there."""
    lld = shutil.which("ld.lld-19")
    assert lld, "ld.lld-19 (Debian's lld-19) is needed to link FlyDSL's code objects"
    root = tmp_path_factory.mktemp("rocm")
    (root / "llvm" / "bin").mkdir(parents=True)
    os.symlink(lld, root / "llvm" / "bin" / "ld.lld")
    return str(root)
