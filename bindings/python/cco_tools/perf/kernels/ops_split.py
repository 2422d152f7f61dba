# SPDX-License-Identifier: MIT
"""CCO's own split, an anchor of `cco perf --suites ops`: torch.matmul, and the operator's
collective as a CCO kernel on symmetric memory before or after it (LSA, every rank on one host;
equal shards). It moves what the fused operator moves, with nothing overlapped: fused against
split is what fusing buys on CCO itself, and on one GPU (ranks sharing it, where NCCL cannot
run) it is the only split there is.

One kernel does every collective: from each LSA rank's copy of the source area (this rank's
block of it, or all of it) into this rank's result, copied block by block or summed.
"""

import triton
import triton.language as tl

from cco.ir.triton import cco
from cco.ops.kernels.signals import ptr_at
from cco_tools.perf.kernels.lsa import _peer_bases

BLOCK = 4096   # elements a program moves per step: 16 bytes a thread with 8 warps of 64 (AMD)


@triton.jit(do_not_specialize=["active"])
def lsa_exchange(dc, win, dst, count, failed, active, NRANKS: tl.constexpr, REDUCE: tl.constexpr,
                 MY_BLOCK: tl.constexpr, BLOCK: tl.constexpr):
    """From every LSA rank p's copy of the window, `count` elements at its start (at this
    rank's block, elements [me * count, +count), when MY_BLOCK): summed in fp32 into
    dst[0, count) when REDUCE, else copied to dst[p * count, +count).

    Program i waits at LSA barrier i before reading (every rank's source in place; earlier
    kernels wrote it, which their end made visible: acquire only) and after (no rank's next
    source overwrites what a peer still reads: release only), so every rank's grid must be
    resident at once (cco_tools.perf.kernels.lsa.max_programs). A barrier that gave up (its
    device status, CCO_DEVICE_STATUS_*) is left in failed[0], which the host reads (Split.check):
    the copy went on without its peers. active == 0: returns at once (compiles and loads the
    binary before any rank waits in it)."""
    if active == 0:
        return
    DT: tl.constexpr = dst.dtype.element_ty
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    base, stride = _peer_bases(win, NRANKS)
    if MY_BLOCK:
        first = cco.DevComm.lsa_rank(dc).to(tl.int64) * count
    else:
        first = tl.zeros((), dtype=tl.int64)
    entered = cco.LsaBarrier.sync(dc, pid, coop=cco.CoopScope.BLOCK, order=cco.MemoryOrder.ACQUIRE)
    for start in range(pid * BLOCK, count, step):
        offs = start.to(tl.int64) + tl.arange(0, BLOCK)
        mask = offs < count
        if REDUCE:
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
            for p in tl.static_range(NRANKS):
                acc += tl.load(ptr_at(base + p * stride, DT) + first + offs, mask=mask).to(tl.float32)
            tl.store(dst + offs, acc.to(DT), mask=mask)
        else:
            for p in tl.static_range(NRANKS):
                tl.store(dst + p * count + offs, tl.load(ptr_at(base + p * stride, DT) + first + offs, mask=mask),
                         mask=mask)
    left = cco.LsaBarrier.sync(dc, pid, coop=cco.CoopScope.BLOCK, order=cco.MemoryOrder.RELEASE)
    if entered != 0 or left != 0:
        tl.store(failed, tl.where(entered != 0, entered, left))


# operator -> (the collective after the GEMM, or before it; summed; from this rank's block)
COLLECTIVES = {"ag_gemm": ("before", False, False), "a2a_gemm": ("before", False, True),
               "gemm_ag": ("after", False, False), "gemm_ar": ("after", True, False),
               "gemm_rs": ("after", True, True), "gemm_a2a": ("after", False, True)}


def source_bytes(op, m, k, n, dtype_bytes=2):
    """Bytes of the window the split of `op` needs for a local a of m x k and b of k x n."""
    return (m * k if COLLECTIVES[op][0] == "before" else m * n) * dtype_bytes


class Split:
    """The window (`nbytes`, collective) and a device communicator with an LSA barrier for
    each of `programs` programs, on `comm`, whose ranks must all be LSA peers."""

    def __init__(self, comm, nbytes, programs):
        import torch

        from cco import GDA_CONNECTION_NONE, CCODevCommRequirements

        if comm.lsa_size != comm.world_size:
            raise ValueError("cco split: every rank must be an LSA peer (one host)")
        self.comm = comm
        self.world = comm.world_size
        self.programs = programs
        self.win = comm.alloc_window(nbytes)
        self.libs = cco.get_extern_libs()   # the device library the kernel links
        self.dc = comm.create_dev_comm(CCODevCommRequirements(lsa_barrier_count=programs,
                                                              gda_connection_type=GDA_CONNECTION_NONE))
        # The device word a barrier that gave up leaves its status in.
        self.failed = torch.zeros(1, dtype=torch.int32, device=torch.cuda.current_device())
        self.loaded = set()   # the launches (as Triton specialises them) every rank has compiled and loaded

    def source(self, rows, cols, dtype):
        """The rows x cols source matrix at the window's start (this rank's copy)."""
        from cco.memview import torch_view

        if rows * cols * dtype.itemsize > self.win.size:
            raise ValueError(f"cco split: {rows} x {cols} does not fit the window of {self.win.size} bytes")
        return torch_view(self.win.local_ptr, (rows, cols), dtype)

    def exchange(self, dst, count, reduce, my_block):
        grid = (max(1, min(self.programs, triton.cdiv(count, BLOCK))),)   # the same on every rank
        meta = dict(NRANKS=self.world, REDUCE=reduce, MY_BLOCK=my_block, BLOCK=BLOCK, num_warps=8,
                    extern_libs=self.libs)
        kind = (dst.dtype, dst.data_ptr() % 16 == 0, count % 16 == 0, reduce, my_block)
        if kind not in self.loaded:
            # A rank still compiling (seconds, more with ranks sharing the host's cores) would keep
            # its peers' barriers waiting past the communicator's timeout; they would then give up
            # and read sources not yet written. So the first launch of each kind returns at once,
            # and every rank waits for all to have it before the real one.
            import torch

            lsa_exchange[grid](self.dc.ptr, self.win.handle, dst, count, self.failed, 0, **meta)
            torch.cuda.synchronize()
            self.comm.barrier()
            self.loaded.add(kind)
        lsa_exchange[grid](self.dc.ptr, self.win.handle, dst, count, self.failed, 1, **meta)

    def check(self):
        """Raises if a barrier of any exchange since the last check gave up (then its result
        holds sources its peers had not written); synchronises with the GPU."""
        status = int(self.failed.item())
        if status:
            self.failed.zero_()
            name = {1: "timed out (CCO_TIMEOUT_MS)", 2: "aborted"}.get(status, f"failed (device status {status})")
            raise RuntimeError(f"cco split: an LSA barrier {name}; the exchange went on without its peers")

    def call(self, op, a, b):
        """A callable doing `op` on a and b as split (the result it returns is the operator's),
        with a copied into the window first where the collective comes before the GEMM (as
        it would lie there in a pool)."""
        import torch

        when, reduce, my_block = COLLECTIVES[op]
        m, k = a.shape
        n = b.shape[1]
        w = self.world
        if my_block and m % w:
            raise ValueError(f"cco split: {op} needs rows ({m}) a multiple of the ranks ({w})")
        block = m // w if my_block else m                 # rows a rank's result takes from each
        count = block * (k if when == "before" else n)    # elements of them
        if when == "before":
            src = self.source(m, k, a.dtype)
            src.copy_(a)
            moved = a.new_empty(block * w, k)

            def run():
                self.exchange(moved, count, reduce, my_block)
                return torch.matmul(moved, b)
            return run
        y = self.source(m, n, a.dtype)
        out = a.new_empty(block if reduce else block * w, n)

        def run():
            torch.matmul(a, b, out=y)
            self.exchange(out, count, reduce, my_block)
            return out
        return run

    def close(self):
        """Collective: the device communicator and the window (its memory with it)."""
        self.comm.destroy_dev_comm(self.dc)
        self.comm.deregister_window(self.win)
