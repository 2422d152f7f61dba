# SPDX-License-Identifier: MIT
"""A PEP 517 build backend for `pip install .` and `python -m build` from a checkout: the
wheel is the one `bazel build //tools/wheel` makes (tools/setup installs Bazel), copied where
the frontend asks; the sdist is the checkout's tracked files. `pip install -e .` (PEP 660)
builds what the package finds in a checkout's bazel-bin (libcco.so, the bitcode, the tcp
benchmark) and installs a path to bindings/python, so edits to the package take effect at once;
rebuild with Bazel after editing C++ or device code."""

import glob
import io
import os
import shutil
import subprocess
import tarfile

# The wheel as tools/wheel/build_wheel.py makes it; the version is cco.h's.
from build_wheel import NAME, metadata, read_project, read_version, write_wheel

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VERSION = read_version()


# What an editable install loads from the checkout's bazel-bin (cco/_resources.py looks there).
EDITABLE_TARGETS = ["//host:libcco.so", "//device:bitcode", "//device:bitcode_manifest", "//tools/perf:gda_tcp_bench",
                    "//tools/wheel:include"]


def _bazel_build(*targets):
    if shutil.which("bazel") is None:
        raise RuntimeError("cco: building the wheel needs Bazel and the LLVM toolchain: run tools/setup first")
    subprocess.run(["bazel", "build", *targets], cwd=ROOT, check=True)


def _bazel_wheel():
    _bazel_build("//tools/wheel")
    # The platform tag is tools/wheel/BUILD.bazel's; the version the same cco.h's as here.
    # (A wheel of an earlier tag may still lie there: the one just built is the newest.)
    return max(glob.glob(os.path.join(ROOT, "bazel-bin", "tools", "wheel", f"{NAME}-{VERSION}-*.whl")),
               key=os.path.getmtime)


def _metadata():
    return metadata(VERSION, read_project(), os.path.join(ROOT, "README.md"))


def _license():
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _bazel_build(*EDITABLE_TARGETS)
    tag = "py3-none-any"  # nothing compiled inside: the .pth points at the checkout
    name = f"{NAME}-{VERSION}-{tag}.whl"
    package_root = os.path.join(ROOT, "bindings", "python")
    write_wheel(os.path.join(wheel_directory, name), {f"__editable__.{NAME}.pth": (package_root + "\n").encode()}, tag,
                VERSION, _metadata(), _license())
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel = _bazel_wheel()
    shutil.copyfile(wheel, os.path.join(wheel_directory, os.path.basename(wheel)))
    return os.path.basename(wheel)


def build_sdist(sdist_directory, config_settings=None):
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    name = f"{NAME}-{VERSION}"
    path = os.path.join(sdist_directory, f"{name}.tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        for f in files.decode().split("\0"):
            if f and os.path.exists(os.path.join(ROOT, f)):
                tar.add(os.path.join(ROOT, f), arcname=f"{name}/{f}")
        info = tarfile.TarInfo(f"{name}/PKG-INFO")
        text = _metadata()
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    return os.path.basename(path)
