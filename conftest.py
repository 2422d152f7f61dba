# SPDX-License-Identifier: MIT
"""`pytest` run from a checkout (Bazel runs each test file on its own and never reads this file).

The package comes from bindings/python, unless PYTHONPATH names an installed one (the GPU machine
installs the wheel it was handed: that is the package under test); libcco.so, the tcp benchmark
and the bitcode from bazel-bin (`tools/cco info` or `bazel build //...` builds them). Folders
whose tests need what only Bazel hands them, or a GPU, are left out, and the header says why."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.join(HERE, "bindings", "python")


def _installed_on_pythonpath():
    for folder in filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)):
        if os.path.abspath(folder) != _PACKAGE and os.path.isfile(os.path.join(folder, "cco", "__init__.py")):
            return True
    return False


if not _installed_on_pythonpath():
    sys.path.insert(0, _PACKAGE)
    # Tests start ranks and tools as `python -m cco...` processes: they find the package the same way.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE, os.environ.get("PYTHONPATH")) if p)


def _gpu():
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


# The rank program of the network-namespace tests, where Bazel built it.
_NET_RANK = os.path.join(HERE, "bazel-bin", "tests", "host", "net", "gda_net_rank")
if os.path.exists(_NET_RANK):
    os.environ.setdefault("CCO_NET_RANK_BIN", _NET_RANK)

# folder or file -> why plain pytest does not collect it
_LEFT_OUT = {
    "tests/abi": "its tests read files Bazel generates and passes as options: bazel test //tests/abi/...",
    "tests/arch": "its tests read assembly Bazel generates and passes as options: bazel test //tests/arch/...",
    "tests/compile": "its tests compile the headers Bazel hands them: bazel test //tests/compile/...",
    "tests/python/wheel_test.py": "it installs the wheel Bazel builds: bazel test //tests/python:wheel_test",
}
if "CCO_NET_RANK_BIN" not in os.environ:
    _LEFT_OUT["tests/host/net/netns_test.py"] = (
        "its rank program is not built: bazel build //tests/host/net:gda_net_rank")
if not _gpu():
    _LEFT_OUT["tests/gpu"] = "no CUDA GPU with torch here: tests/gpu/run_all.sh on a GPU machine"


def pytest_ignore_collect(collection_path, config):
    relative = os.path.relpath(str(collection_path), HERE)
    if any(relative == folder or relative.startswith(folder + os.sep) for folder in _LEFT_OUT):
        return True
    return None


def pytest_report_header(config):
    return [f"not collected: {folder}: {why}" for folder, why in _LEFT_OUT.items()]
