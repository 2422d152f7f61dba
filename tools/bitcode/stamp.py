#!/usr/bin/env python3
"""Stamps a bitcode file with its ABI version and variant (see cco/device/stamp.py).

  stamp.py STAMP_MODULE IN.bc OUT.bc --abi-version N --variant NAME
"""

import argparse
import importlib.util
import sys


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("stamp_module", help="path of bindings/python/cco/device/stamp.py")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--abi-version", type=int, required=True)
    ap.add_argument("--variant", required=True)
    opts = ap.parse_args(argv)
    # Load the package's stamp module by path: the build does not import the cco package.
    spec = importlib.util.spec_from_file_location("cco_stamp", opts.stamp_module)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(opts.input, "rb") as f:
        raw = f.read()
    with open(opts.output, "wb") as f:
        f.write(module.stamp(raw, opts.abi_version, opts.variant))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
