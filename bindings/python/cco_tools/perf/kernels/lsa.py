# SPDX-License-Identifier: MIT
"""LSA kernels in Triton: put / get through peer pointers, barrier loops, one-shot and
two-shot all-reduces, and the raw anchors they are measured against (a raw-pointer copy twin and a
flag ping-pong that uses no CCO at all).

Every CCO call here is made by all threads of a program, so barriers use coop=BLOCK (a
program with num_warps=1 is one warp: coop=WARP is then the same group).
"""

import inspect

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
from triton.runtime import driver

from cco.ir.triton import cco


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    """Grid-stride copy of n int64 words (the loop keeps the grid small and persistent);
    each step issues two independent loads before its stores, to keep more bytes in
    flight per program."""
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK * 2
    for start in range(pid * BLOCK * 2, n, step):
        offs = start + tl.arange(0, BLOCK)
        a = tl.load(src + offs, mask=offs < n, eviction_policy="evict_first")
        b = tl.load(src + offs + BLOCK, mask=offs + BLOCK < n, eviction_policy="evict_first")
        tl.store(dst + offs, a, mask=offs < n, cache_modifier=".cs")
        tl.store(dst + offs + BLOCK, b, mask=offs + BLOCK < n, cache_modifier=".cs")


@triton.jit
def _aligned(address, DTYPE: tl.constexpr):
    """DTYPE at `address`, 16-byte aligned: a window's start (ccoWindowRegister requires it) or
    an area a multiple of 256 bytes into one. Triton cannot see that through the device
    library's call; said so (on the pointer: on the integer the hint is lost), it moves 16
    bytes a thread."""
    return tl.multiple_of(address.to(tl.pointer_type(DTYPE), bitcast=True), 16)


@triton.jit
def _prior_kernel_done(PDL: tl.constexpr):
    """With programmatic dependent launch (PDL, NVIDIA sm_90+: PDL=True here and the launch
    option launch_pdl=True, always both) a kernel may start while the kernel before it on the
    stream still runs. What comes before this call may only read what no kernel writes (the
    window's and the device communicator's descriptors); after it, everything the prior kernel
    wrote is visible. Without PDL it compiles to nothing."""
    if PDL:
        gdc_wait()


@triton.jit
def _next_kernel_may_start(PDL: tl.constexpr):
    """Lets the next kernel on the stream (if launched with PDL) start its prologue now. A
    kernel that waits for its peers calls it only after its last such wait: a successor that
    starts early holds multiprocessors while it waits for this kernel, and where ranks share a
    GPU it could take the ones a peer's kernel needs to reach this rank."""
    if PDL:
        gdc_launch_dependents()


@triton.jit
def _window_words(address, offset):
    """int64 words at `offset` bytes (a multiple of 8) into a window whose start is `address`;
    the offset added here, where Triton knows how it divides, so accesses stay 16 bytes wide
    wherever it allows."""
    return _aligned(address, tl.int64) + offset // 8


@triton.jit
def lsa_put(win, peer, src_offset, dst_offset, n_words, BLOCK: tl.constexpr, PDL: tl.constexpr = False):
    """This rank's copy [src_offset, +8*n_words) -> peer's copy at dst_offset (offsets: multiples of 8)."""
    src = _window_words(cco.Window.local_ptr(win, 0), src_offset)
    dst = _window_words(cco.Window.lsa_ptr(win, peer, 0), dst_offset)
    _prior_kernel_done(PDL)
    _next_kernel_may_start(PDL)
    _copy(src, dst, n_words, BLOCK)


@triton.jit
def lsa_get(win, peer, src_offset, dst_offset, n_words, BLOCK: tl.constexpr, PDL: tl.constexpr = False):
    """Peer's copy at src_offset -> this rank's copy at dst_offset (offsets: multiples of 8)."""
    src = _window_words(cco.Window.lsa_ptr(win, peer, 0), src_offset)
    dst = _window_words(cco.Window.local_ptr(win, 0), dst_offset)
    _prior_kernel_done(PDL)
    _next_kernel_may_start(PDL)
    _copy(src, dst, n_words, BLOCK)


@triton.jit
def raw_copy(src_addr, dst_addr, n_words, BLOCK: tl.constexpr):
    """The raw-pointer twin of lsa_put / lsa_get: addresses computed on the host."""
    src = src_addr.to(tl.pointer_type(tl.int64), bitcast=True)
    dst = dst_addr.to(tl.pointer_type(tl.int64), bitcast=True)
    _copy(src, dst, n_words, BLOCK)


# Loop counts are not specialised on: a timed launch must reuse the warm-up's binary
# (loading a new one while a peer's kernel spins can wait for that kernel forever).
@triton.jit(do_not_specialize=["rounds"])
def barrier_loop(dc, rounds, status, COOP: tl.constexpr, ORDER: tl.constexpr = -1):
    """`rounds` LSA barrier rounds on barrier (program id); status[pid] = the worst status.
    ORDER: a cco.MemoryOrder for every round, or -1: the default (ACQ_REL) form."""
    pid = tl.program_id(0)
    worst = 0
    for _ in range(rounds):
        if ORDER == -1:
            worst = tl.maximum(worst, cco.LsaBarrier.sync(dc, pid, coop=COOP))
        else:
            worst = tl.maximum(worst, cco.LsaBarrier.sync(dc, pid, coop=COOP, order=ORDER))
    tl.store(status + pid, worst)


@triton.jit
def barrier_timeout(dc, timeout_ns, status, COOP: tl.constexpr):
    tl.store(status + tl.program_id(0), cco.LsaBarrier.sync_timeout(dc, tl.program_id(0), timeout_ns, coop=COOP))


@triton.jit
def _peer_bases(win, NRANKS: tl.constexpr):
    """LSA rank 0's copy of the window and the distance between ranks' copies. Taken before
    the first barrier: read after it, the window's fields would be one more memory trip on
    the critical path (the barrier's acquire makes the compiler, and L1, forget them)."""
    base = cco.Window.lsa_ptr(win, 0, 0)
    if NRANKS > 1:
        stride = cco.Window.lsa_ptr(win, 1, 0) - base
    else:
        stride = base - base
    return base, stride


@triton.jit
def _f32(address):
    return _aligned(address, tl.float32)


@triton.jit(do_not_specialize=["iters"])
def oneshot_allreduce(dc, win, out, n, iters, NRANKS: tl.constexpr, BLOCK: tl.constexpr, PDL: tl.constexpr = False):
    """out[i] = sum over the LSA ranks of their window's float32 element i, `iters` times.

    Programs are persistent (grid-stride over BLOCK chunks), and program p uses LSA
    barrier p: one barrier before reading (every rank's input is in place), one after
    (nobody overwrites its input while a peer still reads it). The first only acquires:
    the inputs were written by earlier kernels, which the kernel boundary made visible, so
    its arrive needs no release (which would wait for the acknowledgement of every earlier
    store); the second only releases (this rank's reads come before a peer's next writes;
    nothing is read after it). A rank's programs wait for
    the same programs of its peers, so every rank's grid must be resident at once: keep the
    grid within what the GPU holds alongside the peers sharing it (max_programs()).
    """
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    base, stride = _peer_bases(win, NRANKS)
    _prior_kernel_done(PDL)
    for _ in range(iters):
        cco.LsaBarrier.sync(dc, pid, coop=cco.CoopScope.BLOCK, order=cco.MemoryOrder.ACQUIRE)
        for start in range(pid * BLOCK, n, step):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for p in tl.static_range(NRANKS):
                acc += tl.load(_f32(base + p * stride) + offs, mask=mask)
            tl.store(out + offs, acc, mask=mask)
        cco.LsaBarrier.sync(dc, pid, coop=cco.CoopScope.BLOCK, order=cco.MemoryOrder.RELEASE)
    _next_kernel_may_start(PDL)


@triton.jit(do_not_specialize=["iters"])
def twoshot_allreduce(dc, win, out, n, result_offset, iters, NRANKS: tl.constexpr, BLOCK: tl.constexpr,
                      PDL: tl.constexpr = False):
    """out[i] = sum over the LSA ranks of their window's float32 element i, `iters` times, in
    two shots: LSA rank r sums its chunk of every rank's input and stores the sums into every
    rank's result area (window byte offset `result_offset`, n float32), then each rank copies
    its result area into `out`. A rank reads n + n/NRANKS elements instead of NRANKS * n.

    Two barriers a call, as the one-shot: before the reads (every input in place) and after
    the stores (every chunk landed, and every input read: a caller may write its next input
    once the kernel ended; the next call's stores wait for its first barrier, which every rank
    reaches only after copying its result area out). Program p uses LSA barrier p and handles
    the same blocks of every chunk on every rank: chunks are whole multiples of BLOCK times the
    grid, so the blocks program p copies out are the ones program p of each rank stored."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    step = programs * BLOCK
    me = cco.DevComm.lsa_rank(dc)
    base, stride = _peer_bases(win, NRANKS)
    chunk = tl.cdiv(tl.cdiv(n, NRANKS), step) * step
    lo = me * chunk
    hi = tl.minimum(lo + chunk, n)
    mine = _f32(base + me * stride + result_offset)
    _prior_kernel_done(PDL)
    for it in range(iters):
        # The inputs and the peers' last copy-out of their result areas come from earlier
        # kernels on the first round (acquire suffices, as in the one-shot); on a later round
        # of this kernel the copy-out is this kernel's, and its reads must be released.
        if it == 0:
            cco.LsaBarrier.sync(dc, pid, coop=cco.CoopScope.BLOCK, order=cco.MemoryOrder.ACQUIRE)
        else:
            cco.LsaBarrier.sync(dc, pid, coop=cco.CoopScope.BLOCK)
        for start in range(lo + pid * BLOCK, hi, step):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < hi
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for p in tl.static_range(NRANKS):
                acc += tl.load(_f32(base + p * stride) + offs, mask=mask)
            for p in tl.static_range(NRANKS):
                tl.store(_f32(base + p * stride + result_offset) + offs, acc, mask=mask)
        cco.LsaBarrier.sync(dc, pid, coop=cco.CoopScope.BLOCK)
        for start in range(pid * BLOCK, n, step):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out + offs, tl.load(mine + offs, mask=mask), mask=mask)
    _next_kernel_may_start(PDL)


def max_programs(ranks_per_gpu, device=None):
    """Programs per rank that are resident at once with every rank sharing the GPU (`device`,
    else the current one), leaving room for what a late rank runs first
    (cco.ops.planning.resident_programs)."""
    import torch

    from cco.ops.planning import resident_programs

    device = torch.cuda.current_device() if device is None else device
    return resident_programs(torch.cuda.get_device_properties(device).multi_processor_count, ranks_per_gpu)


@triton.jit(do_not_specialize=["rounds"])
def flag_pingpong(my_flag, peer_flag, rounds, failed, FIRST: tl.constexpr):
    """The latency floor: two kernels bounce a flag through each other's memory with
    system-scope release stores and acquire atomic reads, no CCO involved. One round trip
    per round. A peer that never answers ends the loop after 2**26 polls (failed = 1)."""
    gave_up = 0
    for i in range(rounds):
        if FIRST:
            tl.atomic_xchg(peer_flag, i + 1, sem="release", scope="sys")
        seen = tl.atomic_add(my_flag, 0, sem="acquire", scope="sys")
        spins = 0
        while (seen != i + 1) & (spins < 67108864):
            seen = tl.atomic_add(my_flag, 0, sem="acquire", scope="sys")
            spins += 1
        gave_up = gave_up | (seen != i + 1).to(tl.int32)
        if not FIRST:
            tl.atomic_xchg(peer_flag, i + 1, sem="release", scope="sys")
    tl.store(failed, gave_up)


def _check_pdl(pdl, what):
    """pdl=True needs programmatic dependent launch: an NVIDIA GPU of compute capability 9.0
    or newer (ptxas refuses griddepcontrol below that, with a message about PTX)."""
    if not pdl:
        return
    import torch

    if getattr(torch.version, "hip", None):
        raise ValueError(f"{what}: pdl=True: programmatic dependent launch is NVIDIA's (sm_90+), not ROCm's")
    major, minor = torch.cuda.get_device_capability()
    if major < 9:
        raise ValueError(f"{what}: pdl=True needs compute capability 9.0 or newer (programmatic dependent "
                         f"launch); this GPU has {major}.{minor}")


def _direct_launcher(kernel, compiled, grid, args, meta):
    """A call that launches `compiled` (what kernel[grid](*args, **meta) returned on the
    current device) again with the same arguments, without Triton's binding, specialisation
    and cache look-up; on that device and its current stream, whichever device is current."""
    import torch

    # Every parameter's value in order, constexprs included: the binary's launcher takes
    # them so and skips the constexprs.
    signature = inspect.signature(kernel.fn)
    bound = signature.bind(*args, **{k: v for k, v in meta.items() if k in signature.parameters})
    bound.apply_defaults()
    values = tuple(bound.arguments.values())
    runner = compiled[(grid[0], 1, 1)]  # the binary's launcher takes all three dimensions
    device = torch.cuda.current_device()  # the binary is loaded there
    stream_of = driver.active.get_current_stream

    def direct():
        if torch.cuda.current_device() == device:
            return runner(*values, stream=stream_of(device))
        with torch.cuda.device(device):
            return runner(*values, stream=stream_of(device))

    return direct


class _AllReduceLaunch:
    """One all-reduce kernel launch per call: an all-reduce as a framework calls it, once per
    step. The arguments are fixed when the object is built, so only the first call goes
    through Triton's launch path (argument binding, specialisation, cache look-up: host time
    on every call it makes); later calls launch its binary directly (_direct_launcher), on the device
    the first call ran on, whichever device is current then. With `graph=True` the first call
    captures one launch in a CUDA graph (on a side stream of that device) and every call
    replays it on the current stream (the input must be put in the window and `out` reused, as
    with any captured work). Either way every rank calls it, in the same order.

    `pdl=True` (NVIDIA sm_90+) launches with programmatic dependent launch: the kernel starts
    while the one before it on the stream finishes, and takes its descriptors meanwhile
    (_prior_kernel_done); the next kernel may start once this one's waits for its peers are
    over (_next_kernel_may_start)."""

    BLOCK = 1024

    def __init__(self, kernel, args, count, nranks, programs, extern_libs, graph, num_warps, pdl=False):
        _check_pdl(pdl, type(self).__name__)
        self._kernel = kernel
        self._grid = (max(1, min(triton.cdiv(count, self.BLOCK), programs)),)
        self._args = args
        self._meta = dict(NRANKS=nranks, BLOCK=self.BLOCK, num_warps=num_warps, extern_libs=extern_libs, PDL=pdl)
        if pdl:  # a CUDA launch option only: other backends never see it
            self._meta["launch_pdl"] = True
        self._use_graph = graph
        self._graph = None
        self._direct = None

    def _launch(self):
        if self._direct is None:
            compiled = self._kernel[self._grid](*self._args, **self._meta)
            self._direct = _direct_launcher(self._kernel, compiled, self._grid, self._args, self._meta)
        else:
            self._direct()

    def __call__(self):
        if not self._use_graph:
            return self._launch()
        if self._graph is None:
            import torch

            self._launch()  # compiled and loaded outside the capture (an all-reduce like any other)
            device = torch.cuda.current_device()  # where the first call ran, and the binary is loaded
            graph = torch.cuda.CUDAGraph()
            # Captured on a side stream of that device (torch's default capture stream belongs
            # to whichever device first captured in this process), and without torch.cuda.graph's
            # device-wide synchronize: a rank sharing this process and GPU may have a kernel
            # waiting for this rank's. Kept only once the capture succeeded (an empty graph would
            # replay as an all-reduce that does nothing). Replays go to the current stream.
            with torch.cuda.device(device), torch.cuda.stream(torch.cuda.Stream(device)):
                graph.capture_begin(capture_error_mode="thread_local")
                try:
                    self._launch()
                finally:
                    graph.capture_end()
            self._graph = graph
            # The captured launch has not run: this call's all-reduce is the replay below.
        self._graph.replay()


class OneShotAllReduce(_AllReduceLaunch):
    """out = the sum over the LSA ranks of the first `count` float32 of their window
    (oneshot_allreduce), one launch per call; `graph=True`: see _AllReduceLaunch."""

    def __init__(self, dc, win, out, count, nranks, programs, extern_libs, graph=False, num_warps=4, pdl=False):
        super().__init__(oneshot_allreduce, (dc.ptr, win.handle, out, count, 1), count, nranks, programs, extern_libs,
                         graph, num_warps, pdl)


class TwoShotAllReduce(_AllReduceLaunch):
    """The same sum in two shots (twoshot_allreduce): the window holds the input at offset 0
    and a result area of `count` float32 after it (at result_offset(count)), so it must be at
    least window_bytes(count) long."""

    @staticmethod
    def result_offset(count):
        return (count * 4 + 255) // 256 * 256

    @classmethod
    def window_bytes(cls, count):
        return cls.result_offset(count) + count * 4

    def __init__(self, dc, win, out, count, nranks, programs, extern_libs, graph=False, num_warps=4, pdl=False):
        if win.size < self.window_bytes(count):
            raise ValueError(f"TwoShotAllReduce of {count} float32 needs a window of {self.window_bytes(count)} bytes "
                             f"(input, then the result area); this one has {win.size}")
        super().__init__(twoshot_allreduce, (dc.ptr, win.handle, out, count, self.result_offset(count), 1), count,
                         nranks, programs, extern_libs, graph, num_warps, pdl)
