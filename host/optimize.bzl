# SPDX-License-Identifier: MIT
"""Compiler flags for code whose speed is measured or shipped.

The repository builds in Bazel's default mode (fastbuild: no optimisation), which keeps test
builds quick on a 2-core machine. The host SDK (libcco.so and everything linking it), the
benchmarks and probes are built optimised whatever the mode: an unoptimised proxy thread made
a GDA round trip over tcp 1.5-2x slower on the 2-core machine. The sanitizer configurations
(.bazelrc: --define=cco_optimize=off) keep their own levels."""

OPTIMIZED = select({
    "//host:optimize_off": [],
    "//conditions:default": ["-O2"],
})
