# SPDX-License-Identifier: MIT
"""symmetric_pool(comm): a torch.cuda.MemPool whose blocks are CCO symmetric memory.

    pool = ops.symmetric_pool(comm)
    with torch.cuda.use_mem_pool(pool):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)   # lives in a CCO window

The pool is one window of `nbytes` (collective: every rank calls symmetric_pool together,
with the same size), handed to PyTorch's caching allocator through CUDAPluggableAllocator
over a small C allocator (pool_alloc.c, compiled on first use with the system's C compiler
into CCO_CACHE or ~/.cache/cco; its source is ALLOCATOR_SOURCE below). A tensor allocated under
torch.cuda.use_mem_pool(pool) is inside the window: window_offset(t) says where, and peers reach it at that offset of
their view of the window. Limits: the pool never grows (an allocation that does not fit
fails like an out-of-memory); a tensor's offset is the same on every rank only if every rank
made the same allocations in the same order; the pool lives as long as the communicator.
"""

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading

from cco import _env

DEFAULT_BYTES = 1 << 30
_lock = threading.Lock()
_pools = []   # (pool, window, library) of every pool made in this process


ALLOCATOR_SOURCE = r"""/* The allocator behind cco.ops.symmetric_pool: hands out pieces of one region (this rank's
 * part of a CCO window) to PyTorch's caching allocator, through CUDAPluggableAllocator.
 * First fit over a list of free ranges kept in address order, neighbours merged on free.
 * One copy of this library per pool (each is loaded from its own file), so every pool has
 * its own region. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define CCO_POOL_ALIGN 512u
#define CCO_POOL_MAX_RANGES 8192

typedef struct {
  uintptr_t start;
  size_t size;
} Range;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Range free_ranges[CCO_POOL_MAX_RANGES];
static int free_count;
static uintptr_t region_start;
static size_t region_size, in_use;

/* Gives the allocator its region; called once, before the pool is used. */
void cco_pool_init(uintptr_t start, size_t size) {
  pthread_mutex_lock(&lock);
  region_start = start;
  region_size = size;
  free_ranges[0].start = start;
  free_ranges[0].size = size;
  free_count = size ? 1 : 0;
  in_use = 0;
  pthread_mutex_unlock(&lock);
}

size_t cco_pool_in_use(void) { return in_use; }

/* NULL when no free range is large enough: PyTorch then frees its cached blocks and asks
 * again, and reports out of memory if that fails too. */
void* cco_pool_malloc(size_t size, int device, void* stream) {
  (void)device;
  (void)stream;
  size_t want = (size + CCO_POOL_ALIGN - 1) / CCO_POOL_ALIGN * CCO_POOL_ALIGN;
  if (want == 0) want = CCO_POOL_ALIGN;
  void* found = NULL;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < free_count; ++i) {
    if (free_ranges[i].size < want) continue;
    found = (void*)free_ranges[i].start;
    free_ranges[i].start += want;
    free_ranges[i].size -= want;
    if (free_ranges[i].size == 0) {
      for (int j = i; j + 1 < free_count; ++j) free_ranges[j] = free_ranges[j + 1];
      --free_count;
    }
    in_use += want;
    break;
  }
  pthread_mutex_unlock(&lock);
  return found;
}

void cco_pool_free(void* ptr, size_t size, int device, void* stream) {
  (void)device;
  (void)stream;
  uintptr_t start = (uintptr_t)ptr;
  size_t len = (size + CCO_POOL_ALIGN - 1) / CCO_POOL_ALIGN * CCO_POOL_ALIGN;
  if (len == 0) len = CCO_POOL_ALIGN;
  pthread_mutex_lock(&lock);
  if (start < region_start || start + len > region_start + region_size) {
    pthread_mutex_unlock(&lock);
    return; /* not ours: never hand it out */
  }
  int at = 0;
  while (at < free_count && free_ranges[at].start < start) ++at;
  int merged_left = at > 0 && free_ranges[at - 1].start + free_ranges[at - 1].size == start;
  int merged_right = at < free_count && start + len == free_ranges[at].start;
  if (merged_left && merged_right) {
    free_ranges[at - 1].size += len + free_ranges[at].size;
    for (int j = at; j + 1 < free_count; ++j) free_ranges[j] = free_ranges[j + 1];
    --free_count;
  } else if (merged_left) {
    free_ranges[at - 1].size += len;
  } else if (merged_right) {
    free_ranges[at].start = start;
    free_ranges[at].size += len;
  } else if (free_count < CCO_POOL_MAX_RANGES) {
    for (int j = free_count; j > at; --j) free_ranges[j] = free_ranges[j - 1];
    free_ranges[at].start = start;
    free_ranges[at].size = len;
    ++free_count;
  } /* else: the range is lost to this pool (the list is full), never handed out twice */
  in_use -= len;
  pthread_mutex_unlock(&lock);
}
"""


def _cache_dir():
    base = _env.get("CCO_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "cco")
    path = os.path.join(base, "ops")
    os.makedirs(path, exist_ok=True)
    return path


def build_library():
    """pool_alloc.c compiled once per content into the cache; a fresh copy of the file per
    pool, so each loaded library (and its region) is its own."""
    digest = hashlib.sha256(ALLOCATOR_SOURCE.encode()).hexdigest()[:16]
    built = os.path.join(_cache_dir(), f"libcco_pool_{digest}.so")
    if not os.path.exists(built):
        compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
        if compiler is None:
            raise RuntimeError("cco.ops.symmetric_pool: no C compiler (cc, gcc or clang) to build its allocator")
        scratch = built + f".{os.getpid()}.tmp"
        source = scratch + ".c"
        with open(source, "w", encoding="utf-8") as f:
            f.write(ALLOCATOR_SOURCE)
        done = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", scratch, source, "-lpthread"],
                              capture_output=True, text=True)
        os.unlink(source)
        if done.returncode != 0:
            raise RuntimeError(f"cco.ops.symmetric_pool: building its allocator failed:\n{done.stderr}")
        os.replace(scratch, built)
    fd, copy = tempfile.mkstemp(prefix="libcco_pool_", suffix=".so", dir=_cache_dir())
    os.close(fd)
    shutil.copyfile(built, copy)
    return copy


def symmetric_pool(comm, nbytes=DEFAULT_BYTES):
    """A torch.cuda.MemPool of `nbytes` of symmetric memory on `comm` (collective)."""
    import torch

    nbytes = int(nbytes)
    if nbytes <= 0:
        raise ValueError(f"cco.ops.symmetric_pool: nbytes={nbytes}")
    with _lock:
        path = build_library()
    mem = comm.alloc_mem(nbytes)
    win = comm.register_window(mem.ptr, nbytes)
    library = ctypes.CDLL(path)
    library.cco_pool_init.argtypes = [ctypes.c_uint64, ctypes.c_size_t]
    library.cco_pool_in_use.restype = ctypes.c_size_t
    library.cco_pool_init(win.local_ptr, nbytes)
    allocator = torch.cuda.memory.CUDAPluggableAllocator(path, "cco_pool_malloc", "cco_pool_free")
    pool = torch.cuda.MemPool(allocator.allocator())
    with _lock:
        _pools.append((pool, win, library, allocator, comm))
    return pool


def window_of(t, comm=None):
    """(window, byte offset) of a tensor's first element when it lies in a symmetric pool's
    window (of `comm`'s pools only, where comm is given), else None."""
    address = t.data_ptr()
    with _lock:
        for _, win, _, _, owner in _pools:
            if owner.destroyed or (comm is not None and owner is not comm):
                continue
            if win.local_ptr <= address < win.local_ptr + win.size:
                return win, address - win.local_ptr
    return None


def window_offset(t):
    """The byte offset of tensor t in its pool's window (None if t is not from a pool)."""
    found = window_of(t)
    return None if found is None else found[1]


def in_use(pool):
    """Bytes of the pool's window that PyTorch holds (cached blocks included)."""
    with _lock:
        for p, _, library, _, _ in _pools:
            if p is pool:
                return library.cco_pool_in_use()
    raise ValueError("cco.ops.in_use: not a pool made by symmetric_pool")
