"""`cco perf` on GPUs. Ranks are threads of this process or launched processes (see
cli/ranks.py); every kernel of a measurement is captured in a CUDA graph per rank and the
graphs are replayed at once, so launch overhead is out of the figures and ranks overlap.
Each suite builds work only for the ranks held here (`group.on`) and makes the same group
calls on every process, so launched processes stay in step.
"""

import os
import sys
import time

import torch
import triton

from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_FULL, GDA_CONNECTION_NONE
from cco.cli import perf_gda, perf_launch, perf_pair, perf_sdma
from cco.cli.meta import run_meta
from cco.cli.ranks import SCRATCH_BYTES, Ranks
from cco.cli.report import Report, size_label
from cco.cli.timing import sweep
from cco.ir.triton import cco as cco_ir
from cco.kernels import lsa as K
from cco.memview import torch_view

# Copy kernel shapes tried once at 64 MiB: (int64 words per program step, warps,
# programs per SM). The fastest for the raw twin is then used by CCO and twin alike.
# Copy shapes (int64 words a program moves per half step, warps, programs per SM): the large
# ones for bandwidth, the small ones spread a transfer of a few KiB over more multiprocessors.
COPY_CONFIGS = [(2048, 8, 4), (4096, 8, 2), (4096, 16, 2), (1024, 4, 8), (8192, 16, 1), (2048, 4, 8), (512, 2, 8),
                (256, 1, 16)]
REDUCE_BLOCK = 1024    # float32 elements per all-reduce program


class GpuRank:
    """One rank's communicator, window (payload, then the scratch slot), device
    communicator (with GDA connections to every rank when `gda`, SDMA queues when `sdma`)
    and stream. With `gda`, also `dc_proxy`: the same GDA with the direct path off, every
    operation through the proxy (what the direct path is measured against), and `dc_wide`:
    the direct path up to perf_pair.DIRECT_MAX bytes."""

    def __init__(self, rank, world, uid, device, window_bytes, barriers, gda=False, sdma=False):
        torch.cuda.set_device(device)
        torch.zeros(1, device=device)  # make this thread's context current before CCO looks
        self.rank, self.device = rank, device
        self.scratch = window_bytes
        vmm = max(1 << 30, 2 * (window_bytes + SCRATCH_BYTES))
        self.comm = Communicator.init(world, rank, uid, per_rank_vmm=vmm)
        self.mem = self.comm.alloc_mem(window_bytes + SCRATCH_BYTES)
        self.win = self.comm.register_window(self.mem.ptr, window_bytes + SCRATCH_BYTES)
        reqs = CCODevCommRequirements()
        reqs.gda_connection_type = GDA_CONNECTION_FULL if gda else GDA_CONNECTION_NONE
        if sdma:
            os.environ["CCO_ENABLE_SDMA"] = "1"  # every rank of the job asks for the same
            reqs.sdma_queue_count = 2
        reqs.lsa_barrier_count = barriers
        self.dc = self.comm.create_dev_comm(reqs)
        self.dc_proxy = self.dc_wide = None
        if gda:
            reqs.gda_direct_max_bytes = 0
            self.dc_proxy = self.comm.create_dev_comm(reqs)
            reqs.gda_direct_max_bytes = perf_pair.DIRECT_MAX
            self.dc_wide = self.comm.create_dev_comm(reqs)
        self.stream = torch.cuda.Stream(device=device)

    def view(self, lsa_peer, offset, count, dtype):
        return torch_view(self.comm.peer_ptr(self.win, lsa_peer, offset), (count,), dtype, device=f"cuda:{self.device}")

    def write_f64(self, value):
        self.view(self.rank, self.scratch, 1, torch.float64).fill_(value)
        torch.cuda.synchronize(self.device)

    def read_f64(self, peer):
        return float(self.view(peer, self.scratch, 1, torch.float64).item())


class RankGroup(Ranks):
    """`world` ranks: threads spread round-robin over the visible GPUs, or, with
    `joined` = (rank, uid), this process's one rank of a launched job on its GPU."""

    def __init__(self, world, window_bytes, barriers, joined=None, gda=False, sdma=False):
        gpus = torch.cuda.device_count()

        def make(r, uid):
            device = r % gpus if joined is None else torch.cuda.current_device()
            return GpuRank(r, world, uid, device, window_bytes, barriers, gda, sdma)

        super().__init__(world, make, joined)
        self.libs = cco_ir.get_extern_libs()

    def sync(self):
        for rk in self.local.values():
            torch.cuda.synchronize(rk.device)

    def settle(self):
        """Every rank's queued work is done and visible to the others."""
        self.sync()
        self.align()

    def run_once(self, launches):
        """launches: {rank: fn} (ranks held here); runs each once on its rank's stream,
        concurrently, and waits for every rank."""
        for r, fn in launches.items():
            rk = self.local[r]
            with torch.cuda.device(rk.device), torch.cuda.stream(rk.stream):
                fn()
        self.settle()

    def time_graphs(self, launches, reps):
        """Seconds per repetition of each rank's launches, replayed at once (slowest rank)."""
        self.run_once(launches)  # compile and load outside the capture
        graphs = {}
        for r, fn in launches.items():
            rk = self.local[r]
            g = torch.cuda.CUDAGraph()
            with torch.cuda.device(rk.device), torch.cuda.graph(g, stream=rk.stream):
                for _ in range(reps):
                    fn()
            graphs[r] = g
        self.sync()
        # A graph's first replay uploads it (1-2 us a node more than the later ones): not timed.
        self.run_once({r: g.replay for r, g in graphs.items()})
        return self.time_kernels({r: g.replay for r, g in graphs.items()}, reps)

    def time_kernels(self, launches, units):
        """Seconds per unit of each rank's work (one call of its fn: a kernel that loops
        internally, or a graph replay), all ranks at once; the slowest rank counts."""
        self.align()
        events = {}
        for r, fn in launches.items():
            rk = self.local[r]
            with torch.cuda.device(rk.device), torch.cuda.stream(rk.stream):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record(rk.stream)
                fn()
                end.record(rk.stream)
                events[r] = (start, end)
        self.sync()
        mine = max((s.elapsed_time(e) for s, e in events.values()), default=0.0)
        return self.slowest(mine) / 1e3 / units


_quiet = [False]   # a process that holds no rank 0 keeps its progress to itself


def progress(*what):
    """One line per step on stderr, so a slow or stuck step is visible while it runs
    (from rank 0's process only, when ranks are processes)."""
    if not _quiet[0]:
        print(f"[cco perf {time.strftime('%H:%M:%S')}]", *what, file=sys.stderr, flush=True)


def _reps(size):
    return max(5, min(200, int(4e9 // max(size, 1)) // 50))


def _sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


def _transfer_suite(report, opts, group, direction):
    """put: rank 0's [0, S) -> rank 1's [S, 2S); get: rank 1's [0, S) -> rank 0's [S, 2S);
    then ranks 0 and 1 both at once, each with the other."""
    span = opts.max_bytes
    kernel = K.lsa_put if direction == "put" else K.lsa_get
    rows = report.suite(
        f"LSA {direction} bandwidth, {group.world} ranks on {torch.cuda.device_count()} GPU(s)",
        ["size", "shape", "cco GB/s", "cco pdl GB/s", "raw twin GB/s", "memcpy GB/s", "cco/memcpy %",
         "cco pdl/memcpy %", "cco/raw %", "both GB/s/rank", "both aggregate"],
        note="one rank transfers, then both at once; memcpy = cudaMemcpyAsync device-to-device of the same bytes; "
             "cco pdl: launched with programmatic dependent launch (each put starts while the one before it "
             "ends); shape: the copy shape (words per half step, warps, programs per SM) that was fastest for the "
             "raw twin at that size, used by every kernel of the row")
    pair = (0, 1)
    peer_of = {0: 1, 1: 0}

    def pattern(rk, owner):
        return torch.arange(span // 8, device=f"cuda:{rk.device}", dtype=torch.int64) * 10 + owner

    for rk in group.held(pair):  # a recognisable source in [0, S)
        rk.view(rk.rank, 0, span // 8, torch.int64).copy_(pattern(rk, rk.rank))
    group.settle()

    config = [COPY_CONFIGS[0]]

    def grid_of(rk, words):
        block, _, per_sm = config[0]  # a program moves 2 * block words a step: no more programs than that fills
        return (min(triton.cdiv(words, 2 * block), _sm_count(rk.device) * per_sm),)

    def launch(size, pdl=False):
        def make(rk):
            words, (block, warps, _) = size // 8, config[0]
            grid = grid_of(rk, words)
            return lambda: kernel[grid](rk.win.handle, peer_of[rk.rank], 0, span, words, BLOCK=block, PDL=pdl,
                                        launch_pdl=pdl, num_warps=warps, extern_libs=group.libs)
        return make

    def ends(rk):
        """(source, destination) pointers of rank rk's transfer with its peer."""
        src_rank, dst_rank = (rk.rank, peer_of[rk.rank]) if direction == "put" else (peer_of[rk.rank], rk.rank)
        return rk.comm.peer_ptr(rk.win, src_rank, 0), rk.comm.peer_ptr(rk.win, dst_rank, span), src_rank, dst_rank

    def raw(size):
        def make(rk):
            words, (block, warps, _) = size // 8, config[0]
            grid = grid_of(rk, words)
            src, dst, _, _ = ends(rk)
            return lambda: K.raw_copy[grid](src, dst, words, BLOCK=block, num_warps=warps)
        return make

    def memcpy(size):
        def make(rk):
            _, _, src_rank, dst_rank = ends(rk)
            src, dst = rk.view(src_rank, 0, size // 8, torch.int64), rk.view(dst_rank, span, size // 8, torch.int64)
            return lambda: dst.copy_(src)
        return make

    for size in sweep(min(max(opts.min_bytes, 4096), span), span):
        progress(direction, size_label(size))
        reps = _reps(size)
        best = None
        for candidate in COPY_CONFIGS:
            config[0] = candidate
            t = group.time_graphs(group.on([0], raw(size)), min(reps, 20))
            if best is None or t < best[0]:
                best = (t, candidate)
        config[0] = best[1]  # the same on every rank: `t` is the slowest rank's
        # Every CCO kernel of the row is checked: each lands in a cleared destination.
        src_rank, dst_rank = (0, 1) if direction == "put" else (1, 0)

        def timed_and_checked(name, pdl):
            for rk in group.held([dst_rank]):
                rk.view(dst_rank, span, size // 8, torch.int64).zero_()
            group.settle()
            t = group.time_graphs(group.on([0], launch(size, pdl=pdl)), reps)
            for rk in group.held([dst_rank]):
                if not torch.equal(rk.view(dst_rank, span, size // 8, torch.int64), pattern(rk, src_rank)[:size // 8]):
                    raise RuntimeError(f"cco perf: {direction}{name}, {size_label(size)}: data check failed")
            return t

        t_cco = timed_and_checked("", pdl=False)
        t_pdl = timed_and_checked(" with PDL", pdl=True)
        t_raw = group.time_graphs(group.on([0], raw(size)), reps)
        t_copy = group.time_graphs(group.on([0], memcpy(size)), reps)
        t_both = group.time_graphs(group.on(pair, launch(size)), reps)
        gb = size / 1e9
        rows.append([size_label(size), "/".join(map(str, config[0])), gb / t_cco, gb / t_pdl, gb / t_raw, gb / t_copy,
                     100 * t_copy / t_cco, 100 * t_copy / t_pdl, 100 * t_raw / t_cco, gb / t_both, 2 * gb / t_both])
    # The data arrived: after the last (both) transfer, ranks 0 and 1 each hold the
    # other's pattern in [S, 2S) (the peer put it there, or this rank got it).
    for rk in group.held(pair):
        if not torch.equal(rk.view(rk.rank, span, span // 8, torch.int64), pattern(rk, peer_of[rk.rank])):
            raise RuntimeError(f"cco perf: {direction} data check failed on rank {rk.rank}")
    group.align()


def _barrier_suite(report, opts, group):
    rows = report.suite(f"LSA barrier latency, {group.world} ranks",
                        ["coop", "warps", "order", "us/round", "pingpong us/rt", "barrier/pingpong"],
                        note="pingpong: two kernels bouncing a flag, no CCO (one round trip per round); "
                             "order: the sync's memory order (acq_rel, the default, releases the coop's writes "
                             "and acquires the peers'; a release waits for every earlier store to be "
                             "acknowledged, the last round's included); coop=thread needs one thread per call, "
                             "which Triton programs are not")
    rounds = opts.barrier_rounds
    status = {r: torch.zeros(1, dtype=torch.int32, device=f"cuda:{rk.device}") for r, rk in group.local.items()}
    everyone = range(group.world)

    measured = []
    for coop, warps, order in (("block", 4, "acq_rel"), ("block", 4, "acquire"), ("block", 4, "relaxed"),
                               ("warp", 1, "acq_rel")):
        const = getattr(cco_ir.CoopScope, coop.upper())
        ordered = -1 if order == "acq_rel" else getattr(cco_ir.MemoryOrder, order.upper())  # acq_rel: the default form
        progress(f"barrier: coop={coop} order={order}")

        def loop(count, const=const, warps=warps, ordered=ordered):
            return lambda rk: lambda: K.barrier_loop[(1,)](rk.dc.ptr, count, status[rk.rank], COOP=const,
                                                           ORDER=ordered, num_warps=warps, extern_libs=group.libs)

        group.run_once(group.on(everyone, loop(100)))  # compile, warm up
        t = group.time_kernels(group.on(everyone, loop(rounds)), rounds)
        bad = {r: int(s.item()) for r, s in status.items() if int(s.item()) != 0}
        if bad:
            raise RuntimeError(f"cco perf: barrier returned statuses {bad}")
        measured.append((coop, warps, order, t))

    # The anchor: a flag ping-pong between ranks 0 and 1 through their windows.
    pair = (0, 1)
    failed = group.on(pair, lambda rk: torch.zeros(1, dtype=torch.int32, device=f"cuda:{rk.device}"))
    for rk in group.held(pair):
        rk.view(rk.rank, 0, 2, torch.int32).zero_()
    group.settle()

    def pingpong(count):
        def make(rk):
            peer = 1 - rk.rank
            mine = rk.view(rk.rank, 0, 1, torch.int32)
            theirs = rk.view(peer, 0, 1, torch.int32)
            return lambda: K.flag_pingpong[(1,)](mine, theirs, count, failed[rk.rank], FIRST=rk.rank == 0,
                                                 num_warps=1)
        return make

    progress("barrier: flag ping-pong anchor")
    # Each side is its own binary: load both before either spins (a load can wait for a
    # running kernel of the context).
    group.run_once(group.on([0], pingpong(0)))
    group.run_once(group.on([1], pingpong(0)))
    group.run_once(group.on(pair, pingpong(10)))
    for rk in group.held(pair):
        rk.view(rk.rank, 0, 2, torch.int32).zero_()
    group.settle()
    t_pp = group.time_kernels(group.on(pair, pingpong(rounds)), rounds)
    if group.slowest(max((int(f.item()) for f in failed.values()), default=0)):
        t_pp = float("nan")  # the anchor lost its peer: report the barrier alone

    for coop, warps, order, t in measured:
        rows.append([coop, warps, order, t * 1e6, t_pp * 1e6, t / t_pp])
    rows.append(["thread", 1, "acq_rel", "n/a", t_pp * 1e6, "n/a"])


def _allreduce_suite(report, opts, group):
    n = group.world
    top = opts.allreduce_max_bytes
    limit = perf_launch.programs_per_rank(n)
    rows = report.suite(f"one-shot all-reduce kernel loop (float32 sum), {n} ranks on {torch.cuda.device_count()} GPU(s)",
                        ["size", "cco us", "algbw GB/s", "busbw GB/s", "torch reduce us", "cco/torch"],
                        note="a micro-benchmark, not per launch: one kernel runs the all-reduce `iters` times "
                             "(per launch against NCCL and SymmetricMemory: the launch suite); torch reduce: "
                             "torch.sum over as many buffers as ranks, stacked on rank 0's device, no "
                             "communication (the local floor)")
    iters = 50 if opts.quick else 200
    everyone = range(n)
    for size in sweep(8192, top):
        progress("allreduce", size_label(size))
        count = size // 4
        grid = (min(triton.cdiv(count, REDUCE_BLOCK), limit),)

        def expected(device, rank=None):
            base = torch.arange(count, device=device, dtype=torch.float32) % 251
            return base + rank if rank is not None else base * n + sum(range(n))

        outs = {}
        for r, rk in group.local.items():
            rk.view(r, 0, count, torch.float32).copy_(expected(f"cuda:{rk.device}", r))
            outs[r] = torch.empty(count, device=f"cuda:{rk.device}", dtype=torch.float32)
        group.settle()

        def launch(its):
            return lambda rk: lambda: K.oneshot_allreduce[grid](rk.dc.ptr, rk.win.handle, outs[rk.rank], count, its,
                                                                NRANKS=n, BLOCK=REDUCE_BLOCK, num_warps=4,
                                                                extern_libs=group.libs)

        group.run_once(group.on(everyone, launch(2)))
        t = group.time_kernels(group.on(everyone, launch(iters)), iters)
        for r, out in outs.items():
            if not torch.equal(out, expected(out.device)):
                raise RuntimeError(f"cco perf: all-reduce result wrong on rank {r} at {size_label(size)}")

        def local_reduce(rk):
            stacked = torch.stack([outs[rk.rank]] * n)
            result = torch.empty_like(outs[rk.rank])
            return lambda: torch.sum(stacked, 0, out=result)

        t_torch = group.time_graphs(group.on([0], local_reduce), iters)
        alg = size / t / 1e9
        rows.append([size_label(size), t * 1e6, alg, alg * 2 * (n - 1) / n, t_torch * 1e6, t / t_torch])


def run(opts, joined=None, world=None, live=None):
    """The GPU suites; joined = (rank, uid) when this process is one rank of `world`."""
    props = torch.cuda.get_device_properties(0)
    how = "launched processes" if joined else "threads"
    world = world or max(2, opts.ranks or torch.cuda.device_count())
    report = Report(f"cco perf: {torch.cuda.device_count()} x {props.name}, triton {triton.__version__}, "
                    f"torch {torch.__version__}, ranks as {how}",
                    run_meta("gpu", world, how, device=torch.cuda.current_device()), live=live)
    if opts.quick:
        opts.max_bytes = min(opts.max_bytes, 16 << 20)
        opts.barrier_rounds = min(opts.barrier_rounds, 2000)
    suites = opts.suite_list
    # Launched processes are one job of `world` ranks: one group serves every suite. On
    # threads the all-reduce has its own rank count (--allreduce-ranks).
    shared = joined is not None or opts.allreduce_ranks == world
    window = 2 * opts.max_bytes
    barriers = 1
    per_launch = joined is not None and "launch" in suites  # one process per rank only
    if (shared and "allreduce" in suites) or per_launch:
        window, barriers = max(window, opts.allreduce_max_bytes), perf_launch.programs_per_rank(world)
    if per_launch:  # the two-shot's result area, and the push kernel's buffers, follow the input
        count = opts.allreduce_max_bytes // 4
        window = max(window, perf_launch.push_offsets(count, world, perf_launch.programs_per_rank(world))[1])
    _quiet[0] = joined is not None and joined[0] != 0
    if any(s in suites for s in ("put", "get", "barrier", "gda", "sdma")) or (shared and "allreduce" in suites) \
            or per_launch:
        with RankGroup(world, window, barriers, joined, gda="gda" in suites, sdma="sdma" in suites) as group:
            for direction in ("put", "get"):
                if direction in suites:
                    _transfer_suite(report, opts, group, direction)
            if "barrier" in suites:
                _barrier_suite(report, opts, group)
            if "gda" in suites:
                perf_gda.run_suite(report, opts, group, progress)
            if "sdma" in suites:
                perf_sdma.run_suite(report, opts, group, progress)
            if shared and "allreduce" in suites:
                _allreduce_suite(report, opts, group)
            if per_launch:
                perf_launch.run_suite(report, opts, group, progress)
    if "launch" in suites and not per_launch:
        progress("launch: skipped (one process per rank only: --launch processes, torchrun or cco.launch)")
    if not shared and "allreduce" in suites:
        n = opts.allreduce_ranks
        with RankGroup(n, opts.allreduce_max_bytes, perf_launch.programs_per_rank(n)) as group:
            _allreduce_suite(report, opts, group)
    return report
