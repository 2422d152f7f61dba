#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Stamps a bitcode file with its ABI version and variant (see cco/device/stamp.py).

  stamp.py STAMP_MODULE IN.bc OUT.bc --version-header abi/version.h --variant NAME

The version is CCO_ABI_VERSION of abi/version.h, the one place it is written.
"""

import argparse
import importlib.util
import re
import sys


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("stamp_module", help="path of bindings/python/cco/device/stamp.py")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--version-header", required=True, help="abi/version.h")
    ap.add_argument("--variant", required=True)
    opts = ap.parse_args(argv)
    with open(opts.version_header, encoding="utf-8") as f:
        found = re.search(r"#define\s+CCO_ABI_VERSION\s+(\d+)", f.read())
    if found is None:
        ap.error(f"{opts.version_header}: no '#define CCO_ABI_VERSION N'")
    # Load the package's stamp module by path: the build does not import the cco package.
    spec = importlib.util.spec_from_file_location("cco_stamp", opts.stamp_module)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(opts.input, "rb") as f:
        raw = f.read()
    with open(opts.output, "wb") as f:
        f.write(module.stamp(raw, int(found.group(1)), opts.variant))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
