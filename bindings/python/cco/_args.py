# SPDX-License-Identifier: MIT
"""Argument checks for values that cross into C, where ctypes would wrap them silently.

ctypes turns -1 into SIZE_MAX for a size_t and truncates a 40-bit int for a C int; the
library would then report a confusing size or rank. These checks name the argument.
"""

import operator

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_UINT64_MAX = 2**64 - 1


def _integer(value, name):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None


def c_int_value(value, name) -> int:
    value = _integer(value, name)
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"{name}={value} does not fit in a C int")
    return value


def size_value(value, name) -> int:
    value = _integer(value, name)
    if not 0 <= value <= _UINT64_MAX:
        raise ValueError(f"{name}={value} is not a valid size (must be in [0, 2**64))")
    return value


def address_value(value, name) -> int:
    """An address as an int; ctypes scalars holding one (c_void_p, c_uint64) are accepted too."""
    if hasattr(value, "value") and not isinstance(value, int):  # c_void_p, c_uint64, ...
        value = value.value or 0
    value = _integer(value, name)
    if not 0 <= value <= _UINT64_MAX:
        raise ValueError(f"{name}=0x{value:x} is not an address")
    return value
