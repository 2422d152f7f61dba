"""A PEP 517 build backend for `pip install .` and `python -m build` from a checkout: the
wheel is the one `bazel build //tools/wheel` makes (tools/setup installs Bazel), copied where
the frontend asks; the sdist is the checkout's tracked files."""

import os
import shutil
import subprocess
import tarfile

from build_wheel import NAME, TAG, VERSION  # the wheel's name, as tools/wheel/build_wheel.py makes it

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _bazel_wheel():
    if shutil.which("bazel") is None:
        raise RuntimeError("cco: building the wheel needs Bazel and the LLVM toolchain: run tools/setup first")
    subprocess.run(["bazel", "build", "//tools/wheel"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "bazel-bin", "tools", "wheel", f"{NAME}-{VERSION}-{TAG}.whl")


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


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
        text = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n".encode()
        info.size = len(text)
        import io

        tar.addfile(info, io.BytesIO(text))
    return os.path.basename(path)
