# SPDX-License-Identifier: MIT
"""The `cco` command beside the binding: `cco perf` (the benchmark, perf/), `cco info`,
`cco doctor` and `cco launch` (cco.launch). The binding itself is the `cco` package; this one
only uses it."""
