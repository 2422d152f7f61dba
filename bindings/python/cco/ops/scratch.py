# SPDX-License-Identifier: MIT
"""The global scratch Triton asks for at a launch of a kernel that makes tensor descriptors on
the device (the operators' TMA core: cco.ops.kernels.core), served from one buffer kept by the
caller's plan.

Triton calls the allocator set with triton.set_allocator at every such launch. Ours is set
only around cco's own launches (Triton keeps it in a context variable; set and reset here), so
a user's allocator stays theirs, and it hands out the same buffer each time: a CUDA graph
replays with that address, no allocation happens inside a capture once the plan's first
call has launched, and the plan's calls are ordered on one stream as its workspace is."""

from contextlib import contextmanager


@contextmanager
def descriptor_scratch(holder, device):
    """Launches inside get their scratch from holder.scratch (a torch buffer on `device`, made
    or grown on first need)."""
    import torch
    from triton.runtime import _allocation

    def allocate(size, alignment, stream):
        buffer = getattr(holder, "scratch", None)
        if buffer is None or buffer.numel() < size:
            if torch.cuda.is_current_stream_capturing():
                raise RuntimeError("cco.ops: a kernel's descriptor scratch grew inside a CUDA graph capture; call "
                                   "the operator once at this shape before capturing")
            buffer = torch.empty(max(size, 1), dtype=torch.int8, device=device)   # 512-byte aligned
            holder.scratch = buffer
        return buffer

    token = _allocation._allocator.set(allocate)
    try:
        yield
    finally:
        _allocation._allocator.reset(token)
