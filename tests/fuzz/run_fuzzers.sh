#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds each libFuzzer target with clang-19 (-fsanitize=fuzzer,address,undefined) and runs
# it for a bounded time over its committed corpus (tests/fuzz/corpus/<target>). Exit status
# non-zero when a target finds a crash, a leak or an abort. Usage:
#   tests/fuzz/run_fuzzers.sh [seconds per target]     (default 15)
#   FUZZ_MERGE=1 tests/fuzz/run_fuzzers.sh 120          (grow and minimise the corpus)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-15}
CXX=${CXX_FUZZ:-clang++-19}
command -v "$CXX" >/dev/null || { echo "run_fuzzers: $CXX not found"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$root/host/src
common=("$src/common/status.cc" "$src/common/shared_library.cc" "$src/common/env.cc" "$src/auth/crypto.cc")
declare -A sources=(
  [fuzz_unique_id]="$src/bootstrap/unique_id.cc $src/bootstrap/socket.cc"
  [fuzz_messages]="$src/bootstrap/messages.cc $src/bootstrap/socket.cc $src/topology/topology.cc"
  [fuzz_frames]="$src/auth/handshake.cc $src/bootstrap/channel.cc $src/bootstrap/socket.cc"
)
flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I"$src" -I"$root/host/include"
       -I"$root" -Wall -Werror)
failed=0
for target in fuzz_unique_id fuzz_messages fuzz_frames; do
  # shellcheck disable=SC2086
  "$CXX" "${flags[@]}" "$here/$target.cc" ${sources[$target]} "${common[@]}" -ldl -o "$work/$target"
  corpus=$here/corpus/$target
  mkdir -p "$corpus"
  if [[ ${FUZZ_MERGE:-0} == 1 ]]; then
    mkdir -p "$work/new-$target"
    "$work/$target" -max_total_time="$seconds" -print_final_stats=1 "$work/new-$target" "$corpus" >"$work/$target.log" 2>&1 || failed=1
    "$work/$target" -merge=1 "$corpus" "$work/new-$target" >>"$work/$target.log" 2>&1 || failed=1
  else
    # Runs over a scratch copy: the committed corpus only changes on purpose (FUZZ_MERGE).
    cp -r "$corpus" "$work/run-$target"
    "$work/$target" -max_total_time="$seconds" -print_final_stats=1 "$work/run-$target" >"$work/$target.log" 2>&1 || failed=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$target.log" | grep -o '[0-9]*$' || echo 0)
  echo "$target: $(ls "$corpus" | wc -l) corpus files, $execs runs, $(grep -c 'ERROR\|crash-\|leak-' "$work/$target.log" || true) findings"
  if grep -q 'ERROR: \|SUMMARY: ' "$work/$target.log"; then
    failed=1
    tail -40 "$work/$target.log"
  fi
done
exit $failed
