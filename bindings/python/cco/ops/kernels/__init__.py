# SPDX-License-Identifier: MIT
"""The operators' Triton kernels: one GEMM core (core.py) and the three ways tiles move
around it - gather then multiply (gather.py), multiply then scatter (scatter.py), multiply
then reduce (reduce.py)."""
