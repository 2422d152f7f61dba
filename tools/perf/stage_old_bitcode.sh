#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the sm_90 device bitcode of commit REV into DIR (by default stage/old), for
# `tests/gpu/run_all.sh device-ab` to time the benchmarks with it (CCO_DEVICE_BC) beside this
# tree's, with one host library: for a change of the device library alone, at the same ABI.
#   bash tools/stage_device.sh && bash tools/perf/stage_old_bitcode.sh b069e5c
# (after tools/stage_device.sh, which empties stage/)
set -euo pipefail
rev=$1
dir=${2:-stage/old}
tree=$(mktemp -d /tmp/cco-old-bitcode.XXXXXX)
trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"' EXIT
git worktree add -q --detach "$tree" "$rev"
(cd "$tree" && bazel build //device:bitcode_nvptx-sm_90-proxy >/dev/null 2>&1 && bazel shutdown >/dev/null 2>&1) ||
  { echo "stage_old_bitcode: building $rev's bitcode failed" >&2; exit 1; }
mkdir -p "$dir"
cp "$tree/bazel-bin/device/libcco_device-nvptx-sm_90-proxy.bc" "$dir/"
chmod u+w "$dir/libcco_device-nvptx-sm_90-proxy.bc"
git rev-parse --short "$rev" > "$dir/REV"
echo "staged $(cat "$dir/REV")'s sm_90 bitcode in $dir"
