# SPDX-License-Identifier: MIT
"""A stand-in for torch, for FlyDSL's ahead-of-time compiles where torch is not installed.

FlyDSL 0.4.2 imports torch at import time without declaring it, and only registers argument
adapters for these names (flydsl/compiler/jit_argument.py): dtypes as dictionary keys,
torch.Tensor and torch.cuda.Stream as classes. Nothing here is ever called.
"""
import types as _types

__version__ = "0.0.0+cco-test-stub"


class dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


float16, bfloat16, float32, float64 = (dtype(n) for n in ("float16", "bfloat16", "float32", "float64"))
uint8, int8, int16, int32, int64 = (dtype(n) for n in ("uint8", "int8", "int16", "int32", "int64"))
bool = dtype("bool")  # noqa: A001


class Tensor:
    pass


cuda = _types.SimpleNamespace(Stream=type("Stream", (), {}))
