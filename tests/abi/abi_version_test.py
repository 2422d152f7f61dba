# SPDX-License-Identifier: MIT
"""The ABI version is written once, in abi/version.h; everything else that carries it reads it
from there or from what was generated from it. This fails when any of them drifts:

- the committed ABI table and the one generated now, the bitcode manifest, every bitcode's
  stamp, the generated C header for C callers, and the Python package (cco._abi and
  cco.device) all say the version of abi/version.h;
- no build file, build tool or module of the package writes the number down again
  (ABI_VERSION = <n>).
"""

import json
import os
import re

import pytest


def opt(request, name):
    return request.config.getoption(name)


def header_version(path):
    with open(path, encoding="utf-8") as f:
        return int(re.search(r"#define\s+CCO_ABI_VERSION\s+(\d+)", f.read()).group(1))


@pytest.fixture(scope="module")
def version(request):
    return header_version(opt(request, "version_header"))


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def test_tables_and_manifest_say_the_header_version(request, version):
    assert load_json(opt(request, "committed"))["abi_version"] == version
    assert load_json(opt(request, "generated"))["abi_version"] == version
    manifest = load_json(opt(request, "manifest"))
    assert manifest["abi_version"] == version
    assert {v["abi_version"] for v in manifest["variants"]} == {version}


def test_every_bitcode_is_stamped_with_the_header_version(request, version):
    from cco.device.stamp import read_stamp

    manifest_path = opt(request, "manifest")
    for v in load_json(manifest_path)["variants"]:
        path = os.path.join(os.path.dirname(manifest_path), v["file"])
        assert read_stamp(path) == (version, v["name"])


def test_c_header_says_the_header_version(request, version):
    with open(opt(request, "c_header"), encoding="utf-8") as f:
        assert f"#define CCO_DEVICE_ABI_VERSION {version}\n" in f.read()


def test_python_package_reads_the_header_version(version):
    import cco.device
    from cco import _abi

    assert _abi.ABI_VERSION == cco.device.ABI_VERSION == version


# `ABI_VERSION = 6`, `abi_version = 6,` (a Starlark argument) and the like.
_WRITTEN_DOWN = re.compile(r"^[ \t]*(?:\w+\.)?(?:_?ABI_VERSION|abi_version)[ \t]*=[ \t]*\d+[ \t]*,?[ \t]*(?:#.*)?$",
                           re.M | re.I)


def test_no_second_copy_of_the_number(request):
    import cco

    package = os.path.dirname(cco.__file__)
    sources = opt(request, "source") + [os.path.join(folder, name) for folder, _, names in os.walk(package)
                                        for name in names if name.endswith(".py")]
    assert len(sources) > 10, sources
    copies = [f"{path}: {m.group(0).strip()}" for path in sources
              for m in _WRITTEN_DOWN.finditer(open(path, encoding="utf-8").read())]
    assert copies == [], "the ABI version is written outside abi/version.h"
