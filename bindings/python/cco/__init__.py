# SPDX-License-Identifier: MIT
"""cco: the host API of CCO (communicators, symmetric memory, windows, device communicators).

    from cco import Communicator, CCODevCommRequirements, GDA_CONNECTION_NONE

Importing cco needs neither a GPU nor Triton nor libcco.so: the library is loaded on
the first call that needs it. The device side is cco.device (ABI table, bitcode) and
cco.ir.triton (Triton bindings).
"""

from cco._abi import (
    GDA_CONNECTION_CROSSNODE,
    GDA_CONNECTION_FULL,
    GDA_CONNECTION_NONE,
    GDA_CONNECTION_RAIL,
)
from cco._lib import LibraryError
from cco._resources import get_include, get_pkgconfig_dir
from cco.communicator import Communicator
from cco.devcomm import DevCommHandle
from cco.errors import CCOAbortedError, CCOError, CCOTimeoutError
from cco.memory import AllocatedMemory, AllocatedWindow, RegisteredWindow
from cco.requirements import CCODevCommRequirements
from cco.versions import VERSION as __version__  # noqa: F401 (cco.h's CCO_VERSION_MAJOR.MINOR.PATCH)
from cco.versions import versions

__all__ = [
    "AllocatedMemory",
    "AllocatedWindow",
    "CCOAbortedError",
    "CCODevCommRequirements",
    "CCOError",
    "CCOTimeoutError",
    "Communicator",
    "DevCommHandle",
    "GDA_CONNECTION_CROSSNODE",
    "GDA_CONNECTION_FULL",
    "GDA_CONNECTION_NONE",
    "GDA_CONNECTION_RAIL",
    "LibraryError",
    "RegisteredWindow",
    "get_include",
    "get_pkgconfig_dir",
    "versions",
]
