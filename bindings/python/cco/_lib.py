# SPDX-License-Identifier: MIT
"""libcco.so through ctypes: found, loaded once, every function of cco.h declared.

Loading is lazy (on the first call of load()), so `import cco` works where the library
is absent, e.g. for the device-side bindings alone. Every entry point gets argtypes and
restype: without them ctypes would pass Python ints as C int and truncate pointers.
"""

import ctypes
import functools
import os
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint64, c_void_p

from cco import _abi, _resources
from cco.devcomm import DevCommStruct
from cco.requirements import CCODevCommRequirements
from cco.unique_id import UniqueIdStruct

# Which library to load, ahead of the wheel's and the checkout's copies.
LIBRARY_ENV = "CCO_LIBRARY"

_result = c_int  # ccoResult_t
_comm = c_void_p  # ccoComm* (opaque)
_window = c_uint64  # ccoWindow_t
_int_out = POINTER(c_int)

# name -> (restype, argtypes), in cco.h's order.
SIGNATURES = {
    # errors and versions
    "ccoGetErrorString": (c_char_p, [c_int]),
    "ccoGetLastError": (c_char_p, []),
    "ccoGetAbiVersion": (c_int, []),
    "ccoGetVersion": (_result, [_int_out, _int_out, _int_out]),
    # communicators
    "ccoGetUniqueId": (_result, [POINTER(UniqueIdStruct)]),
    "ccoCommCreate": (_result, [UniqueIdStruct, c_int, c_int, c_size_t, POINTER(_comm)]),
    "ccoCommDestroy": (_result, [_comm]),
    "ccoCommAbort": (_result, [_comm]),
    "ccoCommGetAsyncError": (_result, [_comm, _int_out]),  # ccoResult_t*
    "ccoCommRank": (_result, [_comm, _int_out]),
    "ccoCommSize": (_result, [_comm, _int_out]),
    "ccoCommLsaRank": (_result, [_comm, _int_out]),
    "ccoCommLsaSize": (_result, [_comm, _int_out]),
    "ccoCommNode": (_result, [_comm, _int_out, _int_out]),
    "ccoCommPlatform": (_result, [_comm, _int_out]),  # ccoPlatform_t*
    "ccoCommDevice": (_result, [_comm, _int_out]),
    # symmetric memory and windows
    "ccoMemAlloc": (_result, [_comm, c_size_t, POINTER(c_void_p)]),
    "ccoMemFree": (_result, [_comm, c_void_p]),
    "ccoWindowRegister": (_result, [_comm, c_void_p, c_size_t, POINTER(_window)]),
    "ccoWindowAllocRegister": (_result, [_comm, c_size_t, POINTER(c_void_p), POINTER(_window)]),
    "ccoWindowDeregister": (_result, [_comm, _window]),
    "ccoGetPeerPtr": (_result, [_comm, _window, c_int, c_size_t, POINTER(c_void_p)]),
    # device communicator
    "ccoDevCommCreate": (_result, [_comm, POINTER(CCODevCommRequirements), POINTER(DevCommStruct)]),
    "ccoDevCommDestroy": (_result, [_comm, POINTER(DevCommStruct)]),
    "ccoDevCommTraceFlush": (_result, [_comm, POINTER(DevCommStruct), c_char_p]),
    # host synchronisation
    "ccoBarrierAll": (_result, [_comm]),
    "ccoAllGatherHost": (_result, [_comm, c_void_p, c_size_t, c_void_p]),
}


class LibraryError(ImportError):
    """libcco.so is missing, cannot be loaded, or does not match these bindings."""


def library_path():
    """The library to load: $CCO_LIBRARY if set, else the wheel's or the checkout's."""
    explicit = os.environ.get(LIBRARY_ENV)
    if explicit:
        if not os.path.exists(explicit):
            raise LibraryError(f"cco: {LIBRARY_ENV}={explicit} does not exist")
        return explicit
    found = _resources.host_library_path()
    if found is None:
        raise LibraryError(
            "cco: libcco.so not found. In a source checkout run `bazel build //host:libcco.so`; "
            f"otherwise install the cco wheel, or point {LIBRARY_ENV} at a libcco.so.")
    return found


@functools.lru_cache(maxsize=None)
def load():
    """The loaded library, with every function declared (loaded once per process)."""
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LibraryError(f"cco: cannot load {path}: {e}") from e
    for name, (restype, argtypes) in SIGNATURES.items():
        try:
            function = getattr(lib, name)
        except AttributeError:
            raise LibraryError(f"cco: {path} does not export {name}: it is not a matching libcco.so") from None
        function.restype = restype
        function.argtypes = argtypes
    # The struct mirrors are only right for the ABI they were written for.
    if lib.ccoGetAbiVersion() != _abi.ABI_VERSION:
        raise LibraryError(
            f"cco: {path} speaks ABI version {lib.ccoGetAbiVersion()}, these bindings ABI version "
            f"{_abi.ABI_VERSION}: use the library and the package of one build")
    return lib


def abi_version() -> int:
    """The ABI version the loaded library speaks (ccoGetAbiVersion)."""
    return load().ccoGetAbiVersion()


def library_version() -> tuple:
    """(major, minor, patch) of the loaded library (ccoGetVersion)."""
    major, minor, patch = c_int(), c_int(), c_int()
    load().ccoGetVersion(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
    return (major.value, minor.value, patch.value)
