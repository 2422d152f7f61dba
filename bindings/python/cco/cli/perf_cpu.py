"""`cco perf` on the cpu platform: the host paths, with ranks as threads of this process
(host memory stands in for device memory). Suites: host barrier latency (ccoBarrierAll),
put bandwidth through peer pointers (anchor: memmove between two local buffers)."""

import ctypes
import time

from cco import Communicator
from cco.cli.report import Report, size_label
from cco.cli.timing import on_threads, sweep


def run(opts):
    world = max(2, opts.ranks or 2)
    top = min(opts.max_bytes, 64 << 20) if not opts.quick else min(opts.max_bytes, 1 << 20)
    report = Report(f"cco perf: cpu platform (host memory), {world} ranks as threads")
    uid = Communicator.get_unique_id()
    comms = on_threads(world, lambda r: Communicator.init(world, r, uid, per_rank_vmm=4 * top + (64 << 20)))
    try:
        wins = on_threads(world, lambda r: comms[r].register_window(comms[r].alloc_mem(2 * top).ptr, 2 * top))
        if "barrier" in opts.suite_list:
            rows = report.suite("host barrier (ccoBarrierAll)", ["ranks", "us/barrier"])
            rounds = 200 if opts.quick else 2000

            def barriers(r):
                t0 = time.perf_counter()
                for _ in range(rounds):
                    comms[r].barrier()
                return time.perf_counter() - t0

            rows.append([world, max(on_threads(world, barriers)) / rounds * 1e6])
        if "put" in opts.suite_list:
            rows = report.suite("put through peer pointers", ["size", "put GB/s", "memmove GB/s", "put/memmove %"],
                                note="rank 0 copies its [0, S) into rank 1's [S, 2S) (the kernel's job on a GPU)")
            c, w = comms[0], wins[0]
            src = c.peer_ptr(w, 0, 0)
            dst = c.peer_ptr(w, 1, top)
            local = c.peer_ptr(w, 0, top)
            ctypes.memset(src, 7, top)
            for size in sweep(max(4096, opts.min_bytes), top):
                reps = max(3, min(2000, (256 << 20) // size))

                def timed(to, size=size, reps=reps):
                    t0 = time.perf_counter()
                    for _ in range(reps):
                        ctypes.memmove(to, src, size)
                    return (time.perf_counter() - t0) / reps

                t_put, t_local = min(timed(dst) for _ in range(3)), min(timed(local) for _ in range(3))
                rows.append([size_label(size), size / t_put / 1e9, size / t_local / 1e9, 100 * t_local / t_put])
            # Rank 1 sees rank 0's bytes in its own memory.
            got = (ctypes.c_uint8 * 64).from_address(comms[1].peer_ptr(wins[1], 1, top))
            if bytes(got) != b"\x07" * 64:
                raise RuntimeError("cco perf: rank 1 does not see rank 0's put")
    finally:
        on_threads(world, lambda r: comms[r].destroy())
    return report
