# SPDX-License-Identifier: MIT
"""Where CCO's files are: inside an installed wheel (cco/_data/) or in a source checkout.

A wheel carries libcco.so, the ABI table and headers, the bitcode variants and their manifest
under cco/_data/. In a checkout they are the committed abi/ files and Bazel's outputs under
bazel-bin/.
"""

import glob
import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(PACKAGE_DIR, "_data")
# bindings/python/cco -> the repository root, when running from a checkout.
REPO_ROOT = os.path.abspath(os.path.join(PACKAGE_DIR, "..", "..", ".."))


def _first_existing(paths):
    for path in paths:
        if os.path.exists(path):
            return path
    return None


def abi_header_path(name):
    """abi/<name> (a C header of the ABI): the package's copy, else the checkout's."""
    return _first_existing([
        os.path.join(DATA_DIR, "include", "abi", name),
        os.path.join(REPO_ROOT, "abi", name),
    ])


def release_header_path():
    """cco/cco.h, where the release (CCO_VERSION_MAJOR.MINOR.PATCH) is written: the package's copy,
    else the checkout's."""
    return _first_existing([
        os.path.join(DATA_DIR, "include", "cco", "cco.h"),
        os.path.join(REPO_ROOT, "host", "include", "cco", "cco.h"),
    ])


def abi_table_path():
    return _first_existing([
        os.path.join(DATA_DIR, "cco_abi_table.json"),
        os.path.join(REPO_ROOT, "abi", "cco_abi_table.json"),
    ])


def bitcode_dirs():
    """Folders that may hold prebuilt bitcode and its manifest, in lookup order: the
    package's, then the checkout's <repo>/lib and <repo>/build*/lib (as the guide's tooling
    leaves them), then Bazel's."""
    return [d for d in (
        os.path.join(DATA_DIR, "bitcode"),
        os.path.join(REPO_ROOT, "lib"),
        *sorted(glob.glob(os.path.join(REPO_ROOT, "build*", "lib"))),
        os.path.join(REPO_ROOT, "bazel-bin", "device"),
        os.path.join(REPO_ROOT, "device"),  # inside a Bazel test's runfiles
    ) if os.path.isdir(d)]


def tool_path(name):
    """A helper program CCO ships (gda_tcp_bench): the package's, else the checkout's build.
    pip does not keep a wheel's execute bits, so a packaged program that lost them runs from
    an executable copy in the user's cache (by content, made once)."""
    path = _first_existing([
        os.path.join(DATA_DIR, "bin", name),
        os.path.join(REPO_ROOT, "bazel-bin", "tools", "perf", name),
        os.path.join(REPO_ROOT, "tools", "perf", name),  # inside a Bazel test's runfiles
    ])
    if path is None or os.access(path, os.X_OK):
        return path
    import hashlib
    import shutil
    import tempfile

    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    folder = os.path.join(os.path.expanduser(os.environ.get("CCO_CACHE", "~/.cache/cco")), "bin", digest)
    copy = os.path.join(folder, name)
    if not os.access(copy, os.X_OK):
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as tmp:
            shutil.copyfileobj(open(path, "rb"), tmp)
        os.chmod(tmp.name, 0o755)
        os.replace(tmp.name, copy)
    return copy


def host_library_path():
    return _first_existing([
        os.path.join(DATA_DIR, "libcco.so"),
        os.path.join(REPO_ROOT, "bazel-bin", "host", "libcco.so"),
        os.path.join(REPO_ROOT, "host", "libcco.so"),  # inside a Bazel test's runfiles
    ])


def get_include():
    """The folder to pass as -I to compile against CCO: cco/cco.h (the C API), cco/cco.hpp and
    cco/cco_scale_out.hpp (the guide's C++ headers), device/ and abi/. The wheel's, else a
    checkout's (bazel build //tools/wheel:include lays it out the same way)."""
    found = _first_existing([
        os.path.join(DATA_DIR, "include"),
        os.path.join(REPO_ROOT, "bazel-bin", "tools", "wheel", "include"),
    ])
    if found is None:
        raise FileNotFoundError("cco: no include folder: install the cco wheel, or in a checkout run "
                                "`bazel build //tools/wheel:include`")
    return found


def get_pkgconfig_dir():
    """The folder holding cco.pc, for PKG_CONFIG_PATH (the installed wheel's):
        PKG_CONFIG_PATH=$(python -c 'import cco; print(cco.get_pkgconfig_dir())') pkg-config --cflags --libs cco
    """
    path = os.path.join(DATA_DIR, "pkgconfig")
    if not os.path.isdir(path):
        raise FileNotFoundError("cco: cco.pc comes with the installed wheel; in a checkout use "
                                f"-I{REPO_ROOT}/bazel-bin/tools/wheel/include -L{REPO_ROOT}/bazel-bin/host -lcco")
    return path
