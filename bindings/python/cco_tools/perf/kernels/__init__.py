# SPDX-License-Identifier: MIT
"""Reference Triton kernels on the CCO device API: what `cco perf` measures (LSA put / get,
barrier loops, one-shot, two-shot and push all-reduces, GDA and SDMA ping-pongs and copy
loops) and the raw anchors beside them (a raw-pointer copy twin, a flag ping-pong that uses no
CCO at all). The examples and the GPU tests use them too; they are the benchmark's, not the
binding's API (the binding is `cco`; `cco.ir.triton` is what a kernel calls)."""
