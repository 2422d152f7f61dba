# SPDX-License-Identifier: MIT
"""Triton bindings: `from cco.ir.triton import cco`."""
