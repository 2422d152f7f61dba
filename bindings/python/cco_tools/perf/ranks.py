# SPDX-License-Identifier: MIT
"""Where `cco perf`'s ranks run, and how they agree on a figure.

  threads    every rank is a thread of this process with its own communicator. Ranks that
             share a GPU run their kernels at once on separate streams, which processes on
             one GPU cannot do without MPS.
  processes  this process is one rank of a launched job: `cco perf` itself (one process
             per GPU), `cco launch`, torchrun or mpirun. Every process runs the same suites
             and makes the same calls on its group in the same order.

A suite sees one interface either way (Ranks): `local` maps the ranks held here to their
objects, `on(ranks, make)` builds work for those of them held here, `align()` lines every rank
up (a host barrier between processes) and `slowest(x)` gives every rank the largest x that any
rank measured, so all processes build the same report and rank 0 prints it.

Each rank object has `comm`, `win` and `scratch` (an offset past the window's payload) and
reads / writes one float64 there with `write_f64(value)` / `read_f64(peer)`: CpuRank on the cpu
platform (host memory), GpuRank on a GPU. RankGroup is the GPU group, which also times
kernels and CUDA graphs. torch is imported by the GPU classes only: the cpu platform runs
without it.
"""

import ctypes
import os
import threading

from cco import Communicator
from cco_tools.perf.measure import Timing

SCRATCH_BYTES = 4096   # per rank, after the payload: one float64 for `slowest`
DIRECT_MAX = 1 << 20   # the largest gdaDirectMaxBytes a device communicator takes


def on_threads(n, body):
    """body(i) for i in range(n) on n threads at once (ranks rendezvous with each other,
    so they cannot be created one after the other); re-raises the first failure."""
    results, errors = [None] * n, []

    def run(i):
        try:
            results[i] = body(i)
        except BaseException as e:  # re-raised below, after every thread ended
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


class Ranks:
    def __init__(self, world, make, joined=None):
        """make(rank, uid) builds one rank; joined = (rank, uid) of this process in a
        launched job of `world` processes, or None to hold every rank on threads here."""
        self.world = world
        self.spread = joined is not None
        if joined is None:
            uid = Communicator.get_unique_id()
            self.local = dict(enumerate(on_threads(world, lambda r: make(r, uid))))
        else:
            rank, uid = joined
            if world < 2:
                raise RuntimeError(f"cco perf: the launcher started {world} rank; the suites need 2 or more")
            self.local = {rank: make(rank, uid)}
        for rk in self.local.values():
            if rk.comm.lsa_size != world:
                raise RuntimeError(f"cco perf: rank {rk.comm.rank} reaches {rk.comm.lsa_size} of {world} ranks "
                                   "by load/store; the suites need every rank on one host")

    @property
    def ranks(self):
        """The ranks held here, in rank order."""
        return [self.local[r] for r in sorted(self.local)]

    def held(self, ranks):
        """The rank objects of `ranks` that are held here."""
        return [self.local[r] for r in ranks if r in self.local]

    def on(self, ranks, make):
        """{r: make(rank object)} for each r in `ranks` held here."""
        return {r: make(self.local[r]) for r in ranks if r in self.local}

    def each(self, body):
        """body(rank object) for every rank held here, at once (the calls may be collective)."""
        order = sorted(self.local)
        if len(order) == 1:
            return {order[0]: body(self.local[order[0]])}
        return dict(zip(order, on_threads(len(order), lambda i: body(self.local[order[i]]))))

    def align(self):
        """Every rank reaches this point before any goes on (threads share one timeline)."""
        if self.spread:
            self._one().comm.barrier()

    def slowest(self, value):
        """The largest `value` over all ranks, the same on every rank; of a Timing, trial by
        trial (each trial's slowest rank)."""
        if not self.spread:
            return value
        if isinstance(value, Timing):
            return Timing([self.slowest(t) for t in value.trials])
        rk = self._one()
        rk.write_f64(float(value))
        rk.comm.barrier()
        result = max(rk.read_f64(peer) for peer in range(self.world))
        rk.comm.barrier()  # nobody writes the next value before everyone has read this one
        return result

    def close(self):
        self.each(lambda rk: rk.comm.destroy())

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and self.spread:
            # The other processes are not at the same teardown calls: abort, so this
            # rank's teardown is local, and its exit ends their next host barrier at once.
            for rk in self.local.values():
                rk.comm.abort()
        self.close()
        return False

    def _one(self):
        (rk,) = self.local.values()
        return rk


class CpuRank:
    """One rank on the cpu platform: its communicator and a window of 2 x `span` bytes plus
    the scratch slot."""

    def __init__(self, rank, world, uid, span):
        self.rank = rank
        self.scratch = 2 * span
        self.comm = Communicator.init(world, rank, uid, per_rank_vmm=4 * span + (64 << 20))
        self.win = self.comm.register_window(self.comm.alloc_mem(self.scratch + SCRATCH_BYTES).ptr,
                                             self.scratch + SCRATCH_BYTES)

    def ptr(self, peer, offset):
        return self.comm.peer_ptr(self.win, peer, offset)

    def write_f64(self, value):
        ctypes.c_double.from_address(self.ptr(self.rank, self.scratch)).value = value

    def read_f64(self, peer):
        return ctypes.c_double.from_address(self.ptr(peer, self.scratch)).value


class GpuRank:
    """One rank's communicator, window (payload, then the scratch slot), device
    communicator (with GDA connections to every rank when `gda`, SDMA queues when `sdma`)
    and stream. With `gda`, also `dc_proxy`: the same GDA with the direct path off, every
    operation through the proxy (what the direct path is measured against), and `dc_wide`:
    the direct path up to DIRECT_MAX bytes."""

    def __init__(self, rank, world, uid, device, window_bytes, barriers, gda=False, sdma=False):
        import torch

        from cco import CCODevCommRequirements, GDA_CONNECTION_FULL, GDA_CONNECTION_NONE

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
            reqs.gda_direct_max_bytes = DIRECT_MAX
            self.dc_wide = self.comm.create_dev_comm(reqs)
        self.stream = torch.cuda.Stream(device=device)

    def view(self, lsa_peer, offset, count, dtype):
        from cco.memview import torch_view

        return torch_view(self.comm.peer_ptr(self.win, lsa_peer, offset), (count,), dtype, device=f"cuda:{self.device}")

    def write_f64(self, value):
        import torch

        self.view(self.rank, self.scratch, 1, torch.float64).fill_(value)
        torch.cuda.synchronize(self.device)

    def read_f64(self, peer):
        import torch

        return float(self.view(peer, self.scratch, 1, torch.float64).item())


class RankGroup(Ranks):
    """`world` ranks on GPUs: threads spread round-robin over the visible GPUs, or, with
    `joined` = (rank, uid), this process's one rank of a launched job on its GPU."""

    def __init__(self, world, window_bytes, barriers, joined=None, gda=False, sdma=False):
        import torch

        from cco.ir.triton import cco as cco_ir

        gpus = torch.cuda.device_count()

        def make(r, uid):
            device = r % gpus if joined is None else torch.cuda.current_device()
            return GpuRank(r, world, uid, device, window_bytes, barriers, gda, sdma)

        super().__init__(world, make, joined)
        self.libs = cco_ir.get_extern_libs()

    def sync(self):
        import torch

        for rk in self.local.values():
            torch.cuda.synchronize(rk.device)

    def settle(self):
        """Every rank's queued work is done and visible to the others."""
        self.sync()
        self.align()

    def run_once(self, launches):
        """launches: {rank: fn} (ranks held here); runs each once on its rank's stream,
        concurrently, and waits for every rank."""
        import torch

        for r, fn in launches.items():
            rk = self.local[r]
            with torch.cuda.device(rk.device), torch.cuda.stream(rk.stream):
                fn()
        self.settle()

    def time_graphs(self, launches, reps, trials=1):
        """Seconds per repetition of each rank's launches, `reps` of them captured in a CUDA
        graph per rank and the graphs replayed at once (slowest rank), `trials` times."""
        import torch

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
        return self.time_kernels({r: g.replay for r, g in graphs.items()}, reps, trials)

    def time_kernels(self, launches, units, trials=1):
        """Seconds per unit of each rank's work (one call of its fn: a kernel that loops
        internally, or a graph replay), all ranks at once, the slowest rank counting: a Timing
        of `trials` runs, the ranks lined up before each."""
        import torch

        mine = []
        for _ in range(trials):
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
            mine.append(max((s.elapsed_time(e) for s, e in events.values()), default=0.0) / 1e3 / units)
        return self.slowest(Timing(mine))
