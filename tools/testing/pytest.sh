#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs pytest under Bazel: the project's Python (CCO_PYTHON, else the checkout's .venv that
# tools/setup makes, else python3), one JUnit XML per test case so .ci/run counts cases, not targets.
set -euo pipefail
# This script in the runfiles is a link to the checkout's copy: the checkout is two folders up.
checkout="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
python="${CCO_PYTHON:-}"
if [[ -z $python ]]; then
  python=python3
  [[ -x $checkout/.venv/bin/python ]] && python="$checkout/.venv/bin/python"
fi
# The cco package from this tree (runfiles root = the workspace), Triton's cache private.
export PYTHONPATH="$PWD/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
[[ -n "${TEST_TMPDIR:-}" ]] && export TRITON_CACHE_DIR="$TEST_TMPDIR/triton-cache"
xml=()
[[ -n "${XML_OUTPUT_FILE:-}" ]] && xml=(--junitxml="$XML_OUTPUT_FILE" -o junit_family=xunit1)
exec "$python" -m pytest -q -p no:cacheprovider "${xml[@]}" "$@"
