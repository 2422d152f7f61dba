"""`cco perf --suites sdma`: SDMA between ranks 0 and 1 (LSA ranks) through their copy-engine
queues, with the anchors measured in the same run: cudaMemcpyAsync of the same bytes between
the two ranks' windows, and the LSA put (a Triton kernel storing into the peer's memory), for
bandwidth; the LSA flag ping-pong for the put+signal round trip.
"""

import torch
import triton

from cco.cli import perf_pair as P
from cco.cli.report import size_label
from cco.cli.timing import sweep
from cco.kernels import lsa as K
from cco.kernels import sdma as S

LSA_BLOCK, LSA_WARPS, LSA_PER_SM = 2048, 8, 4  # the LSA put's shape (perf_gpu.COPY_CONFIGS[0])


def run_suite(report, opts, group, progress):
    _bandwidth(report, opts, group, progress)
    _round_trip(report, opts, group, progress)


def _bandwidth(report, opts, group, progress):
    rows = report.suite(
        f"SDMA put bandwidth, rank 0 -> rank 1 on {torch.cuda.device_count()} GPU(s)",
        ["size", "put+quiet us", "sdma GB/s", "memcpy GB/s", "lsa put GB/s", "sdma/memcpy %"],
        note="a kernel posts `reps` puts on queue 0 and quiets once (the copies run back to back); put+quiet: one "
             "put waited for each time (the latency); memcpy: cudaMemcpyAsync of the same bytes, replayed from a CUDA "
             "graph; lsa put: a Triton kernel storing into the peer's window")
    span = opts.max_bytes
    status = P.status_words(group)
    P.fill_sources(group, span)

    def puts(size, count, each=False):
        return lambda rk: lambda: S.put_quiet[(1,)](rk.dc.ptr, rk.win.handle, status[rk.rank], 1, count, 0, span, size, 0,
                                                    EACH=each, num_warps=4, extern_libs=group.libs)

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
        t_copy = group.time_graphs(group.on([0], P.memcpy(size, span)), reps)
        t_lsa = group.time_graphs(group.on([0], lsa(size)), reps)
        gb = size / 1e9
        rows.append([size_label(size), t_each * 1e6, gb / t_put, gb / t_copy, gb / t_lsa, 100 * t_copy / t_put])
    P.check_status(group, status, "SDMA put bandwidth")
    P.check_landed(group, span, puts(span, 1), "SDMA put")


def _round_trip(report, opts, group, progress):
    rows = report.suite(
        f"SDMA put+signal round trip, ranks 0 and 1 on {torch.cuda.device_count()} GPU(s)",
        ["payload", "cco us/rt", "lsa pingpong us/rt", "cco/lsa"],
        note="rank 0 puts with a signal on queue 0, rank 1 waits and answers the same way; one kernel loops over "
             "the rounds; lsa pingpong: two kernels bouncing a flag by stores (the floor)")
    rounds = 200 if opts.quick else 2000
    status = P.status_words(group)

    def kernels(nbytes, count):
        return lambda rk: lambda: S.pingpong[(1,)](rk.dc.ptr, rk.win.handle, status[rk.rank], 1 - rk.rank, count, nbytes,
                                                   0, FIRST=rk.rank == 0, num_warps=4, extern_libs=group.libs)

    for r in P.PAIR:  # each side is its own binary: load both before either waits
        group.run_once(group.on([r], kernels(8, 0)))
    measured = []
    for nbytes in (8, 4096, 1 << 20):
        progress("sdma round trip", size_label(nbytes))
        group.run_once(group.on(P.PAIR, kernels(nbytes, 20)))
        measured.append((size_label(nbytes), group.time_kernels(group.on(P.PAIR, kernels(nbytes, rounds)), rounds)))
    P.check_status(group, status, "SDMA round trip")
    floor = P.flag_pingpong_us(group, rounds)
    for label, t in measured:
        rows.append([label, t * 1e6, floor, t * 1e6 / floor])
