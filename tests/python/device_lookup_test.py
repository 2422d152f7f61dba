# SPDX-License-Identifier: MIT
"""cco.device: the ABI table as data, find_cco_bitcode's order (explicit path, JIT,
prebuilt), the JIT build (byte-identical to Bazel's, cached, built once under a lock) and
the refusal of a bitcode whose ABI version differs from the host library's."""

import concurrent.futures
import json
import multiprocessing
import os
import shutil

import pytest

from cco import _resources
from cco.device import (ABI_VERSION, CCO_DEVICE_FUNCTIONS, TARGETS, BitcodeError, bitcode_abi_version,
                        find_cco_bitcode, jit)
from cco.device import bitcode as bitcode_module
from cco.device.stamp import read_stamp, stamp

NV = ("cuda", 90)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("CCO_DEVICE_BC", "MORI_CCO_BC", "CCO_DISABLE_JIT", "MORI_DISABLE_JIT", "CCO_NIC"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CCO_JIT_CACHE", str(tmp_path / "jit"))


def prebuilt(variant):
    return bitcode_module._prebuilt(variant)


def test_functions_come_from_the_committed_table():
    with open(_resources.abi_table_path()) as f:
        table = json.load(f)
    assert [f["symbol"] for f in CCO_DEVICE_FUNCTIONS] == [f["symbol"] for f in table["functions"]]
    assert ABI_VERSION == table["abi_version"]
    lsa = next(f for f in CCO_DEVICE_FUNCTIONS if f["symbol"] == "cco_lsa_ptr")
    assert lsa["args"] == ["uint64", "int32", "uint64"] and lsa["ret"] == "uint64" and lsa["pure"]


def test_explicit_path_wins(monkeypatch):
    path = prebuilt("amdgcn-gfx942-proxy-cov5")
    monkeypatch.setenv("CCO_DEVICE_BC", path)
    assert find_cco_bitcode(NV) == path  # even for another target: the user said so
    monkeypatch.delenv("CCO_DEVICE_BC")
    monkeypatch.setenv("MORI_CCO_BC", path)  # the guide's name
    assert find_cco_bitcode(NV) == path
    monkeypatch.setenv("MORI_CCO_BC", "/nonexistent.bc")
    with pytest.raises(BitcodeError, match="does not exist"):
        find_cco_bitcode(NV)


NEEDS_CLANG = pytest.mark.skipif(jit.clang() is None or jit.source_roots() is None, reason="no clang-19 here")


@pytest.fixture(scope="module")
def jit_cache(tmp_path_factory):
    """Every variant JIT-built once into one cache, as many at a time as there are cores
    (each build is a clang and an opt process): the tests below look at the same files."""
    cache = str(tmp_path_factory.mktemp("jit"))
    names = [t["name"] for t in TARGETS]
    with pytest.MonkeyPatch.context() as env, concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        env.setenv("CCO_JIT_CACHE", cache)
        built = dict(zip(names, pool.map(jit.build, names)))
    return cache, built


@NEEDS_CLANG
def test_jit_builds_every_variant_identical_to_prebuilt(jit_cache):
    cache, built = jit_cache
    for name, path in built.items():
        assert path.startswith(cache)
        with open(path, "rb") as a, open(prebuilt(name), "rb") as b:
            assert a.read() == b.read(), name
        assert read_stamp(path) == (ABI_VERSION, name)


@NEEDS_CLANG
def test_lookup_order_jit_then_prebuilt(monkeypatch, jit_cache):
    cache, built = jit_cache
    monkeypatch.setenv("CCO_JIT_CACHE", cache)
    path = find_cco_bitcode(NV)
    assert path == built["nvptx-sm_90-proxy"] and path.endswith("libcco_device-nvptx-sm_90-proxy.bc")
    mtime = os.path.getmtime(path)
    assert find_cco_bitcode(NV) == path and os.path.getmtime(path) == mtime  # cached, not rebuilt
    monkeypatch.setenv("CCO_DISABLE_JIT", "1")
    assert find_cco_bitcode(NV) == prebuilt("nvptx-sm_90-proxy")
    monkeypatch.delenv("CCO_DISABLE_JIT")
    monkeypatch.setenv("MORI_DISABLE_JIT", "1")
    assert find_cco_bitcode(("hip", "gfx950")) == prebuilt("amdgcn-gfx950-proxy-cov5")


def _build_in_child(args):
    cache, variant = args
    os.environ["CCO_JIT_CACHE"] = cache
    return jit.build(variant)


@NEEDS_CLANG
def test_concurrent_builds_make_one_file(tmp_path):
    cache = str(tmp_path / "shared")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        paths = pool.map(_build_in_child, [(cache, "nvptx-sm_100-proxy")] * 4)
    assert len(set(paths)) == 1
    files = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs if f.endswith(".bc")]
    assert files == paths[:1]


def test_abi_mismatch_is_refused_with_both_versions(monkeypatch, tmp_path):
    with open(prebuilt("nvptx-sm_90-proxy"), "rb") as f:
        data = f.read()
    offset = int.from_bytes(data[8:12], "little")
    foreign = tmp_path / "old.bc"
    foreign.write_bytes(stamp(data[offset:], ABI_VERSION + 41, "nvptx-sm_90-proxy"))
    assert bitcode_abi_version(str(foreign)) == ABI_VERSION + 41
    monkeypatch.setenv("CCO_DEVICE_BC", str(foreign))
    with pytest.raises(BitcodeError) as e:
        find_cco_bitcode(NV)
    assert f"version {ABI_VERSION + 41}" in str(e.value) and f"version {ABI_VERSION}" in str(e.value)
    unstamped = tmp_path / "raw.bc"
    unstamped.write_bytes(data[offset:])
    monkeypatch.setenv("CCO_DEVICE_BC", str(unstamped))
    with pytest.raises(BitcodeError, match="not a CCO device bitcode"):
        find_cco_bitcode(NV)


def test_unknown_targets_are_named():
    with pytest.raises(BitcodeError, match="nvptx-sm_75-proxy"):
        find_cco_bitcode(("cuda", 75))
    with pytest.raises(BitcodeError, match="backend 'opencl'"):
        find_cco_bitcode(("opencl", "x"))


def test_functions_carry_the_guides_keys():
    for fn in CCO_DEVICE_FUNCTIONS:
        assert {"symbol", "args", "ret", "pure", "family", "tag"} <= set(fn), fn["symbol"]
    tags = {fn["tag"] for fn in CCO_DEVICE_FUNCTIONS if fn["family"] == "gda"}
    assert len(tags) > 1  # the GDA entries are told apart by their tags


def test_the_guides_positional_code_object_version(monkeypatch):
    monkeypatch.setenv("CCO_DISABLE_JIT", "1")
    monkeypatch.setattr(bitcode_module, "_current_target", lambda: ("hip", "gfx942"))
    assert find_cco_bitcode(6) == prebuilt("amdgcn-gfx942-proxy-cov6")  # FlyDSL's
    assert find_cco_bitcode(5) == prebuilt("amdgcn-gfx942-proxy-cov5")  # Triton's
    assert find_cco_bitcode(cov=6) == prebuilt("amdgcn-gfx942-proxy-cov6")
    with pytest.raises(BitcodeError, match="two code-object versions"):
        find_cco_bitcode(6, cov=5)


def test_prebuilt_search_covers_build_lib_folders(monkeypatch, tmp_path):
    variant = "amdgcn-gfx942-proxy-cov6"
    lib = tmp_path / "build-release" / "lib"
    lib.mkdir(parents=True)
    shutil.copy(prebuilt(variant), lib / f"libcco_device-{variant}.bc")
    monkeypatch.setattr(_resources, "DATA_DIR", str(tmp_path / "no-package-data"))
    monkeypatch.setattr(_resources, "REPO_ROOT", str(tmp_path))
    assert bitcode_module._prebuilt(variant) == str(lib / f"libcco_device-{variant}.bc")


def test_repo_lib_is_found_first_among_a_checkouts_folders(monkeypatch, tmp_path):
    """<repo>/lib (where the guide's tooling leaves its bitcode) is searched before
    <repo>/build*/lib and Bazel's output, by find_cco_bitcode itself (the JIT off)."""
    variant = "amdgcn-gfx942-proxy-cov6"
    name = f"libcco_device-{variant}.bc"
    for folder in ("lib", "build-release/lib", "bazel-bin/device"):
        (tmp_path / folder).mkdir(parents=True)
        shutil.copy(prebuilt(variant), tmp_path / folder / name)
    monkeypatch.setattr(_resources, "DATA_DIR", str(tmp_path / "no-package-data"))
    monkeypatch.setattr(_resources, "REPO_ROOT", str(tmp_path))
    monkeypatch.setenv("CCO_DISABLE_JIT", "1")
    assert find_cco_bitcode(("hip", "gfx942"), cov=6) == str(tmp_path / "lib" / name)
    os.remove(tmp_path / "lib" / name)
    assert find_cco_bitcode(("hip", "gfx942"), cov=6) == str(tmp_path / "build-release" / "lib" / name)


def test_on_off_variables_read_as_the_library_reads_them(monkeypatch):
    """CCO_DISABLE_JIT (and every on/off variable the package reads) takes the library's
    spellings; anything else is an error naming it (it read as on, silently)."""
    from cco import _env
    for value, on in (("1", True), ("TRUE", True), ("yes", True), ("on", True), ("0", False), ("off", False),
                      ("", False), ("No", False)):
        monkeypatch.setenv("CCO_DISABLE_JIT", value)
        assert _env.flag("CCO_DISABLE_JIT") is on, value
    monkeypatch.delenv("CCO_DISABLE_JIT")
    monkeypatch.setenv("MORI_DISABLE_JIT", "maybe")
    with pytest.raises(ValueError, match="CCO_DISABLE_JIT='maybe' is neither on"):
        _env.flag("CCO_DISABLE_JIT")
    with pytest.raises(ValueError, match="CCO_DISABLE_JIT"):
        find_cco_bitcode(NV)
