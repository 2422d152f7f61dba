#!/usr/bin/env bash
# tools/build_cco_bitcode.sh leaves a variant in <repo>/build/lib, and find_cco_bitcode()
# finds it there when the JIT is off (the guide's third place to look); an unknown variant
# is refused by name.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ ! -e build ]] || { echo "build/ exists already; this check makes and removes its own"; exit 1; }
trap 'rm -rf build' EXIT
bash tools/build_cco_bitcode.sh nvptx-sm_90-proxy >/dev/null 2>&1
found=$(CCO_DISABLE_JIT=1 PYTHONPATH=bindings/python "${CCO_PYTHON:-python3}" -c \
  "from cco.device import find_cco_bitcode; print(find_cco_bitcode(('cuda', 90)))")
[[ $found == "$PWD/build/lib/libcco_device-nvptx-sm_90-proxy.bc" ]] || { echo "found $found"; exit 1; }
if bash tools/build_cco_bitcode.sh no-such-variant 2>"build/err"; then echo "an unknown variant was built"; exit 1; fi
grep -q "no variant 'no-such-variant'" build/err
echo "tools/build_cco_bitcode.sh into build/lib, found there: ok"
