#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The tree keeps its style: `style_check.sh cxx` runs clang-format 19 (.clang-format) over every
# C, C++ and CUDA file git tracks, `style_check.sh python` runs ruff (pyproject.toml) over the
# Python. Each names the files that differ and fails; tools/setup installs both tools. Another
# clang-format version formats some constructs differently, so none but 19 is taken.
# CLANG_FORMAT names the binary where it is not clang-format-19 on PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."

case "${1:-}" in
  cxx)
    clang_format=${CLANG_FORMAT:-clang-format-19}
    if ! "$clang_format" --version 2>/dev/null | grep -q "version 19\."; then
      echo "style_check: $clang_format is not clang-format 19 (tools/setup installs clang-format-19)" >&2
      exit 1
    fi
    mapfile -t files < <(git ls-files -- '*.c' '*.cc' '*.h' '*.hpp' '*.cu' ':!third_party')
    differ=()
    for f in "${files[@]}"; do
      "$clang_format" --dry-run -Werror "$f" >/dev/null 2>&1 || differ+=("$f")
    done
    if ((${#differ[@]})); then
      echo "style_check: not as clang-format formats them (clang-format-19 -i FILE...):" >&2
      printf '  %s\n' "${differ[@]}" >&2
      exit 1
    fi
    echo "style_check: ${#files[@]} C/C++ files as clang-format formats them"
    ;;
  python)
    ruff=ruff
    [[ -x .venv/bin/ruff ]] && ruff=.venv/bin/ruff
    "$ruff" check --no-cache --output-format concise .
    ;;
  *)
    echo "usage: tools/testing/style_check.sh cxx|python" >&2
    exit 2
    ;;
esac
