#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/build_cco_bitcode.sh leaves a variant in a <repo>/build*/lib folder, and
# find_cco_bitcode() finds it there when the JIT is off (the guide's third place to look); an
# unknown variant is refused by name. Uses a folder of its own, removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
folder=$(mktemp -d "$PWD/build-check-XXXXXX")
trap 'rm -rf "$folder"' EXIT
log=$folder/log
if ! bash tools/build_cco_bitcode.sh --out "$folder/lib" nvptx-sm_90-proxy >"$log" 2>&1; then
  cat "$log"
  exit 1
fi
built=$folder/lib/libcco_device-nvptx-sm_90-proxy.bc
[[ -s $built && -s $folder/lib/bitcode_manifest.json ]] || { echo "no $built or manifest"; cat "$log"; exit 1; }
found=$(CCO_DISABLE_JIT=1 PYTHONPATH=bindings/python "${CCO_PYTHON:-python3}" -c \
  "from cco.device.bitcode import _prebuilt; print(_prebuilt('nvptx-sm_90-proxy'))")
# build*/lib folders are searched in name order: a developer's own build/lib comes first.
[[ $found == "$built" || $found == "$PWD/build/lib/libcco_device-nvptx-sm_90-proxy.bc" ]] ||
  { echo "find_cco_bitcode's lookup found $found, not $built"; exit 1; }
if bash tools/build_cco_bitcode.sh --out "$folder/lib" no-such-variant 2>"$folder/err"; then
  echo "an unknown variant was built"
  exit 1
fi
grep -q "no variant 'no-such-variant'" "$folder/err"
echo "tools/build_cco_bitcode.sh into build*/lib, found there: ok"
