#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the bitcode manifest: variant -> file, sha256, ABI version (and how it was built).

  manifest.py --version-header abi/version.h --out M.json \
      --variant NAME:TARGET:TRIPLE:ARCH:CLANG_ARCH:NIC:COV:PATH ...
"""

import argparse
import hashlib
import json
import os
import re
import sys


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--version-header", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--variant", action="append", default=[])
    opts = ap.parse_args(argv)
    with open(opts.version_header, encoding="utf-8") as f:
        version = int(re.search(r"#define\s+CCO_ABI_VERSION\s+(\d+)", f.read()).group(1))
    variants = []
    for spec in opts.variant:
        name, target, triple, arch, clang_arch, nic, cov, path = spec.split(":", 7)
        variants.append({
            "name": name,
            "file": os.path.basename(path),
            "sha256": sha256(path),
            "abi_version": version,
            "target": target,
            "triple": triple,
            "arch": arch,
            "compiled_for": clang_arch,
            "nic": nic,
            "code_object_version": int(cov) if cov else None,
            "compiler": "clang-19",
        })
    with open(opts.out, "w", encoding="utf-8") as f:
        json.dump({"abi_version": version, "variants": variants}, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
