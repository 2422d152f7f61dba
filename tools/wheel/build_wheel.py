#!/usr/bin/env python3
"""Builds the cco wheel: the Python packages (cco, the binding, with libcco.so, every bitcode
variant and its manifest, the ABI table, the public headers, and the device sources the JIT
build compiles; cco_tools, the `cco` command and its benchmark).

  build_wheel.py --out DIR --package bindings/python/cco --package bindings/python/cco_tools
      --lib libcco.so --table T.json
      --manifest M.json --bitcode A.bc ... --header DEST=SRC ... --source DEST=SRC ...

A wheel is a zip with a .dist-info folder; writing it directly keeps the build offline.
"""

import argparse
import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile

NAME, VERSION = "cco", "0.1.0"
# libcco.so is loaded with ctypes: no CPython ABI tie. The platform is manylinux_2_<glibc>
# for the newest glibc symbol version libcco.so needs (glibc_requirement); its other needs
# are libstdc++ and libgcc_s of the same era, which that manylinux policy allows (checked by
# `auditwheel show` in tests/python/wheel_test.py).
PLATFORM = "manylinux_2_34_x86_64"
TAG = f"py3-none-{PLATFORM}"


def glibc_requirement(library):
    """The newest GLIBC_x.y version `library` needs, as (x, y), read from `objdump -T`."""
    out = subprocess.run(["objdump", "-T", library], check=True, capture_output=True, text=True).stdout
    versions = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"\bGLIBC_(\d+\.\d+(?:\.\d+)?)\b", out)}
    return max(versions)[:2]


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def write_wheel(path, files, tag):
    """A wheel of `files` (archive path -> bytes) with its .dist-info: metadata, the `cco`
    command, and the RECORD of every file."""
    files = dict(files)
    info = f"{NAME}-{VERSION}.dist-info"
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
        "Summary: CCO: GPU-initiated communication (LSA, GDA, SDMA) as LLVM bitcode + a thin host SDK\n"
        "Requires-Python: >=3.10\n").encode()
    files[f"{info}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: cco build_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\ncco = cco_tools.__main__:main\n"
    record = [record_line(p, d) for p, d in sorted(files.items())] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for name, content in sorted(files.items()):
            entry = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # reproducible
            entry.external_attr = (0o755 if name.endswith(".so") or "/_data/bin/" in name else 0o644) << 16
            whl.writestr(entry, content, zipfile.ZIP_DEFLATED)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--package", action="append", required=True, help="a package folder (each one's .py files)")
    ap.add_argument("--lib", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--bitcode", nargs="+", required=True)
    ap.add_argument("--header", action="append", default=[], help="DEST=SRC under cco/_data/include")
    ap.add_argument("--source", action="append", default=[], help="DEST=SRC under cco/_data/src")
    ap.add_argument("--bin", action="append", default=[], help="SRC: a helper program, under cco/_data/bin")
    opts = ap.parse_args(argv)

    needed = glibc_requirement(opts.lib)
    if f"manylinux_{needed[0]}_{needed[1]}_x86_64" != PLATFORM:
        raise SystemExit(f"build_wheel: libcco.so needs glibc {needed[0]}.{needed[1]}, but the wheel is tagged "
                         f"{PLATFORM}: update PLATFORM here and the file name in tools/wheel/BUILD.bazel")
    files = {}  # archive path -> bytes
    for package in opts.package:
        for folder, _, names in os.walk(package):
            for n in sorted(names):
                if n.endswith((".py", ".pyi")):
                    src = os.path.join(folder, n)
                    files[os.path.join(os.path.basename(package), os.path.relpath(src, package))] = open(src, "rb").read()
    data = "cco/_data"
    files[f"{data}/libcco.so"] = open(opts.lib, "rb").read()
    files[f"{data}/cco_abi_table.json"] = open(opts.table, "rb").read()
    files[f"{data}/bitcode/bitcode_manifest.json"] = open(opts.manifest, "rb").read()
    for bc in opts.bitcode:
        files[f"{data}/bitcode/{os.path.basename(bc)}"] = open(bc, "rb").read()
    for program in opts.bin:
        files[f"{data}/bin/{os.path.basename(program)}"] = open(program, "rb").read()
    for prefix, pairs in (("include", opts.header), ("src", opts.source)):
        for pair in pairs:
            dest, src = pair.split("=", 1)
            files[f"{data}/{prefix}/{dest}"] = open(src, "rb").read()

    write_wheel(os.path.join(opts.out, f"{NAME}-{VERSION}-{TAG}.whl"), files, TAG)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
