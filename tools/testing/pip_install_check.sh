#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `pip install .` from this checkout into a fresh venv, as a user does (pyproject.toml's
# backend runs the Bazel build), then `cco info` from that venv finds its own library;
# `pip install -e .` into another, whose `cco` is the checkout's package and bazel-bin's library.
set -euo pipefail
cd "$(dirname "$0")/../.."
checkout=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --no-index .
python3 -m venv "$tmp/editable"
"$tmp/editable/bin/pip" install -q --no-index -e .
cd "$tmp"
CCO_PLATFORM=cpu "$tmp/venv/bin/cco" info --json | python3 -c "
import json, sys
facts = json.load(sys.stdin)
assert facts['host_library'].startswith('$tmp/venv/'), facts['host_library']
assert facts['host_abi_version'] == facts['abi_version'], facts
print('pip install . and cco info from the new venv: ok')"
CCO_PLATFORM=cpu "$tmp/editable/bin/cco" info --json | python3 -c "
import json, sys
facts = json.load(sys.stdin)
assert facts['host_library'] == '$checkout/bazel-bin/host/libcco.so', facts['host_library']
assert facts['abi_table'] == '$checkout/abi/cco_abi_table.json', facts['abi_table']
assert facts['host_abi_version'] == facts['abi_version'], facts
print('pip install -e . and cco info from the checkout: ok')"
"$tmp/editable/bin/python" -c "import cco; assert cco.__file__.startswith('$checkout/bindings/python/'), cco.__file__"
