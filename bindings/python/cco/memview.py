# SPDX-License-Identifier: MIT
"""Views of symmetric memory as arrays, without copies.

torch_view(ptr, shape, dtype) wraps device memory (cuda / hip platform) as a torch tensor
through __cuda_array_interface__, so a window's memory or a peer's copy of it can be
filled and checked with ordinary torch operations. On the cpu platform it wraps host
memory (torch.frombuffer over a ctypes array). The memory must outlive the view.
"""

import ctypes

_TYPESTR = {
    "float32": "<f4", "float16": "<f2", "bfloat16": "<V2", "int32": "<i4", "uint32": "<u4",
    "int64": "<i8", "float64": "<f8", "uint8": "|u1", "int8": "|i1",
}


class _CudaArray:
    """The smallest object torch.as_tensor accepts as device memory."""

    def __init__(self, ptr, shape, typestr):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": typestr, "data": (int(ptr), False), "version": 3, "strides": None,
        }


def torch_view(ptr, shape, dtype, device="cuda"):
    import torch

    if isinstance(shape, int):
        shape = (shape,)
    name = str(dtype).replace("torch.", "")
    count = 1
    for n in shape:
        count *= n
    if device == "cpu":
        raw = (ctypes.c_uint8 * (count * torch.empty((), dtype=dtype).element_size())).from_address(int(ptr))
        return torch.frombuffer(raw, dtype=dtype).view(*shape)
    if name == "bfloat16":  # no typestr for bfloat16: view 16-bit integers, reinterpret
        return torch.as_tensor(_CudaArray(ptr, shape, "<i2"), device=device).view(torch.bfloat16)
    return torch.as_tensor(_CudaArray(ptr, shape, _TYPESTR[name]), device=device)
