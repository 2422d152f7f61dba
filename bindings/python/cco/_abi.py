# SPDX-License-Identifier: MIT
"""Numbers fixed by the C ABI (abi/version.h, abi/enums.h, cco.h), mirrored for ctypes.

The ABI version is read from abi/version.h and the release from cco.h (the package's copies
of the headers, or the checkout's), the one place each is written. The other numbers change with a new ABI version
at most and are written out, so that `import cco` needs neither the ABI table nor
libcco.so; tests/python compares every one of them with the table, the headers and the
loaded library, so a drift fails a test instead of a job.
"""

import re

from cco import _resources


def read_abi_version(path):
    """CCO_ABI_VERSION of the header at `path` (abi/version.h)."""
    with open(path, encoding="utf-8") as f:
        found = re.search(r"#define\s+CCO_ABI_VERSION\s+(\d+)", f.read())
    if found is None:
        raise ImportError(f"cco: {path} has no '#define CCO_ABI_VERSION N'")
    return int(found.group(1))


def _abi_version():
    path = _resources.abi_header_path("version.h")
    if path is None:
        raise ImportError("cco: abi/version.h is neither in the package (cco/_data/include) nor in the checkout")
    return read_abi_version(path)


def read_release(path):
    """(major, minor, patch): CCO_VERSION_MAJOR, _MINOR and _PATCH of the header at `path` (cco.h)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parts = [re.search(rf"#define\s+CCO_VERSION_{part}\s+(\d+)", text) for part in ("MAJOR", "MINOR", "PATCH")]
    if None in parts:
        raise ImportError(f"cco: {path} does not define CCO_VERSION_MAJOR, _MINOR and _PATCH")
    return tuple(int(p.group(1)) for p in parts)


def _release():
    path = _resources.release_header_path()
    if path is None:
        raise ImportError("cco: cco/cco.h is neither in the package (cco/_data/include) nor in the checkout")
    return read_release(path)


ABI_VERSION = _abi_version()

DEV_COMM_MAGIC = 0x444F4343  # "CCOD"
WINDOW_MAGIC = 0x574F4343  # "CCOW"
DEV_COMM_REQUIREMENTS_MAGIC = 0x524F4343  # "CCOR"

UNIQUE_ID_BYTES = 128

# ccoGdaConnectionType: which peers get GDA (RDMA) connections.
GDA_CONNECTION_NONE = 0
GDA_CONNECTION_CROSSNODE = 1
GDA_CONNECTION_FULL = 2
GDA_CONNECTION_RAIL = 3

# ccoPlatform_t, by the names Communicator.platform reports.
PLATFORM_NAMES = {0: "cpu", 1: "cuda", 2: "hip"}

# CCO_VERSION_MAJOR / MINOR / PATCH of cco.h.
VERSION = _release()
