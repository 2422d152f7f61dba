#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Stages cco.ops's kernels (and the core anchor) of commit REV as the package cco_old_kernels in
# DIR, for tools/perf/ops_ab_probe.py to time beside this tree's:
#   bash tools/perf/stage_old_ops_kernels.sh 438d9b1 stage/ab
set -euo pipefail
rev=$1
dir=$2/cco_old_kernels
mkdir -p "$dir"
: > "$dir/__init__.py"
for f in core gather scatter reduce signals; do
  git show "$rev:bindings/python/cco/ops/kernels/$f.py" | sed 's/from cco\.ops\.kernels\./from cco_old_kernels./' > "$dir/$f.py"
done
git show "$rev:bindings/python/cco_tools/perf/kernels/ops_core.py" |
  sed 's/from cco\.ops\.kernels\./from cco_old_kernels./' > "$dir/ops_core.py"
