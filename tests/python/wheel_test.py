"""The wheel: installed into an empty folder (no checkout on the path), it carries the
binding (cco) with the host library, every bitcode variant, the ABI table, the headers and the
JIT sources, and the `cco` command (cco_tools), which runs `cco info` and `cco perf` on the
cpu platform."""

import glob
import json
import os
import subprocess
import sys
import zipfile


def install(tmp_path):
    wheel = glob.glob("tools/wheel/cco-*.whl")[0]
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(site),
                    wheel], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(site), CCO_PLATFORM="cpu", CCO_DISABLE_JIT="1")
    return site, env


def test_wheel_contents():
    wheel = glob.glob("tools/wheel/cco-*.whl")[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    table = json.loads(zipfile.ZipFile(wheel).read("cco/_data/cco_abi_table.json"))
    for target in table["targets"]:
        assert f"cco/_data/bitcode/libcco_device-{target['name']}.bc" in names
    for needed in ("cco/_data/libcco.so", "cco/_data/include/cco/cco.h", "cco/_data/src/device/lsa_barrier.hpp",
                   "cco/_data/include/cco/cco.hpp", "cco/_data/include/cco/cco_scale_out.hpp",
                   "cco/_data/include/device/gda.hpp", "cco/_data/include/abi/gda.h", "cco/_data/bin/gda_tcp_bench",
                   "cco/_data/src/device/wrappers/cco_device_wrappers.inc", "cco/ir/triton/cco.py",
                   "cco/ir/triton/cco.pyi", "cco_tools/__main__.py", "cco_tools/perf/kernels/lsa.py",
                   "cco-0.1.0.dist-info/RECORD", "cco-0.1.0.dist-info/entry_points.txt"):
        assert needed in names, needed


def test_installed_wheel_runs_info_and_perf(tmp_path):
    site, env = install(tmp_path)
    cwd = str(tmp_path)  # not the checkout: everything must come from the wheel
    r = subprocess.run([sys.executable, "-m", "cco_tools", "info", "--json"], env=env, cwd=cwd, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    facts = json.loads(r.stdout)
    assert facts["host_library"].startswith(str(site)) and facts["host_abi_version"] == facts["abi_version"]
    assert all(path and path.startswith(str(site)) for path in facts["targets"].values())
    r = subprocess.run([sys.executable, "-m", "cco_tools", "perf", "--quick", "--suites", "barrier,put"], env=env,
                       cwd=cwd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "put through peer pointers" in r.stdout, r.stderr


def test_cpp_caller_builds_from_the_wheel_alone(tmp_path):
    """A C++ caller with nothing but the installed wheel: the guide's header pair from
    _data/include, libcco.so from _data; the size-only ccoWindowRegister on the cpu platform."""
    site, env = install(tmp_path)
    data = site / "cco" / "_data"
    source = tmp_path / "caller.cc"
    source.write_text(
        '#include <stdio.h>\n#include "cco/cco_scale_out.hpp"\n'
        "int main() {\n"
        "  ccoUniqueId id; ccoComm* comm; void* ptr; ccoWindow_t win;\n"
        "  if (ccoGetUniqueId(&id) || ccoCommCreate(id, 1, 0, 8 << 20, &comm)) return 1;\n"
        "  if (ccoWindowRegister(comm, (size_t)4096, &win, &ptr)) return 2;\n"
        "  *(int*)ccoGetLsaPeerPtr(win, 0, 0) = 7;\n"
        "  if (*(int*)ptr != 7 || ccoWindowDeregister(comm, win) || ccoCommDestroy(comm)) return 3;\n"
        "  puts(\"ok\"); return 0;\n}\n")
    exe = tmp_path / "caller"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", f"-I{data / 'include'}", str(source), f"-L{data}", "-lcco",
                    f"-Wl,-rpath,{data}", "-o", str(exe)], check=True, cwd=str(tmp_path))
    r = subprocess.run([str(exe)], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_manylinux_tag_is_what_auditwheel_finds():
    wheel = glob.glob("tools/wheel/cco-*.whl")[0]
    assert wheel.endswith("-py3-none-manylinux_2_34_x86_64.whl")
    r = subprocess.run([sys.executable, "-m", "auditwheel", "show", wheel], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert 'consistent with the following platform tag: "manylinux_2_34_x86_64"' in " ".join(r.stdout.split())


def test_plain_pip_install_into_a_fresh_venv(tmp_path):
    """What a user does: a new venv, `pip install cco-*.whl` (no index needed: no dependencies),
    and the package works from there."""
    wheel = os.path.abspath(glob.glob("tools/wheel/cco-*.whl")[0])
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-index", wheel], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CCO_LIBRARY")}
    env.update(CCO_PLATFORM="cpu", CCO_DISABLE_JIT="1")
    r = subprocess.run([python, "-c", "import cco, json, subprocess, sys; from cco import _resources; "
                        "print(_resources.host_library_path())"], env=env, cwd=str(tmp_path), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().startswith(str(venv)), r.stderr
    r = subprocess.run([str(venv / "bin" / "cco"), "info", "--json"], env=env, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["host_abi_version"] == json.loads(r.stdout)["abi_version"], r.stderr
    # The benchmark program it ships runs from there (pip drops execute bits: cco copes).
    env["CCO_CACHE"] = str(tmp_path / "cache")
    r = subprocess.run([python, "-c", "from cco import _resources; import subprocess, sys; "
                        "p = _resources.tool_path('gda_tcp_bench'); "
                        "sys.exit(subprocess.run([p], capture_output=True).returncode)"],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr  # its usage message: it ran
