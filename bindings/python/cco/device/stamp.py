# SPDX-License-Identifier: MIT
"""The stamp on every CCO bitcode: which ABI version and variant it is.

LLVM bitcode may sit inside a wrapper (magic 0x0B17C0DE, version, offset, size, cputype);
every LLVM reader skips it. The bytes between the wrapper and the IR carry
"CCO_BUILD_ABI_VERSION=<n>\\0CCO_BITCODE_VARIANT=<name>\\0", padded to 4 bytes. The IR is
untouched, so nothing of the stamp reaches a kernel that links the bitcode, and tools
without LLVM (find_cco_bitcode) can still tell a file's ABI version.
"""

import re
import struct

WRAPPER_MAGIC = 0x0B17C0DE
RAW_MAGIC = b"BC\xc0\xde"

_ABI = re.compile(rb"CCO_BUILD_ABI_VERSION=(\d+)\0")
_VARIANT = re.compile(rb"CCO_BITCODE_VARIANT=([\w.-]+)\0")


def stamp(raw, abi_version, variant):
    """Raw bitcode -> wrapped, stamped bitcode."""
    if raw[:4] != RAW_MAGIC:
        raise ValueError("input is not raw LLVM bitcode (already wrapped?)")
    note = f"CCO_BUILD_ABI_VERSION={abi_version}\0CCO_BITCODE_VARIANT={variant}\0".encode()
    note += b"\0" * (-len(note) % 4)
    offset = 20 + len(note)
    return struct.pack("<5I", WRAPPER_MAGIC, 0, offset, len(raw), 0) + note + raw


def read_stamp(path):
    """(abi_version, variant) of a stamped file; (None, None) when it carries no stamp."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if len(head) < 20 or struct.unpack("<I", head[:4])[0] != WRAPPER_MAGIC:
        return None, None
    note = head[20:struct.unpack("<I", head[8:12])[0]]
    abi = _ABI.search(note)
    variant = _VARIANT.search(note)
    return (int(abi.group(1)) if abi else None), (variant.group(1).decode() if variant else None)
