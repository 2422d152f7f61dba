# SPDX-License-Identifier: MIT
"""Communicator: the guide's host API over ccoComm.

Resources made through a communicator (alloc_mem, register_window, alloc_window,
create_dev_comm) are tracked on it, and destroy() releases what the caller did not:
windows and device communicators first, deregistered collectively in reverse order of
creation, then memory, then the communicator itself.

Collective teardown only makes sense while every rank is heading for the same calls.
When the `with` body raised, the communicator was aborted, or a call timed out, a rank
cannot count on its peers to follow, so destroy() skips straight to ccoCommDestroy,
which is local and frees everything this rank holds; peers blocked on this rank fail
with an error instead of waiting forever.

A Communicator is meant to be driven from one thread at a time; abort() is the
exception, callable from any thread to break a blocking call.
"""

import ctypes

from cco import _abi, _lib
from cco._args import address_value, c_int_value, size_value
from cco.devcomm import DevCommHandle, DevCommStruct
from cco.errors import RESULT_CODES, CCOAbortedError, CCOError, CCOTimeoutError, check
from cco.memory import AllocatedMemory, AllocatedWindow, RegisteredWindow
from cco.requirements import CCODevCommRequirements
from cco.unique_id import UniqueIdStruct, to_bytes, to_struct

ALLGATHER_HOST_MAX_BYTES = 65536   # cco.h's CCO_ALLGATHER_HOST_MAX_BYTES


class Communicator:
    """An explicit communicator handle (ccoComm), created collectively with init()."""

    def __init__(self, *args, **kwargs):
        raise TypeError("create a Communicator with Communicator.init(nranks, rank, uid, per_rank_vmm=...)")

    @classmethod
    def _adopt(cls, handle: int) -> "Communicator":
        self = cls.__new__(cls)
        self._handle = handle
        self._memory = {}  # ptr -> AllocatedMemory, in allocation order
        self._collective = []  # RegisteredWindow / DevCommHandle, in creation order
        self._in_step = True  # False once peers may not follow this rank's collective calls
        return self

    # --- creation ------------------------------------------------------------------------

    @staticmethod
    def get_unique_id() -> bytes:
        """Mints a fresh id (128 bytes) and starts the rendezvous in this process.

        Call it on one rank, hand the bytes to every rank, keep this process alive until
        every rank's init() returned. One id serves one init() per rank.
        """
        uid = UniqueIdStruct()
        check(_lib.load().ccoGetUniqueId(ctypes.byref(uid)))
        return to_bytes(uid)

    @classmethod
    def init(cls, nranks: int, rank: int, uid, per_rank_vmm: int = 0) -> "Communicator":
        """Creates the communicator, collectively: every rank calls it with the same uid.

        per_rank_vmm is the virtual space of each rank's slice of the symmetric range;
        0 picks the platform default.
        """
        uid_struct = to_struct(uid)
        nranks = c_int_value(nranks, "nranks")
        rank = c_int_value(rank, "rank")
        per_rank_vmm = size_value(per_rank_vmm, "per_rank_vmm")
        handle = ctypes.c_void_p()
        check(_lib.load().ccoCommCreate(uid_struct, nranks, rank, per_rank_vmm, ctypes.byref(handle)))
        return cls._adopt(handle.value)

    # --- the C calls, with the bookkeeping every one of them needs -------------------------

    def _live_handle(self) -> int:
        if self._handle is None:
            raise CCOError(RESULT_CODES["ccoInvalidUsage"],
                           "this Communicator was destroyed; create a new one with Communicator.init(...)")
        return self._handle

    def _call(self, function_name: str, *args) -> None:
        handle = self._live_handle()
        try:
            check(getattr(_lib.load(), function_name)(handle, *args))
        except (CCOTimeoutError, CCOAbortedError):
            self._in_step = False
            raise

    def _query_int(self, function_name: str) -> int:
        value = ctypes.c_int()
        self._call(function_name, ctypes.byref(value))
        return value.value

    # --- queries ---------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return self._query_int("ccoCommRank")

    @property
    def nranks(self) -> int:
        """The world size (the guide system's name)."""
        return self.world_size

    @property
    def world_size(self) -> int:
        return self._query_int("ccoCommSize")

    size = world_size

    @property
    def lsa_rank(self) -> int:
        """This rank's index among the ranks of its node (the LSA team)."""
        return self._query_int("ccoCommLsaRank")

    @property
    def lsa_size(self) -> int:
        return self._query_int("ccoCommLsaSize")

    def _node_and_count(self):
        node, count = ctypes.c_int(), ctypes.c_int()
        self._call("ccoCommNode", ctypes.byref(node), ctypes.byref(count))
        return node.value, count.value

    @property
    def node(self) -> int:
        return self._node_and_count()[0]

    @property
    def num_nodes(self) -> int:
        return self._node_and_count()[1]

    @property
    def platform(self) -> str:
        """"cpu", "cuda" or "hip"."""
        kind = self._query_int("ccoCommPlatform")
        return _abi.PLATFORM_NAMES.get(kind, f"unknown({kind})")

    @property
    def device(self) -> int:
        return self._query_int("ccoCommDevice")

    # --- symmetric memory and windows ------------------------------------------------------

    def alloc_mem(self, size: int) -> AllocatedMemory:
        """Symmetric memory: the same offset on every rank that allocates in the same order."""
        size = size_value(size, "size")
        ptr = ctypes.c_void_p()
        self._call("ccoMemAlloc", size, ctypes.byref(ptr))
        mem = AllocatedMemory(ptr.value, size)
        self._memory[mem.ptr] = mem
        return mem

    def free_mem(self, mem) -> None:
        """Frees an alloc_mem allocation (an AllocatedMemory or its ptr); local."""
        ptr = mem.ptr if isinstance(mem, AllocatedMemory) else address_value(mem, "mem")
        self._call("ccoMemFree", ptr)
        self._memory.pop(ptr, None)

    def register_window(self, ptr: int, size: int) -> RegisteredWindow:
        """Makes ptr..ptr+size (inside one alloc_mem allocation; ptr 16-byte aligned) reachable by
        peers; collective."""
        ptr = address_value(ptr, "ptr")
        size = size_value(size, "size")
        handle = ctypes.c_uint64()
        self._call("ccoWindowRegister", ptr, size, ctypes.byref(handle))
        win = RegisteredWindow(handle.value, ptr, size)
        self._collective.append(win)
        return win

    def alloc_window(self, size: int) -> AllocatedWindow:
        """Allocates and registers in one collective call (ccoWindowAllocRegister; the guide's
        one-step form beside alloc_mem + register_window).

        Returns a window that owns its memory (owns_memory=True, the memory at
        local_ptr): deregister_window frees both, and there is nothing to free_mem.
        """
        size = size_value(size, "size")
        ptr, handle = ctypes.c_void_p(), ctypes.c_uint64()
        self._call("ccoWindowAllocRegister", size, ctypes.byref(ptr), ctypes.byref(handle))
        win = AllocatedWindow(handle.value, ptr.value, size)
        self._collective.append(win)
        return win

    alloc_register = alloc_window  # the older name, for callers that still use it

    def deregister_window(self, win) -> None:
        """Deregisters a window (a RegisteredWindow or its handle); collective."""
        handle = win.handle if isinstance(win, RegisteredWindow) else address_value(win, "win")
        self._call("ccoWindowDeregister", handle)
        # The object deregistered, or (given a handle) the window tracked under it.
        gone = win if isinstance(win, RegisteredWindow) else next(
            (r for r in self._collective if isinstance(r, RegisteredWindow) and r.handle == handle), None)
        self._collective = [r for r in self._collective if r is not gone]

    def peer_ptr(self, win, lsa_peer: int, offset: int = 0) -> int:
        """This process's address of byte `offset` of LSA rank lsa_peer's copy of win."""
        handle = win.handle if isinstance(win, RegisteredWindow) else address_value(win, "win")
        ptr = ctypes.c_void_p()
        self._call("ccoGetPeerPtr", handle, c_int_value(lsa_peer, "lsa_peer"), size_value(offset, "offset"),
                   ctypes.byref(ptr))
        return ptr.value

    # --- device communicator ---------------------------------------------------------------

    def create_dev_comm(self, reqs: CCODevCommRequirements = None) -> DevCommHandle:
        """A device communicator for kernels; collective. reqs=None means the defaults."""
        if reqs is None:
            reqs = CCODevCommRequirements()
        elif not isinstance(reqs, CCODevCommRequirements):
            raise TypeError(f"reqs must be a CCODevCommRequirements, got {type(reqs).__name__}")
        struct = DevCommStruct()
        self._call("ccoDevCommCreate", ctypes.byref(reqs), ctypes.byref(struct))
        dc = DevCommHandle(struct)
        self._collective.append(dc)
        return dc

    def destroy_dev_comm(self, dc: DevCommHandle) -> None:
        """Releases a device communicator's resources; collective."""
        if not isinstance(dc, DevCommHandle):
            raise TypeError(f"dc must be the DevCommHandle create_dev_comm returned, got {type(dc).__name__}")
        self._call("ccoDevCommDestroy", ctypes.byref(dc.struct))
        self._collective = [r for r in self._collective if r is not dc]

    def trace_flush(self, dc: DevCommHandle, path: str = None) -> None:
        """Writes what dc's device-side trace recorded since its last flush as a Chrome
        trace-event JSON file at `path` (None: the next file in CCO_TRACE's folder) and empties
        the trace; local. Call it when no kernel that was handed dc runs. Nothing happens where
        dc is not traced (CCO_TRACE was unset when it was made). destroy_dev_comm and destroy
        write what is left."""
        if not isinstance(dc, DevCommHandle):
            raise TypeError(f"dc must be the DevCommHandle create_dev_comm returned, got {type(dc).__name__}")
        encoded = None if path is None else str(path).encode()
        self._call("ccoDevCommTraceFlush", ctypes.byref(dc.struct), encoded)

    # --- synchronisation and lifetime ------------------------------------------------------

    def barrier(self) -> None:
        """Host barrier across all ranks of the communicator."""
        self._call("ccoBarrierAll")

    def allgather_host(self, data: bytes) -> list:
        """Every rank's `data` (bytes, sizes may differ per rank), in rank order, through the
        bootstrap (across nodes). Collective: every rank calls it in the same order. For
        small agreements: at most ALLGATHER_HOST_MAX_BYTES bytes per rank."""
        data = bytes(data)
        limit = ALLGATHER_HOST_MAX_BYTES
        size = len(data) if len(data) <= limit else -1   # too long: still takes part, so that every rank fails
        sizes = self._allgather_fixed(size.to_bytes(8, "little", signed=True))
        sizes = [int.from_bytes(s, "little", signed=True) for s in sizes]
        bad = [r for r, s in enumerate(sizes) if s < 0]
        if bad:
            raise ValueError(f"allgather_host: rank {bad[0]} contributed more than {limit} bytes")
        width = max(sizes)
        parts = self._allgather_fixed(data.ljust(width, b"\0"))
        return [p[:s] for p, s in zip(parts, sizes)]

    def _allgather_fixed(self, data: bytes) -> list:
        n = self.world_size
        mine = ctypes.create_string_buffer(data, len(data) or 1)
        out = ctypes.create_string_buffer(len(data) * n or 1)
        self._call("ccoAllGatherHost", mine, len(data), out)
        raw = out.raw
        return [raw[r * len(data):(r + 1) * len(data)] for r in range(n)]

    def check_async_error(self) -> None:
        """Raises the error the progress thread met on its own (a GDA peer lost, a
        descriptor refused), naming what failed and the peer; returns if there is none.
        Call it when a device wait ends aborted."""
        handle = self._live_handle()
        lib = _lib.load()
        code = ctypes.c_int(0)
        check(lib.ccoCommGetAsyncError(handle, ctypes.byref(code)))
        check(code.value)

    def abort(self) -> None:
        """Makes every blocking call on this communicator fail with CCOAbortedError.

        Callable from any thread. Afterwards the communicator can only be destroyed,
        and destroy() does so without collective teardown.
        """
        handle = self._live_handle()
        self._in_step = False
        check(_lib.load().ccoCommAbort(handle))

    def destroy(self) -> None:
        """Releases every tracked resource, then the communicator. Idempotent.

        If a collective teardown call fails, the communicator is still destroyed
        locally, and that first failure is raised.
        """
        if self._handle is None:
            return
        try:
            if self._in_step:
                self._release_tracked_collectively()
        finally:
            self._destroy_locally()

    def _release_tracked_collectively(self) -> None:
        for resource in reversed(self._collective[:]):
            if isinstance(resource, DevCommHandle):
                self.destroy_dev_comm(resource)
            else:
                self.deregister_window(resource)
        for mem in reversed(list(self._memory.values())):
            self.free_mem(mem)

    def _destroy_locally(self) -> None:
        handle, self._handle = self._handle, None
        self._collective.clear()
        self._memory.clear()
        check(_lib.load().ccoCommDestroy(handle))

    @property
    def destroyed(self) -> bool:
        return self._handle is None

    def __enter__(self) -> "Communicator":
        self._live_handle()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            self._in_step = False  # peers may be nowhere near the same teardown calls
        self.destroy()
        return False

    def __repr__(self):
        if self._handle is None:
            return "<cco.Communicator destroyed>"
        return f"<cco.Communicator rank {self.rank} of {self.world_size} on {self.platform}>"
