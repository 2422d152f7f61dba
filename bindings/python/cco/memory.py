# SPDX-License-Identifier: MIT
"""What the memory calls return: plain records of addresses the library handed out.

They hold numbers only, no reference back to the communicator: the communicator tracks
them (and releases them on destroy), so a record outliving its communicator is inert,
and passing it to a destroyed communicator raises instead of touching freed memory.
"""

from dataclasses import dataclass


@dataclass(frozen=True, eq=False)
class AllocatedMemory:
    """Symmetric memory from Communicator.alloc_mem: at the same offset on every rank.

    `size` is what was asked for; the library may reserve more (its granularity).
    """

    ptr: int
    size: int

    def __repr__(self):
        return f"AllocatedMemory(ptr=0x{self.ptr:x}, size={self.size})"


@dataclass(frozen=True, eq=False)
class RegisteredWindow:
    """A window from Communicator.register_window or alloc_window.

    `handle` is the device-side window handle (ccoWindow_t) to hand to kernels,
    `local_ptr` this rank's address of the window's first byte. `owns_memory` is true
    for alloc_window windows: deregistering such a window frees its memory too.
    """

    handle: int
    local_ptr: int
    size: int
    owns_memory: bool = False

    def __repr__(self):
        owned = ", owns_memory=True" if self.owns_memory else ""
        return f"RegisteredWindow(handle=0x{self.handle:x}, local_ptr=0x{self.local_ptr:x}, size={self.size}{owned})"


@dataclass(frozen=True, eq=False)
class AllocatedWindow(RegisteredWindow):
    """A window from Communicator.alloc_window (the guide system's one-step form): the memory
    at local_ptr was allocated with it and is freed when it is deregistered."""

    owns_memory: bool = True

    def __repr__(self):
        return f"AllocatedWindow(handle=0x{self.handle:x}, local_ptr=0x{self.local_ptr:x}, size={self.size})"
