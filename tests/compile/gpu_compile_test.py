# SPDX-License-Identifier: MIT
"""Device C++ compiled as users compile it, for both vendors: every public header together in
one translation unit, and every example .cu, as HIP for gfx942 and as CUDA for sm_90.

The headers are laid out as the wheel ships them (cco/_data/include), so this also proves that
a user's `-I<that folder>` is enough. Compilers (tools/setup installs them):
  HIP   clang-19 -x hip with Debian's HIP headers (libamdhip64-dev). -nogpulib: Debian's ROCm 5.2
        device libraries do not know gfx942, and nothing here calls them. Debian's own hipcc
        (clang 15) is too old for the arch layer's builtins, and clang-22 for ROCm 5.2's headers.
  CUDA  nvcc from PyPI's nvidia-cuda-nvcc in the project's Python, else an nvcc on PATH.
Each HIP source is compiled whole (host pass and device pass, relocatable device code: nothing
to link) and, device pass only, down to gfx942 assembly, which must hold each kernel. nvcc -c
runs ptxas, so the CUDA compile ends in sm_90 machine code.
"""

import glob
import os
import re
import shutil
import subprocess

import pytest

# The arch layer's per-target files are included by device/arch/arch.h, never on their own.
_ARCH_IMPLEMENTATIONS = {"device/arch/amdgcn.h", "device/arch/host.h", "device/arch/nvptx.h"}

# Enough device code for the headers to be used, not only parsed: a peer pointer and an LSA
# barrier (the examples cover GDA and SDMA).
_EVERY_HEADER_KERNEL = """
__global__ void every_header(ccoDevComm dc, ccoWindow_t win, int* out) {
  ccoLsaBarrierSession<ccoCoopBlock> barrier(ccoCoopBlock(), dc, 0);
  out[0] = barrier.sync() + (ccoGetLsaPeerPtr(win, 0, 0) != nullptr);
}
"""

# A kernel's host stub needs the runtime's launch call: nvcc includes CUDA's runtime by itself,
# clang -x hip does not include HIP's.
_RUNTIME = "#if defined(__HIP__)\n#include <hip/hip_runtime.h>\n#endif\n"

_WARNINGS = ["-Wall", "-Wextra", "-Werror"]


def _nvcc():
    try:
        import nvidia  # PyPI's CUDA wheels install into this namespace package

        for root in nvidia.__path__:
            found = sorted(glob.glob(os.path.join(root, "cu*", "bin", "nvcc")))
            if found:
                return found[-1]
    except ImportError:
        pass
    return shutil.which("nvcc")


def _hip_headers():
    return os.path.exists("/usr/include/hip/hip_runtime.h")


def _sources(config):
    return ["every_header.cu"] + config.getoption("--example")


def pytest_generate_tests(metafunc):
    if "source" in metafunc.fixturenames:
        metafunc.parametrize("source", _sources(metafunc.config))


@pytest.fixture(scope="module")
def include_dir(request, tmp_path_factory):
    """The public headers as the wheel lays them out, plus the header-only translation unit."""
    root = tmp_path_factory.mktemp("include")
    names = []
    for pair in request.config.getoption("--header"):
        dest, src = pair.split("=", 1)
        os.makedirs(os.path.dirname(root / dest), exist_ok=True)
        shutil.copyfile(src, root / dest)
        names.append(dest)
    assert {"cco/cco.h", "cco/cco.hpp", "cco/cco_scale_out.hpp"} <= set(names)
    includes = "".join(f'#include "{n}"\n' for n in sorted(names) if n not in _ARCH_IMPLEMENTATIONS)
    (root / "every_header.cu").write_text(_RUNTIME + includes + _EVERY_HEADER_KERNEL)
    return root


def _path(source, include_dir):
    return str(include_dir / source) if source == "every_header.cu" else source


def _kernels(path):
    """The names of the __global__ functions a source defines."""
    with open(path) as f:
        return re.findall(r"__global__\s+void\s+(\w+)\s*\(", f.read())


def _run(command):
    r = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{' '.join(command)}\n{r.stdout}{r.stderr}"
    return r


def _hip_command(clang, include_dir):
    if not _hip_headers():
        pytest.fail("HIP headers missing (/usr/include/hip): run tools/setup (apt: libamdhip64-dev)")
    return [clang, "-x", "hip", "--offload-arch=gfx942", "-nogpulib", "-std=c++17", "-O2", *_WARNINGS,
            f"-I{include_dir}", f"-I{os.getcwd()}"]


def test_hip_gfx942_compiles(source, include_dir, request, tmp_path):
    command = _hip_command(request.config.getoption("--clang"), include_dir)
    _run(command + ["-fgpu-rdc", "-c", _path(source, include_dir), "-o", str(tmp_path / "out.o")])


def test_hip_gfx942_assembly_holds_each_kernel(source, include_dir, request, tmp_path):
    command = _hip_command(request.config.getoption("--clang"), include_dir)
    path = _path(source, include_dir)
    assembly = tmp_path / "out.s"
    _run(command + ["--cuda-device-only", "-S", path, "-o", str(assembly)])
    text = assembly.read_text()
    kernels = _kernels(path)
    assert kernels, f"{source} defines no kernel"
    for kernel in kernels:  # extern "C" kernels keep their name; others are mangled around it
        assert re.search(rf"^\s*\.amdhsa_kernel \w*{kernel}\w*$", text, re.M), f"{kernel} missing from gfx942 code"


def test_cuda_sm90_compiles(source, include_dir, tmp_path):
    nvcc = _nvcc()
    if nvcc is None:
        pytest.fail("nvcc missing: run tools/setup (pip: nvidia-cuda-nvcc into .venv)")
    _run([nvcc, "-std=c++17", "-arch=sm_90", "-O2", "-Werror", "all-warnings",
          "-Xcompiler", ",".join(_WARNINGS), f"-I{include_dir}", f"-I{os.getcwd()}",
          "-c", _path(source, include_dir), "-o", str(tmp_path / "out.o")])
