# SPDX-License-Identifier: MIT
"""The wheel: installed into an empty folder (no checkout on the path), it carries the
binding (cco) with the host library, every bitcode variant, the ABI table, the headers and the
JIT sources, and the `cco` command (cco_tools), which runs `cco info` and `cco perf` on the
cpu platform."""

import glob
import json
import os
import re
import subprocess
import sys
import zipfile



def cco_h_version():
    """The release as cco.h writes it (the one place: tools/wheel/version_repository.bzl)."""
    with open("host/include/cco/cco.h", encoding="utf-8") as f:
        parts = dict(re.findall(r"^#define CCO_VERSION_(MAJOR|MINOR|PATCH) (\d+)", f.read(), re.M))
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"


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
                   "cco/_data/pkgconfig/cco.pc", "cco/ir/triton/cco.pyi", "cco_tools/__main__.py",
                   "cco_tools/perf/kernels/lsa.py", f"cco-{cco_h_version()}.dist-info/RECORD",
                   f"cco-{cco_h_version()}.dist-info/entry_points.txt", f"cco-{cco_h_version()}.dist-info/LICENSE"):
        assert needed in names, needed


def test_one_version_everywhere(tmp_path):
    """cco.h's release is the wheel's file name, its metadata's, the installed package's
    __version__, the library's ccoGetVersion and the pkg-config file's: nothing can drift."""
    version = cco_h_version()
    wheel = glob.glob("tools/wheel/cco-*.whl")[0]
    assert os.path.basename(wheel).startswith(f"cco-{version}-")
    meta = zipfile.ZipFile(wheel).read(f"cco-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in meta
    assert re.search(rf"^Version: {re.escape(version)}$", zipfile.ZipFile(wheel).read("cco/_data/pkgconfig/cco.pc")
                     .decode(), re.M)
    site, env = install(tmp_path)
    r = subprocess.run([sys.executable, "-c", "import cco, json; v = cco.versions(); "
                        "print(json.dumps([cco.__version__, v['cco'], v['library']['version']]))"],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [version] * 3


def test_metadata_is_complete():
    """Licence, summary, Python requirement, classifiers and the optional DSL extras, as
    pyproject.toml's [project] states them."""
    wheel = glob.glob("tools/wheel/cco-*.whl")[0]
    meta = zipfile.ZipFile(wheel).read(f"cco-{cco_h_version()}.dist-info/METADATA").decode()
    headers = meta.split("\n\n", 1)[0].splitlines()
    for line in ("Name: cco", "License: MIT", "Requires-Python: >=3.10", "Provides-Extra: triton",
                 "Provides-Extra: flydsl", "Classifier: License :: OSI Approved :: MIT License",
                 "Description-Content-Type: text/markdown"):
        assert line in headers, line
    for extra in ("triton", "flydsl"):
        assert any(h.startswith(f"Requires-Dist: {extra}") and h.endswith(f'; extra == "{extra}"') for h in headers)
    assert any(h.startswith("Summary: CCO") for h in headers)
    assert meta.split("\n\n", 1)[1].strip(), "no long description"


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


def test_c_caller_builds_with_pkg_config_from_the_installed_package(tmp_path):
    """A C caller finds the headers and the library through the package itself: cco.get_include()
    is the folder, and cco.get_pkgconfig_dir() holds cco.pc for pkg-config."""
    site, env = install(tmp_path)
    r = subprocess.run([sys.executable, "-c", "import cco; print(cco.get_include()); print(cco.get_pkgconfig_dir())"],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    include, pkgconfig = r.stdout.split()
    assert include == str(site / "cco" / "_data" / "include") and os.path.exists(os.path.join(include, "cco", "cco.h"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "cco"], env=dict(env, PKG_CONFIG_PATH=pkgconfig),
                           capture_output=True, text=True, check=True).stdout.split()
    source = tmp_path / "caller.c"
    source.write_text('#include <stdio.h>\n#include "cco/cco.h"\n'
                      "int main(void) {\n  int major, minor, patch;\n"
                      "  if (ccoGetVersion(&major, &minor, &patch)) return 1;\n"
                      '  printf("%d.%d.%d\\n", major, minor, patch);\n  return 0;\n}\n')
    exe = tmp_path / "caller"
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", str(source), *flags, "-o", str(exe)], check=True)
    r = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == cco_h_version(), r.stderr


def test_manylinux_tag_is_what_auditwheel_finds():
    wheel = glob.glob("tools/wheel/cco-*.whl")[0]
    # manylinux_2_28: glibc 2.28 and GCC 8's libstdc++ (RHEL 8; Ubuntu 20.04 has glibc 2.31),
    # though built on Debian 12 (host/compat keeps the ELF files within it).
    assert wheel.endswith("-py3-none-manylinux_2_28_x86_64.whl")
    r = subprocess.run([sys.executable, "-m", "auditwheel", "show", wheel], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    # auditwheel names the most compatible tag the files allow: at least as old as the one claimed.
    found = re.search(r'consistent with the following platform tag: "manylinux_2_(\d+)_x86_64"',
                      " ".join(r.stdout.split()))
    assert found and int(found.group(1)) <= 28, r.stdout


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
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["host_abi_version"] == json.loads(r.stdout)["abi_version"], r.stderr
    # The benchmark program it ships runs from there (pip drops execute bits: cco copes).
    env["CCO_CACHE"] = str(tmp_path / "cache")
    r = subprocess.run([python, "-c", "from cco import _resources; import subprocess, sys; "
                        "p = _resources.tool_path('gda_tcp_bench'); "
                        "sys.exit(subprocess.run([p], capture_output=True).returncode)"],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr  # its usage message: it ran
