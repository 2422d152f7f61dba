#!/usr/bin/env python3
"""Stamps a bitcode file with what it is, where tools without LLVM can read it.

LLVM bitcode may sit inside a wrapper (magic 0x0B17C0DE, version, offset, size, cputype;
every LLVM reader skips it). The bytes between the wrapper and the bitcode are ours:
"CCO_BUILD_ABI_VERSION=<n>\\0CCO_BITCODE_VARIANT=<name>\\0", padded to 4 bytes. The IR
itself is untouched, so nothing of the stamp reaches a kernel linking the bitcode.

  stamp.py IN.bc OUT.bc --abi-version N --variant NAME
"""

import argparse
import struct
import sys

WRAPPER_MAGIC = 0x0B17C0DE
RAW_MAGIC = b"BC\xc0\xde"


def stamp(raw, abi_version, variant):
    if raw[:4] != RAW_MAGIC:
        raise ValueError("input is not raw LLVM bitcode (already wrapped?)")
    note = f"CCO_BUILD_ABI_VERSION={abi_version}\0CCO_BITCODE_VARIANT={variant}\0".encode()
    note += b"\0" * (-len(note) % 4)
    offset = 20 + len(note)
    header = struct.pack("<5I", WRAPPER_MAGIC, 0, offset, len(raw), 0)
    return header + note + raw


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--abi-version", type=int, required=True)
    ap.add_argument("--variant", required=True)
    opts = ap.parse_args(argv)
    with open(opts.input, "rb") as f:
        raw = f.read()
    with open(opts.output, "wb") as f:
        f.write(stamp(raw, opts.abi_version, opts.variant))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
