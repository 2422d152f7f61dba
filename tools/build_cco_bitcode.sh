#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the device bitcode and its manifest into <repo>/build/lib, where find_cco_bitcode()
# finds a prebuilt file when neither CCO_DEVICE_BC nor the JIT build gives one (the guide's
# tools/build_cco_bitcode.sh). Every variant, or the ones named; needs what tools/setup
# installs (Bazel, clang-19, LLVM 22).
#
#   bash tools/build_cco_bitcode.sh [--out DIR] [VARIANT ...]    # e.g. nvptx-sm_90-proxy
set -euo pipefail

out=
if [[ ${1:-} == --out ]]; then
  [[ $# -ge 2 ]] || { echo "usage: $0 [--out DIR] [VARIANT ...]" >&2; exit 2; }
  out=$(realpath -m "$2")  # relative to where the caller stands
  shift 2
fi
cd "$(dirname "$0")/.."
out=${out:-$PWD/build/lib}
known=$(python3 -c "import json; print(' '.join(t['name'] for t in json.load(open('abi/cco_abi_table.json'))['targets']))")
variants=("$@")
[[ ${#variants[@]} -gt 0 ]] || read -ra variants <<<"$known"
targets=(//device:bitcode_manifest)
for v in "${variants[@]}"; do
  [[ " $known " == *" $v "* ]] || { echo "$0: no variant '$v'; variants: $known" >&2; exit 2; }
  targets+=("//device:bitcode_$v")
done

bazel build "${targets[@]}"
bin=$(bazel info bazel-bin)/device
mkdir -p "$out"
install -m 0644 "$bin/bitcode_manifest.json" "$out/"
for v in "${variants[@]}"; do
  install -m 0644 "$bin/libcco_device-$v.bc" "$out/"
  echo "$out/libcco_device-$v.bc"
done
