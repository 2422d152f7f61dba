#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerates the committed ABI table from abi/functions.list, abi/enums.h, abi/version.h and
# the bitcode variants (device/variants.bzl), and the type stubs of cco.ir.triton.cco from it.
# Run after changing the ABI; //tests/abi:abi_table_test fails until you do.
set -euo pipefail
cd "$(dirname "$0")/../.."
bazel build //tools/abi:abi_table_generated
install -m 0644 bazel-bin/tools/abi/cco_abi_table.generated.json abi/cco_abi_table.json
echo "abi/cco_abi_table.json updated"
# The Triton binding's type stubs follow the table (//tests/python:stubs_test checks them).
python3 tools/abi/gen_stubs.py
