"""Triton bindings: `from cco.ir.triton import cco`."""
