#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's main command as a newcomer types it, on this checkout: `tools/cco perf --quick`
# installs what it needs, builds, and prints every table of this machine's suites, row by row,
# ending with its closing line. Fails on a non-zero exit or a table that did not print.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
tools/cco perf --quick 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]]; then
  echo "main command: tools/cco perf --quick exited $status"
  exit 1
fi
if grep -q "^cco perf: cpu platform" "$out"; then
  tables=("GDA over tcp round trip" "GDA over tcp put bandwidth" "host barrier" "put through peer pointers"
          "host control plane")
else
  tables=("LSA put bandwidth" "LSA barrier latency" "host control plane")
fi
missing=0
for table in "${tables[@]}"; do
  if ! grep -q "^# $table" "$out"; then
    echo "main command: the table '$table' was not printed"
    missing=1
  fi
done
grep -qE "^cco perf: [0-9]+ tables in [0-9.]+ s$" "$out" || { echo "main command: no closing line"; missing=1; }
exit $missing
