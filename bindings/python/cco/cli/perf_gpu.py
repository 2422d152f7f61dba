"""`cco perf` on GPUs. Ranks are threads of this process, one communicator each (see
perf.py); every kernel of a measurement is captured in a CUDA graph per rank and the
graphs are replayed at once, so launch overhead is out of the figures and ranks overlap.
"""

import sys
import time

import torch
import triton

from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_NONE
from cco.cli.report import Report, size_label
from cco.cli.timing import on_threads, sweep
from cco.ir.triton import cco as cco_ir
from cco.kernels import lsa as K
from cco.memview import torch_view

# Copy kernel shapes tried once at 64 MiB: (int64 words per program step, warps,
# programs per SM). The fastest for the raw twin is then used by CCO and twin alike.
COPY_CONFIGS = [(2048, 8, 4), (4096, 8, 2), (4096, 16, 2), (1024, 4, 8), (8192, 16, 1), (2048, 4, 8)]
REDUCE_BLOCK = 1024    # float32 elements per all-reduce program


class GpuRank:
    """One rank's communicator, window, device communicator and stream."""

    def __init__(self, rank, world, uid, device, window_bytes, barriers):
        torch.cuda.set_device(device)
        torch.zeros(1, device=device)  # make this thread's context current before CCO looks
        self.rank, self.device = rank, device
        vmm = max(1 << 30, 2 * window_bytes)
        self.comm = Communicator.init(world, rank, uid, per_rank_vmm=vmm)
        self.mem = self.comm.alloc_mem(window_bytes)
        self.win = self.comm.register_window(self.mem.ptr, window_bytes)
        reqs = CCODevCommRequirements()
        reqs.gda_connection_type = GDA_CONNECTION_NONE
        reqs.lsa_barrier_count = barriers
        self.dc = self.comm.create_dev_comm(reqs)
        self.stream = torch.cuda.Stream(device=device)

    def view(self, lsa_peer, offset, count, dtype):
        return torch_view(self.comm.peer_ptr(self.win, lsa_peer, offset), (count,), dtype, device=f"cuda:{self.device}")


class RankGroup:
    """`world` ranks spread round-robin over the visible GPUs."""

    def __init__(self, world, window_bytes, barriers):
        uid = Communicator.get_unique_id()
        gpus = torch.cuda.device_count()
        self.ranks = on_threads(world, lambda r: GpuRank(r, world, uid, r % gpus, window_bytes, barriers))
        self.libs = cco_ir.get_extern_libs()

    def close(self):
        on_threads(len(self.ranks), lambda r: self.ranks[r].comm.destroy())

    def sync(self):
        for rk in self.ranks:
            torch.cuda.synchronize(rk.device)

    def run_once(self, launches):
        """launches: {rank index: fn}; runs each once on its rank's stream, concurrently."""
        for r, fn in launches.items():
            rk = self.ranks[r]
            with torch.cuda.device(rk.device), torch.cuda.stream(rk.stream):
                fn()
        self.sync()

    def time_graphs(self, launches, reps):
        """Seconds per repetition of each rank's launches, replayed at once (slowest rank)."""
        self.run_once(launches)  # compile and load outside the capture
        graphs = {}
        for r, fn in launches.items():
            rk = self.ranks[r]
            g = torch.cuda.CUDAGraph()
            with torch.cuda.device(rk.device), torch.cuda.graph(g, stream=rk.stream):
                for _ in range(reps):
                    fn()
            graphs[r] = g
        self.sync()
        return self.time_replays(graphs, reps)

    def time_replays(self, graphs, reps):
        return self.time_kernels({r: g.replay for r, g in graphs.items()}, reps)

    def time_kernels(self, launches, units):
        """Seconds per unit of each rank's work (one call of its fn: a kernel that loops
        internally, or a graph replay), all ranks at once; the slowest rank counts."""
        events = {}
        for r, fn in launches.items():
            rk = self.ranks[r]
            with torch.cuda.device(rk.device), torch.cuda.stream(rk.stream):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record(rk.stream)
                fn()
                end.record(rk.stream)
                events[r] = (start, end)
        self.sync()
        return max(s.elapsed_time(e) for s, e in events.values()) / 1e3 / units


def progress(*what):
    """One line per step on stderr, so a slow or stuck step is visible while it runs."""
    print(f"[cco perf {time.strftime('%H:%M:%S')}]", *what, file=sys.stderr, flush=True)


def _reps(size):
    return max(5, min(200, int(4e9 // max(size, 1)) // 50))


def _sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


def _transfer_suite(report, opts, group, direction):
    """put: this rank's [0, S) -> peer's [S, 2S); get: peer's [0, S) -> this rank's [S, 2S)."""
    a, b = group.ranks[0], group.ranks[1]
    span = opts.max_bytes
    kernel = K.lsa_put if direction == "put" else K.lsa_get
    rows = report.suite(
        f"LSA {direction} bandwidth, {len(group.ranks)} ranks on {torch.cuda.device_count()} GPU(s)",
        ["size", "cco GB/s", "raw twin GB/s", "memcpy GB/s", "cco/memcpy %", "cco/raw %", "both GB/s/rank",
         "both aggregate"],
        note="one rank transfers, then both at once; memcpy = cudaMemcpyAsync device-to-device of the same bytes; "
             "copy shape (words/step, warps, programs/SM) chosen at 64 MiB on the raw twin")
    for rk in (a, b):  # a recognisable source in every rank's [0, S)
        rk.view(rk.rank, 0, span // 8, torch.int64).copy_(
            torch.arange(span // 8, device=f"cuda:{rk.device}", dtype=torch.int64) * 10 + rk.rank)
    group.sync()

    config = [COPY_CONFIGS[0]]

    def grid_of(rk, words):
        block, _, per_sm = config[0]
        return (min(triton.cdiv(words, block), _sm_count(rk.device) * per_sm),)

    def launch(rk, peer, size):
        words, (block, warps, _) = size // 8, config[0]
        grid = grid_of(rk, words)
        return lambda: kernel[grid](rk.win.handle, peer, 0, span, words, BLOCK=block, num_warps=warps,
                                    extern_libs=group.libs)

    def raw(rk, peer, size):
        words, (block, warps, _) = size // 8, config[0]
        grid = grid_of(rk, words)
        src_rank, dst_rank = (rk.rank, peer) if direction == "put" else (peer, rk.rank)
        src = rk.comm.peer_ptr(rk.win, src_rank, 0)
        dst = rk.comm.peer_ptr(rk.win, dst_rank, span)
        return lambda: K.raw_copy[grid](src, dst, words, BLOCK=block, num_warps=warps)

    tune_size = min(span, 64 << 20)
    best = None
    for candidate in COPY_CONFIGS:
        config[0] = candidate
        t = group.time_graphs({0: raw(a, 1, tune_size)}, 10)
        progress(direction, "copy shape", candidate, f"{tune_size / t / 1e9:.0f} GB/s")
        if best is None or t < best[0]:
            best = (t, candidate)
    config[0] = best[1]

    def memcpy(rk, peer, size):
        src_rank, dst_rank = (rk.rank, peer) if direction == "put" else (peer, rk.rank)
        src, dst = rk.view(src_rank, 0, size // 8, torch.int64), rk.view(dst_rank, span, size // 8, torch.int64)
        return lambda: dst.copy_(src)

    for size in sweep(max(opts.min_bytes, 4096), span):
        progress(direction, size_label(size))
        reps = _reps(size)
        t_cco = group.time_graphs({0: launch(a, 1, size)}, reps)
        t_raw = group.time_graphs({0: raw(a, 1, size)}, reps)
        t_copy = group.time_graphs({0: memcpy(a, 1, size)}, reps)
        t_both = group.time_graphs({0: launch(a, 1, size), 1: launch(b, 0, size)}, reps)
        gb = size / 1e9
        rows.append([size_label(size), gb / t_cco, gb / t_raw, gb / t_copy, 100 * t_copy / t_cco, 100 * t_raw / t_cco,
                     gb / t_both, 2 * gb / t_both])
    # The data arrived: after the last (both) transfer, every rank's [S, 2S) holds its
    # peer's pattern (the peer put it there, or this rank got it from the peer).
    for rk, peer in ((a, 1), (b, 0)):
        got = rk.view(rk.rank, span, span // 8, torch.int64)
        want = torch.arange(span // 8, device=f"cuda:{rk.device}", dtype=torch.int64) * 10 + peer
        if not torch.equal(got, want):
            raise RuntimeError(f"cco perf: {direction} data check failed on rank {rk.rank}")


def _barrier_suite(report, opts, group):
    rows = report.suite(f"LSA barrier latency, {len(group.ranks)} ranks",
                        ["coop", "warps", "us/round", "pingpong us/rt", "barrier/pingpong"],
                        note="pingpong: two kernels bouncing a flag, no CCO (one round trip per round); "
                             "coop=thread needs one thread per call, which Triton programs are not")
    rounds = opts.barrier_rounds
    status = [torch.zeros(1, dtype=torch.int32, device=f"cuda:{rk.device}") for rk in group.ranks]

    # The anchor: a flag ping-pong between ranks 0 and 1 through their windows.
    a, b = group.ranks[0], group.ranks[1]
    flags = {rk.rank: rk.view(rk.rank, 0, 2, torch.int32) for rk in (a, b)}
    for f in flags.values():
        f.zero_()
    group.sync()

    measured = []
    for coop, warps in (("block", 4), ("warp", 1)):
        const = getattr(cco_ir.CoopScope, coop.upper())
        progress(f"barrier: coop={coop}")

        def loop(rk, count, const=const, warps=warps):
            return lambda: K.barrier_loop[(1,)](rk.dc.ptr, count, status[rk.rank], COOP=const, num_warps=warps,
                                                extern_libs=group.libs)

        group.run_once({r: loop(rk, 100) for r, rk in enumerate(group.ranks)})  # compile, warm up
        t = group.time_kernels({r: loop(rk, rounds) for r, rk in enumerate(group.ranks)}, rounds)
        bad = [int(s.item()) for s in status if int(s.item()) != 0]
        if bad:
            raise RuntimeError(f"cco perf: barrier returned statuses {bad}")
        measured.append((coop, warps, t))
    failed = [torch.zeros(1, dtype=torch.int32, device=f"cuda:{rk.device}") for rk in (a, b)]

    def pingpong(rk, peer, first, count):
        mine = rk.comm.peer_ptr(rk.win, rk.rank, 0)
        theirs = rk.comm.peer_ptr(rk.win, peer, 0)
        mine_t = torch_view(mine, (1,), torch.int32, device=f"cuda:{rk.device}")
        theirs_t = torch_view(theirs, (1,), torch.int32, device=f"cuda:{rk.device}")
        return lambda: K.flag_pingpong[(1,)](mine_t, theirs_t, count, failed[rk.rank], FIRST=first, num_warps=1)

    progress("barrier: flag ping-pong anchor")
    # Each side is its own binary: load both before either spins (a load can wait for a
    # running kernel of the context).
    group.run_once({0: pingpong(a, 1, True, 0)})
    group.run_once({1: pingpong(b, 0, False, 0)})
    group.run_once({0: pingpong(a, 1, True, 10), 1: pingpong(b, 0, False, 10)})
    for f in flags.values():
        f.zero_()
    group.sync()
    t_pp = group.time_kernels({0: pingpong(a, 1, True, rounds), 1: pingpong(b, 0, False, rounds)}, rounds)
    if any(int(f.item()) for f in failed):
        t_pp = float("nan")  # the anchor lost its peer: report the barrier alone

    for coop, warps, t in measured:
        rows.append([coop, warps, t * 1e6, t_pp * 1e6, t / t_pp])
    rows.append(["thread", 1, "n/a", t_pp * 1e6, "n/a"])


def _allreduce_suite(report, opts):
    n = opts.allreduce_ranks
    top = opts.allreduce_max_bytes
    limit = K.max_programs(triton.cdiv(n, torch.cuda.device_count()))
    group = RankGroup(n, top, barriers=limit)
    try:
        rows = report.suite(f"one-shot all-reduce (float32 sum), {n} ranks on {torch.cuda.device_count()} GPU(s)",
                            ["size", "cco us", "algbw GB/s", "busbw GB/s", "torch reduce us", "cco/torch"],
                            note="torch reduce: torch.sum over the ranks' buffers stacked on one device, no "
                                 "communication (the local floor)")
        iters = 50 if opts.quick else 200
        for size in sweep(8192, top):
            progress("allreduce", size_label(size))
            count = size // 4
            grid = (min(triton.cdiv(count, REDUCE_BLOCK), limit),)
            outs = []
            for rk in group.ranks:
                x = rk.view(rk.rank, 0, count, torch.float32)
                x.copy_(torch.arange(count, device=x.device, dtype=torch.float32) % 251 + rk.rank)
                outs.append(torch.empty(count, device=x.device, dtype=torch.float32))
            group.sync()

            def launch(r, its):
                rk = group.ranks[r]
                return lambda: K.oneshot_allreduce[grid](rk.dc.ptr, rk.win.handle, outs[r], count, its, NRANKS=n,
                                                         BLOCK=REDUCE_BLOCK, num_warps=4, extern_libs=group.libs)

            group.run_once({r: launch(r, 2) for r in range(n)})
            t = group.time_kernels({r: launch(r, iters) for r in range(n)}, iters)
            want = (torch.arange(count, device=outs[0].device, dtype=torch.float32) % 251) * n + sum(range(n))
            for r, out in enumerate(outs):
                if not torch.equal(out.to(want.device), want):
                    raise RuntimeError(f"cco perf: all-reduce result wrong on rank {r} at {size_label(size)}")
            stacked = torch.stack([o.to(outs[0].device) for o in outs])
            result = torch.empty_like(outs[0])
            t_torch = group.time_graphs({0: lambda: torch.sum(stacked, 0, out=result)}, iters)
            alg = size / t / 1e9
            rows.append([size_label(size), t * 1e6, alg, alg * 2 * (n - 1) / n, t_torch * 1e6, t / t_torch])
    finally:
        group.close()


def run(opts):
    props = torch.cuda.get_device_properties(0)
    report = Report(f"cco perf: {torch.cuda.device_count()} x {props.name}, triton {triton.__version__}, "
                    f"torch {torch.__version__}")
    if opts.quick:
        opts.max_bytes = min(opts.max_bytes, 16 << 20)
        opts.barrier_rounds = min(opts.barrier_rounds, 2000)
    world = max(2, opts.ranks or torch.cuda.device_count())
    suites = opts.suite_list
    if any(s in suites for s in ("put", "get", "barrier")):
        group = RankGroup(world, 2 * opts.max_bytes, barriers=1)
        try:
            for direction in ("put", "get"):
                if direction in suites:
                    _transfer_suite(report, opts, group, direction)
            if "barrier" in suites:
                _barrier_suite(report, opts, group)
        finally:
            group.close()
    if "allreduce" in suites:
        _allreduce_suite(report, opts)
    return report
