"""Reference Triton kernels on the CCO device API (used by `cco perf`, tests and examples)."""
