#!/usr/bin/env bash
# `pip install .` from this checkout into a fresh venv, as a user does (pyproject.toml's
# backend runs the Bazel build), then `cco info` from that venv finds its own library.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --no-index .
cd "$tmp"
CCO_PLATFORM=cpu "$tmp/venv/bin/cco" info --json | python3 -c "
import json, sys
facts = json.load(sys.stdin)
assert facts['host_library'].startswith('$tmp/venv/'), facts['host_library']
assert facts['host_abi_version'] == facts['abi_version'], facts
print('pip install . and cco info from the new venv: ok')"
