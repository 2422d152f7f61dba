# SPDX-License-Identifier: MIT
"""The 128-byte unique id: plain `bytes` in Python, ccoUniqueId at the C boundary.

Python code sees the id as bytes so any out-of-band channel can carry it (pickle, MPI
bcast, torch broadcast_object_list, a file). Only its length is checked here; the
library checks the contents (magic, version, checksum) and names what is wrong.
"""

import ctypes

from cco import _abi


class UniqueIdStruct(ctypes.Structure):
    """ccoUniqueId. Bytes, not c_char: a c_char array would stop reading at the first NUL."""

    _fields_ = [("internal", ctypes.c_ubyte * _abi.UNIQUE_ID_BYTES)]


def to_bytes(struct: UniqueIdStruct) -> bytes:
    return bytes(struct)


def to_struct(uid) -> UniqueIdStruct:
    """The C form of `uid`: any bytes-like object of exactly UNIQUE_ID_BYTES bytes."""
    try:
        raw = memoryview(uid).tobytes()
    except TypeError:
        hint = " (only rank 0 mints it: broadcast it to every rank)" if uid is None else ""
        raise ValueError(
            f"uid must be the {_abi.UNIQUE_ID_BYTES} bytes that Communicator.get_unique_id() returned, "
            f"got {type(uid).__name__}{hint}") from None
    if len(raw) != _abi.UNIQUE_ID_BYTES:
        raise ValueError(
            f"uid must be exactly {_abi.UNIQUE_ID_BYTES} bytes (what Communicator.get_unique_id() returned), "
            f"got {len(raw)}")
    return UniqueIdStruct.from_buffer_copy(raw)
