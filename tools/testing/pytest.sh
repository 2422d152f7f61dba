#!/usr/bin/env bash
# Runs pytest under Bazel: the project's Python (CCO_PYTHON, default python3), one
# JUnit XML per test case so .ci/run counts cases, not targets.
set -euo pipefail
python="${CCO_PYTHON:-python3}"
# The cco package from this tree (runfiles root = the workspace), Triton's cache private.
export PYTHONPATH="$PWD/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
[[ -n "${TEST_TMPDIR:-}" ]] && export TRITON_CACHE_DIR="$TEST_TMPDIR/triton-cache"
xml=()
[[ -n "${XML_OUTPUT_FILE:-}" ]] && xml=(--junitxml="$XML_OUTPUT_FILE" -o junit_family=xunit1)
exec "$python" -m pytest -q -p no:cacheprovider "${xml[@]}" "$@"
