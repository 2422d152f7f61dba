# SPDX-License-Identifier: MIT
"""The guide's FlyDSL examples (examples/flydsl/03..07) compile ahead of time for gfx942 and
gfx950 with FlyDSL 0.4.2 (COMPILE_ONLY=1), each linking the code-object-v6 bitcode of its
chip, with every CCO call inlined (FlyDSL's final ISA has no call). Never run: no AMD GPU."""

import glob
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "flydsl")
NAMES = ["03_put", "04_lsa_put", "05_lsa_allreduce", "06_gda_modes", "07_sdma"]


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize("name", NAMES)
def test_example_compiles_inlined(name, arch, rocm, tmp_path):
    dump = tmp_path / "dump"
    env = dict(os.environ, COMPILE_ONLY="1", ARCH=arch, ROCM_PATH=rocm, FLYDSL_RUNTIME_ENABLE_CACHE="0",
               HOME=str(tmp_path), CCO_DISABLE_JIT="1", FLYDSL_DUMP_IR="1", FLYDSL_DUMP_DIR=str(dump))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "torch_stub"), EXAMPLES, env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, name + ".py")], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"compiled for {arch} with " in r.stdout and f"amdgcn-{arch}-proxy-cov6.bc" in r.stdout, r.stdout
    isa = glob.glob(str(dump / "**" / "*final_isa.s"), recursive=True)
    assert isa, "FlyDSL dumped no final ISA"
    for path in isa:
        code = open(path).read()
        assert f"{arch}" in code and "s_endpgm" in code
        assert "s_swappc_b64" not in code, f"{name}: a CCO call was left a call"
