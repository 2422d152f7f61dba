"""`cco perf` on the cpu platform: the host paths, host memory standing in for device
memory, ranks as threads of this process or as launched processes (cli/ranks.py).
Suites: host barrier latency (ccoBarrierAll), put bandwidth through peer pointers
(anchor: memmove between two local buffers), GDA over the tcp backend (cli/perf_tcp.py:
anchors a bare TCP ping-pong and stream)."""

import ctypes
import time

from cco import Communicator
from cco.cli.meta import run_meta
from cco.cli.ranks import SCRATCH_BYTES, Ranks
from cco.cli.report import Report, size_label
from cco.cli.timing import sweep


class CpuRank:
    """One rank's communicator and a window of 2 x `span` bytes plus the scratch slot."""

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


def run(opts, joined=None, world=None, live=None):
    world = world or max(2, opts.ranks or 2)
    top = min(opts.max_bytes, 64 << 20) if not opts.quick else min(opts.max_bytes, 1 << 20)
    how = "launched processes" if joined else "threads"
    report = Report(f"cco perf: cpu platform (host memory), {world} ranks as {how}", run_meta("cpu", world, how),
                    live=live)
    if "tcp" in opts.suite_list and joined is None:  # it starts its own two processes
        from cco.cli import perf_tcp

        perf_tcp.run_suite(report, opts)
    if not any(s in opts.suite_list for s in ("barrier", "put")):
        return report
    with Ranks(world, lambda r, uid: CpuRank(r, world, uid, top), joined) as group:
        if "barrier" in opts.suite_list:
            _barrier_suite(report, opts, group)
        if "put" in opts.suite_list:
            _put_suite(report, opts, group, top)
    return report


def _barrier_suite(report, opts, group):
    rows = report.suite("host barrier (ccoBarrierAll)", ["ranks", "us/barrier"])
    rounds = 200 if opts.quick else 2000

    def barriers(rk):
        t0 = time.perf_counter()
        for _ in range(rounds):
            rk.comm.barrier()
        return time.perf_counter() - t0

    group.align()
    seconds = group.slowest(max(group.each(barriers).values()))
    rows.append([group.world, seconds / rounds * 1e6])


def _put_suite(report, opts, group, top):
    rows = report.suite("put through peer pointers", ["size", "put GB/s", "memmove GB/s", "put/memmove %"],
                        note="rank 0 copies its [0, S) into rank 1's [S, 2S) (the kernel's job on a GPU)")
    sender = group.local.get(0)
    if sender is not None:
        ctypes.memset(sender.ptr(0, 0), 7, top)
    for size in sweep(min(max(4096, opts.min_bytes), top), top):
        reps = max(3, min(2000, (256 << 20) // size))

        def timed(rk, to, size=size, reps=reps):
            src, dst = rk.ptr(0, 0), rk.ptr(*to)
            t0 = time.perf_counter()
            for _ in range(reps):
                ctypes.memmove(dst, src, size)
            return (time.perf_counter() - t0) / reps

        t_put = t_local = 0.0
        if sender is not None:
            t_put = min(timed(sender, (1, top)) for _ in range(3))
            t_local = min(timed(sender, (0, top)) for _ in range(3))
        t_put, t_local = group.slowest(t_put), group.slowest(t_local)
        rows.append([size_label(size), size / t_put / 1e9, size / t_local / 1e9, 100 * t_local / t_put])
    group.align()  # rank 0's last put has landed
    receiver = group.local.get(1)
    if receiver is not None:  # rank 1 sees rank 0's bytes in its own memory
        got = (ctypes.c_uint8 * 64).from_address(receiver.ptr(1, top))
        if bytes(got) != b"\x07" * 64:
            raise RuntimeError("cco perf: rank 1 does not see rank 0's put")
