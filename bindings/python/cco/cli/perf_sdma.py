"""`cco perf --suites sdma`: SDMA between ranks 0 and 1 (LSA ranks) through their copy-engine
queues, with the anchors measured in the same run: cudaMemcpyAsync of the same bytes between
the two ranks' windows, and the LSA put (a Triton kernel storing into the peer's memory), for
bandwidth; the LSA flag ping-pong for the put+signal round trip.
"""

import torch
import triton

from cco.cli.report import size_label
from cco.cli.timing import sweep
from cco.kernels import lsa as K
from cco.kernels import sdma as S

PAIR = (0, 1)
LSA_BLOCK, LSA_WARPS, LSA_PER_SM = 2048, 8, 4  # the LSA put's shape (perf_gpu.COPY_CONFIGS[0])


def run_suite(report, opts, group, progress):
    _bandwidth(report, opts, group, progress)
    _round_trip(report, opts, group, progress)


def _status(group):
    return group.on(PAIR, lambda rk: torch.zeros(1, dtype=torch.int32, device=f"cuda:{rk.device}"))


def _check(group, status, what):
    bad = group.slowest(max((int(s.item()) for s in status.values()), default=0))
    if bad:
        raise RuntimeError(f"cco perf: SDMA {what}: {int(bad)} calls failed")


def _bandwidth(report, opts, group, progress):
    rows = report.suite(
        f"SDMA put bandwidth, rank 0 -> rank 1 on {torch.cuda.device_count()} GPU(s)",
        ["size", "put+quiet us", "sdma GB/s", "memcpy GB/s", "lsa put GB/s", "sdma/memcpy %"],
        note="a kernel posts `reps` puts on queue 0 and quiets once (the copies run back to back); put+quiet: one "
             "put waited for each time (the latency); memcpy: cudaMemcpyAsync of the same bytes, replayed from a CUDA "
             "graph; lsa put: a Triton kernel storing into the peer's window")
    span = opts.max_bytes
    status = _status(group)

    def pattern(rk, owner):
        return torch.arange(span // 8, device=f"cuda:{rk.device}", dtype=torch.int64) * 10 + owner

    for rk in group.held(PAIR):
        rk.view(rk.rank, 0, span // 8, torch.int64).copy_(pattern(rk, rk.rank))
    group.settle()

    def puts(size, count, each=False):
        return lambda rk: lambda: S.put_quiet[(1,)](rk.dc.ptr, rk.win.handle, status[rk.rank], 1, count, 0, span, size, 0,
                                                    EACH=each, num_warps=4, extern_libs=group.libs)

    def memcpy(size):
        def make(rk):
            src, dst = rk.view(0, 0, size // 8, torch.int64), rk.view(1, span, size // 8, torch.int64)
            return lambda: dst.copy_(src)
        return make

    def lsa(size):
        def make(rk):
            words = size // 8
            sms = torch.cuda.get_device_properties(rk.device).multi_processor_count
            grid = (min(triton.cdiv(words, LSA_BLOCK), sms * LSA_PER_SM),)
            return lambda: K.lsa_put[grid](rk.win.handle, 1, 0, span, words, BLOCK=LSA_BLOCK, num_warps=LSA_WARPS,
                                           extern_libs=group.libs)
        return make

    group.run_once(group.on([0], puts(8, 1)))  # load
    group.run_once(group.on([0], puts(8, 1, True)))
    for size in sweep(min(max(opts.min_bytes, 4096), span), span):
        progress("sdma put", size_label(size))
        reps = max(5, min(200, int(4e9 // size) // 50))
        t_each = group.time_kernels(group.on([0], puts(size, reps, True)), reps)
        t_put = group.time_kernels(group.on([0], puts(size, reps)), reps)
        t_copy = group.time_graphs(group.on([0], memcpy(size)), reps)
        t_lsa = group.time_graphs(group.on([0], lsa(size)), reps)
        gb = size / 1e9
        rows.append([size_label(size), t_each * 1e6, gb / t_put, gb / t_copy, gb / t_lsa, 100 * t_copy / t_put])
    _check(group, status, "put bandwidth")
    for rk in group.held([1]):
        rk.view(1, span, span // 8, torch.int64).zero_()
    group.settle()
    group.run_once(group.on([0], puts(span, 1)))
    for rk in group.held([1]):
        if not torch.equal(rk.view(1, span, span // 8, torch.int64), pattern(rk, 0)):
            raise RuntimeError("cco perf: SDMA put data check failed on rank 1")
    group.align()


def _round_trip(report, opts, group, progress):
    rows = report.suite(
        f"SDMA put+signal round trip, ranks 0 and 1 on {torch.cuda.device_count()} GPU(s)",
        ["payload", "cco us/rt", "lsa pingpong us/rt", "cco/lsa"],
        note="rank 0 puts with a signal on queue 0, rank 1 waits and answers the same way; one kernel loops over "
             "the rounds; lsa pingpong: two kernels bouncing a flag by stores (the floor)")
    rounds = 200 if opts.quick else 2000
    status = _status(group)

    def kernels(nbytes, count):
        return lambda rk: lambda: S.pingpong[(1,)](rk.dc.ptr, rk.win.handle, status[rk.rank], 1 - rk.rank, count, nbytes,
                                                   0, FIRST=rk.rank == 0, num_warps=4, extern_libs=group.libs)

    for r in PAIR:  # each side is its own binary: load both before either waits
        group.run_once(group.on([r], kernels(8, 0)))
    measured = []
    for nbytes in (8, 4096, 1 << 20):
        progress("sdma round trip", size_label(nbytes))
        group.run_once(group.on(PAIR, kernels(nbytes, 20)))
        measured.append((size_label(nbytes), group.time_kernels(group.on(PAIR, kernels(nbytes, rounds)), rounds)))
    _check(group, status, "round trip")

    failed = _status(group)

    def pingpong(count):
        def make(rk):
            mine, theirs = rk.view(rk.rank, 0, 1, torch.int32), rk.view(1 - rk.rank, 0, 1, torch.int32)
            return lambda: K.flag_pingpong[(1,)](mine, theirs, count, failed[rk.rank], FIRST=rk.rank == 0, num_warps=1)
        return make

    for r in PAIR:
        group.run_once(group.on([r], pingpong(0)))
    for rk in group.held(PAIR):
        rk.view(rk.rank, 0, 2, torch.int32).zero_()
    group.settle()
    t_pp = group.time_kernels(group.on(PAIR, pingpong(rounds)), rounds)
    if group.slowest(max((int(f.item()) for f in failed.values()), default=0)):
        t_pp = float("nan")
    for label, t in measured:
        rows.append([label, t * 1e6, t_pp * 1e6, t / t_pp])
