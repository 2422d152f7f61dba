# SPDX-License-Identifier: MIT
"""FlyDSL (PyPI flydsl==0.4.2, no GPU: COMPILE_ONLY=1) compiles kernels that call the CCO
device API through cco.device.flydsl for gfx942 and gfx950, linking the code-object-v6
bitcode: every function of the ABI table, and the guide's put example through the handles.
The code objects are checked: code-object version 6, the right chip, no undefined symbol, no
call left (FlyDSL inlined everything), and the memory model's cache controls present. And what
must fail does: a code-object-v5 bitcode, a coop that is not a compile-time constant, a
function the table does not have. FlyDSL has never run a kernel here (no AMD GPU)."""

import concurrent.futures
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ARCHS = ("gfx942", "gfx950")


def tool(name):
    if "CCO_LLVM22_BIN" in os.environ:
        return os.path.abspath(os.environ["CCO_LLVM22_BIN"] + "/" + name)
    return shutil.which(name + "-22")


# The table's functions are compiled in PARTS kernels (compile_kernel.py says why).
PARTS = 8


def compile_kernel(kind, arch, rocm, tmp_path, extra_env=None, part=None):
    env = dict(os.environ, COMPILE_ONLY="1", ARCH=arch, ROCM_PATH=rocm, FLYDSL_RUNTIME_ENABLE_CACHE="0",
               HOME=str(tmp_path), CCO_DISABLE_JIT="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "torch_stub"), env.get("PYTHONPATH", "")])
    env.update(extra_env or {})
    out = tmp_path / f"{kind}-{arch}{'' if part is None else f'-{part}'}.hsaco"
    shares = [] if part is None else [str(part), str(PARTS)]
    r = subprocess.run([sys.executable, os.path.join(HERE, "compile_kernel.py"), kind, str(out), *shares], env=env,
                       capture_output=True, text=True, timeout=600)
    return r, out


@pytest.fixture(scope="module", params=ARCHS)
def every(request, rocm, tmp_path_factory):
    """(arch, the parts' code objects, every symbol the parts linked)."""
    arch = request.param
    paths, linked = [], set()
    # Each part is a compiler process of its own: as many at once as there are cores.
    folders = [tmp_path_factory.mktemp(arch) for _ in range(PARTS)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        built = list(pool.map(lambda part: compile_kernel("every", arch, rocm, folders[part], part=part), range(PARTS)))
    for r, out in built:
        assert r.returncode == 0, r.stderr[-4000:]
        linked |= set(next(line for line in r.stdout.splitlines() if line.startswith("linked:")).split()[1:])
        paths.append(str(out))
    return arch, paths, linked


def run(*cmd):
    return subprocess.run(list(cmd), check=True, capture_output=True, text=True).stdout


def test_every_table_function_was_called(every):
    from cco.device import CCO_DEVICE_FUNCTIONS

    _, _, linked = every
    assert linked == {f["symbol"] for f in CCO_DEVICE_FUNCTIONS}


def test_code_object_version_6_for_the_chip(every):
    arch, paths, _ = every
    for path in paths:
        header = run(tool("llvm-readelf"), "--file-header", path)
        assert re.search(r"ABI Version:\s+4\b", header), header  # ELFABIVERSION_AMDGPU_HSA_V6 = 4
        assert re.search(rf"Flags:.*\b{arch}\b", header), header


def test_no_undefined_symbol(every):
    _, paths, _ = every
    for path in paths:
        assert run(tool("llvm-nm"), "--undefined-only", path).strip() == "", path


def test_inlined_and_memory_model_present(every):
    arch, paths, _ = every
    codes = [run(tool("llvm-objdump"), "-d", f"--mcpu={arch}", path) for path in paths]
    for code in codes:
        assert "s_swappc_b64" not in code, "a CCO call was left a call: FlyDSL did not inline the bitcode"
        assert "s_endpgm" in code
    for instruction in ("buffer_wbl2 sc0 sc1", "buffer_inv sc0 sc1"):  # system-scope release, acquire
        assert any(instruction in code for code in codes), f"no {instruction} in the {arch} code"


def test_a_cov5_bitcode_is_refused(rocm, tmp_path):
    import cco.device.bitcode as bitcode

    cov5 = bitcode._prebuilt("amdgcn-gfx942-proxy-cov5")
    r, _ = compile_kernel("every", "gfx942", rocm, tmp_path, {"CCO_DEVICE_BC": cov5}, part=0)
    assert r.returncode != 0
    assert "code-object-v6" in r.stderr and "amdgcn-gfx942-proxy-cov5" in r.stderr, r.stderr[-3000:]


def test_a_run_time_coop_is_refused(rocm, tmp_path):
    r, _ = compile_kernel("dynamic_coop", "gfx942", rocm, tmp_path)
    assert r.returncode != 0
    assert "coop must be a compile-time CoopScope constant" in r.stderr, r.stderr[-3000:]


def test_unknown_functions_and_arguments_are_named():
    import cco.device.flydsl as cco

    with pytest.raises(AttributeError, match="cco.Gda has no 'no_such_op'"):
        cco.Gda.no_such_op
    with pytest.raises(TypeError, match="unknown keyword"):
        cco.Gda.flush(0, 0, coop=cco.CoopScope.BLOCK, bogus=1)
    with pytest.raises(TypeError, match="needs coop="):  # who arrives at a barrier must be said
        cco.LsaBarrier.sync(0, 0)
    with pytest.raises(TypeError, match="the ABI's order takes all 10"):  # never shifted
        cco.Gda.put(0, 0, 1, 0, 0, 0, 0, 64)
    with pytest.raises(ValueError, match="team=1: peers are world ranks"):
        cco.Gda.signal(0, 1, team=cco.Team.LSA)
    with pytest.raises(TypeError, match="missing argument peer"):
        cco.Gda.flush_peer(0, coop=cco.CoopScope.BLOCK)
