# SPDX-License-Identifier: MIT
"""`cco perf --suites sdma`: SDMA between ranks 0 and 1 (LSA ranks) through their copy-engine
queues, with the anchors measured in the same run: cudaMemcpyAsync of the same bytes between
the two ranks' windows, and the LSA put (a Triton kernel storing into the peer's memory), for
bandwidth; the LSA flag ping-pong for the put+signal round trip.
"""

import math

import torch
import triton

from cco_tools.perf import report as R
from cco_tools.perf.kernels import lsa as K
from cco_tools.perf.kernels import sdma as S
from cco_tools.perf.measure import spread_of, sweep
from cco_tools.perf.report import size_label
from cco_tools.perf.suites import pair as P

LSA_BLOCK, LSA_WARPS, LSA_PER_SM = 2048, 8, 4  # the LSA put's shape (lsa_put.COPY_CONFIGS[0])
MANY_POSTERS = 8  # programs posting the bandwidth puts at once in the table's last columns


def run(ctx):
    _bandwidth(ctx)
    _round_trip(ctx)
    _overlap(ctx)


def _bandwidth(ctx):
    group, progress, trials, opts = ctx.group, ctx.progress, ctx.options.trials, ctx.options
    rows = ctx.report.suite(
        f"SDMA put bandwidth, rank 0 -> rank 1 on {torch.cuda.device_count()} GPU(s)",
        [R.size(), R.number("reps"), R.figure("put+quiet", "us"), R.figure("sdma", "GB/s"), R.spread(),
         R.figure("memcpy", "GB/s"), R.figure("lsa put", "GB/s"), R.figure("sdma/memcpy", "%"),
         R.figure(f"sdma x{MANY_POSTERS}", "GB/s"), R.figure(f"x{MANY_POSTERS}/memcpy", "%")],
        note="a kernel posts `reps` puts on queue 0 and quiets once (the copies run back to back), each to the next "
             "`size`-byte slot of rank 1's span (puts that touch none of each other's bytes, as the pieces of one "
             "transfer; at size = span all go to one place); put+quiet: one "
             "put waited for each time (the latency); memcpy: cudaMemcpyAsync of the same bytes, replayed from a CUDA "
             "graph; lsa put: a Triton kernel storing into the peer's window; reps: puts in each timed run; "
             f"sdma x{MANY_POSTERS}: the same puts posted by {MANY_POSTERS} programs at once into the same queue (a "
             "program's post costs microseconds on the device: one program alone may not keep the proxy busy)")
    span = opts.max_bytes
    status = P.status_words(group)
    P.fill_sources(group, span)

    def puts(size, count, each=False, programs=1):
        slots = max(1, span // size)
        return lambda rk: lambda: S.put_quiet[(programs,)](rk.dc.ptr, rk.win.handle, status[rk.rank], 1, count, 0,
                                                           span, size, 0, slots, EACH=each, num_warps=4,
                                                           extern_libs=group.libs)

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
        t_each = group.time_kernels(group.on([0], puts(size, reps, True)), reps, trials)
        t_put = group.time_kernels(group.on([0], puts(size, reps)), reps, trials)
        t_copy = group.time_graphs(group.on([0], P.memcpy(size, span)), reps, trials)
        t_lsa = group.time_graphs(group.on([0], lsa(size)), reps, trials)
        t_many = group.time_kernels(group.on([0], puts(size, reps, programs=MANY_POSTERS)), reps, trials)
        gb = size / 1e9
        rows.append([size, reps, t_each * 1e6, gb / t_put, spread_of(t_put), gb / t_copy, gb / t_lsa,
                     100 * t_copy / t_put, gb / t_many, 100 * t_copy / t_many])
    P.check_status(group, status, "SDMA put bandwidth")
    P.check_landed(group, span, puts(span, 1), "SDMA put")


def _round_trip(ctx):
    group, progress, trials = ctx.group, ctx.progress, ctx.options.trials
    rows = ctx.report.suite(
        f"SDMA put+signal round trip, ranks 0 and 1 on {torch.cuda.device_count()} GPU(s)",
        [R.size("payload"), R.figure("cco", "us/rt"), R.spread(), R.figure("lsa pingpong", "us/rt"),
         R.figure("cco/lsa", "")],
        note="rank 0 puts with a signal on queue 0, rank 1 waits and answers the same way; one kernel loops over "
             "the rounds; lsa pingpong: two kernels bouncing a flag by stores (the floor)")
    rounds = ctx.options.rounds
    status = P.status_words(group)

    def kernels(nbytes, count):
        return lambda rk: lambda: S.pingpong[(1,)](rk.dc.ptr, rk.win.handle, status[rk.rank], 1 - rk.rank, count,
                                                   nbytes, 0, FIRST=rk.rank == 0, num_warps=4, extern_libs=group.libs)

    for r in P.PAIR:  # each side is its own binary: load both before either waits
        group.run_once(group.on([r], kernels(8, 0)))
    measured = []
    for nbytes in (8, 4096, 1 << 20):
        progress("sdma round trip", size_label(nbytes))
        group.run_once(group.on(P.PAIR, kernels(nbytes, 20)))
        measured.append((nbytes, group.time_kernels(group.on(P.PAIR, kernels(nbytes, rounds)), rounds, trials)))
    P.check_status(group, status, "SDMA round trip")
    floor = P.flag_pingpong_us(group, rounds, trials)
    for nbytes, t in measured:
        rows.append([nbytes, t * 1e6, spread_of(t), floor, t * 1e6 / floor])


def _overlap(ctx):
    """What a transfer costs the compute beside it: rank 0 runs bf16 matmuls (a CUDA graph on
    one stream) while a transfer to rank 1 runs on another, long enough to cover them."""
    group, progress, opts = ctx.group, ctx.progress, ctx.options
    rows = ctx.report.suite(
        f"SDMA put overlapping compute, rank 0 -> rank 1 on {torch.cuda.device_count()} GPU(s)",
        [R.text("transfer", 13), R.figure("compute", "us"), R.spread(), R.figure("compute with transfer", "us"),
         R.figure("slowdown", "%"), R.figure("transfer", "GB/s")],
        note="compute: 10 bf16 matmuls 4096^3 replayed from a CUDA graph, alone and while the transfer runs on "
             "another stream (it outlasts the compute); sdma: a kernel posts the puts and ends, the copy engine moves "
             "them, a quiet kernel after the compute waits for them (sdma, waiting: the quiet kernel runs beside the "
             "compute instead and holds one SM, which costs a matmul a whole wave); memcpy: cudaMemcpyAsync (the "
             "copy-engine anchor); lsa put: the Triton store kernel on every SM (what a copy engine spares the "
             "compute); compute: the median of 3 runs alone (spread: theirs), with transfer: one run")
    span = opts.max_bytes
    size = span
    reps = max(2, (2 << 30) // size)  # ~2 GiB moved: several ms, longer than the compute
    status = P.status_words(group)
    P.fill_sources(group, span)
    progress("sdma overlap")
    figures = []
    for rk in group.held([0]):
        with torch.cuda.device(rk.device):
            a = torch.randn(4096, 4096, device=f"cuda:{rk.device}", dtype=torch.bfloat16)
            b, c = torch.randn_like(a), torch.empty_like(a)
            compute_stream, transfer_stream = torch.cuda.Stream(), torch.cuda.Stream()

            def compute():
                for _ in range(10):
                    torch.mm(a, b, out=c)

            compute()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=compute_stream):
                compute()
            words = size // 8
            sms = torch.cuda.get_device_properties(rk.device).multi_processor_count
            lsa_grid = (min(triton.cdiv(words, LSA_BLOCK), sms * LSA_PER_SM),)
            copy = P.memcpy(size, span)(rk)
            def post():
                S.post_puts[(1,)](rk.dc.ptr, rk.win.handle, status[0], 1, reps, 0, span, size, 0, num_warps=4,
                                  extern_libs=group.libs)

            def quiet():
                S.quiet_queue[(1,)](rk.dc.ptr, status[0], 1, 0, num_warps=4, extern_libs=group.libs)

            transfers = {
                "sdma": post,
                "sdma, waiting": lambda: (post(), quiet()),
                "memcpy": lambda: [copy() for _ in range(reps)],
                "lsa put": lambda: [K.lsa_put[lsa_grid](rk.win.handle, 1, 0, span, words, BLOCK=LSA_BLOCK,
                                                        num_warps=LSA_WARPS, extern_libs=group.libs)
                                    for _ in range(reps)],
            }
            for fn in list(transfers.values()) + [quiet]:  # compiled and loaded before anything is timed
                with torch.cuda.stream(transfer_stream):
                    fn()
            torch.cuda.synchronize()

            def timed(stream, fn):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with torch.cuda.stream(stream):
                    start.record()
                    fn()
                    end.record()
                return start, end

            alone = []
            for _ in range(3):
                s, e = timed(compute_stream, graph.replay)
                torch.cuda.synchronize()
                alone.append(s.elapsed_time(e) * 1e3)
            t_alone = sorted(alone)[1]
            alone_spread = 100 * (max(alone) - min(alone)) / t_alone if t_alone > 0 else None
            # Enough bytes to outlast the compute twice over at the copy engine's speed (one GPU
            # copies within its own memory several times faster than two GPUs over NVLink).
            s, e = timed(transfer_stream, copy)
            torch.cuda.synchronize()
            reps = max(reps, math.ceil(2 * t_alone / (s.elapsed_time(e) * 1e3)))
            for name, fn in transfers.items():
                ts, te = timed(transfer_stream, fn)
                cs, ce = timed(compute_stream, graph.replay)
                if name == "sdma":  # the posting kernel ended at once: the wait comes after the compute
                    te = timed(compute_stream, quiet)[1]
                torch.cuda.synchronize()
                t_with = cs.elapsed_time(ce) * 1e3
                t_transfer = ts.elapsed_time(te) * 1e3
                # A copy engine's transfer must cover the compute, or the slowdown would be understated
                # (for sdma: its wait, after the compute, still had puts to wait for); the SM kernel may
                # instead hold the compute back until it ends (that is its cost).
                short = ce.elapsed_time(te) < 0.05 if name == "sdma" else t_transfer < t_with
                if name != "lsa put" and short:  # not an overlap: no figure rather than a wrong one
                    progress(f"sdma overlap: the {name} transfer ended before the compute; its row reads n/a")
                    figures.append((name, None, None, None, None))
                    continue
                figures.append((name, t_alone, alone_spread, t_with, size * reps / (t_transfer * 1e-6) / 1e9))
    # Every process makes the same calls: rank 1 learns rank 0's figures.
    for i, name in enumerate(("sdma", "sdma, waiting", "memcpy", "lsa put")):
        mine = figures[i] if figures else (name, 0.0, 0.0, 0.0, 0.0)
        # No figure: infinity, which the largest over the ranks keeps.
        t_alone, spread, t_with, gbs = (group.slowest(math.inf if v is None else v) for v in mine[1:])
        if math.isinf(max(t_alone, t_with, gbs)):
            rows.append([name, None, None, None, None, None])
        else:
            rows.append([name, t_alone, None if math.isinf(spread) else spread, t_with, 100 * (t_with / t_alone - 1),
                         gbs])
    P.check_status(group, status, "SDMA overlap")
