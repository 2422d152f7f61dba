# SPDX-License-Identifier: MIT
"""`cco perf --suites gda`: GDA between ranks 0 and 1 through their proxies (the `local`
backend), with the anchors measured in the same run: the LSA flag ping-pong (two kernels
bouncing a flag by stores, the floor of any round trip between the two GPUs) and a
cudaMemcpyAsync of the same bytes between the two ranks' windows (what the proxy's copy
engine can do at best).
"""

import torch

from cco.ir.triton import cco
from cco_tools.perf import report as R
from cco_tools.perf.kernels import gda as G
from cco_tools.perf.measure import spread_of, sweep
from cco_tools.perf.report import size_label
from cco_tools.perf.suites import pair as P

PIECE = 64 << 10  # the bandwidth table's pieces


def run(ctx):
    _round_trip(ctx)
    _launch_costs(ctx)
    _direct_copy(ctx)
    _bandwidth(ctx)


def _round_trip(ctx):
    group, progress, trials = ctx.group, ctx.progress, ctx.options.trials
    rows = ctx.report.suite(
        f"GDA put+signal round trip, ranks 0 and 1 on {torch.cuda.device_count()} GPU(s)",
        [R.text("payload", 12), R.text("path", 6), R.text("launch", 9), R.figure("cco", "us/rt"), R.spread(),
         R.figure("lsa pingpong", "us/rt"), R.figure("cco/lsa", "")],
        note="one round trip: put+signal (or a signal alone) to the peer, the peer waits and answers the same way; "
             "path direct: the default, where ranks 0 and 1 share a node (LSA peers, idle ring: the device's own "
             "stores); proxy: the same device communicator with gdaDirectMaxBytes=0, every operation through both "
             "proxies (the local backend); in-kernel: one kernel loops over the rounds; graph: one round trip per "
             "kernel, replayed from a CUDA graph; lsa pingpong: two kernels bouncing a flag (the floor)")
    rounds = ctx.options.rounds
    status = P.status_words(group)

    def kernels(path, kind, nbytes, count):
        def make(rk):
            dc = rk.dc if path == "direct" else rk.dc_proxy
            return lambda: G.pingpong[(1,)](dc.ptr, rk.win.handle, status[rk.rank], 1 - rk.rank, count, nbytes,
                                            KIND=kind, FIRST=rk.rank == 0, num_warps=4, extern_libs=group.libs)
        return make

    measured = []
    # (kind, nbytes): a signal alone, put_value of a word, puts.
    for path in ("direct", "proxy"):
        for kind, nbytes, label in ((0, 0, "signal only"), (2, 8, "put_value 8B"), (1, 8, "put 8B"),
                                    (1, 4096, "put 4KiB")):
            # Each side is its own binary: load both before either waits (loading a module
            # can wait for a kernel of the context that is running).
            for r in P.PAIR:
                group.run_once(group.on([r], kernels(path, kind, nbytes, 0)))
            progress("gda round trip", f"{label} ({path})")
            group.run_once(group.on(P.PAIR, kernels(path, kind, nbytes, 20)))  # settle
            t_loop = group.time_kernels(group.on(P.PAIR, kernels(path, kind, nbytes, rounds)), rounds, trials)
            t_graph = group.time_graphs(group.on(P.PAIR, kernels(path, kind, nbytes, 1)), min(rounds, 500), trials)
            measured += [(label, path, "in-kernel", t_loop), (label, path, "graph", t_graph)]
    P.check_status(group, status, "GDA round trip")
    progress("gda round trip: flag ping-pong anchor")
    floor = P.flag_pingpong_us(group, rounds, trials)
    for label, path, how, t in measured:
        rows.append([label, path, how, t * 1e6, spread_of(t), floor, t * 1e6 / floor])


def _launch_costs(ctx):
    group, progress, trials = ctx.group, ctx.progress, ctx.options.trials
    rows = ctx.report.suite(
        f"GDA call cost per kernel launch, ranks 0 and 1 on {torch.cuda.device_count()} GPU(s)",
        [R.text("call", 22), R.figure("graph", "us/launch"), R.spread(), R.figure("in-kernel", "us/call"),
         R.figure("graph - empty", "us")],
        note="both ranks run the same kernel at once, each calling toward the other (nobody waits); graph: one "
             "call per kernel, replayed from a CUDA graph (the launch is in it: see 'none'); in-kernel: one "
             "kernel loops over the calls; graph - empty: what the call adds to a launch")
    reps = 100 if ctx.options.quick else 500
    status = P.status_words(group)
    calls = ((0, "none"), (1, "flush"), (2, "signal"), (3, "signal + flush"), (4, "read_signal"),
             (5, "put_value 8B + signal"))

    def kernel(op, count):
        return lambda rk: lambda: G.lone_call[(1,)](rk.dc.ptr, rk.win.handle, status[rk.rank], 1 - rk.rank, count,
                                                     OP=op, num_warps=4, extern_libs=group.libs)

    measured = []
    for op, label in calls:
        progress("gda call cost", label)
        t_graph = group.time_graphs(group.on(P.PAIR, kernel(op, 1)), reps, trials)
        t_loop = group.time_kernels(group.on(P.PAIR, kernel(op, reps)), reps, trials)
        measured.append((label, t_graph, t_loop))
    P.check_status(group, status, "GDA call cost")
    empty = measured[0][1]
    for label, t_graph, t_loop in measured:
        rows.append([label, t_graph * 1e6, spread_of(t_graph), t_loop * 1e6, (t_graph - empty) * 1e6])


def _direct_copy(ctx):
    group, progress, trials, opts = ctx.group, ctx.progress, ctx.options.trials, ctx.options
    rows = ctx.report.suite(
        f"GDA put+flush latency: the calling group's own copy against the proxy, rank 0 -> rank 1 on "
        f"{torch.cuda.device_count()} GPU(s)",
        [R.size(), R.text("group", 9), R.figure("direct", "us"), R.spread(), R.figure("proxy", "us"),
         R.figure("direct/proxy", "")],
        note=f"one put then a flush, in a kernel loop; direct: gdaDirectMaxBytes={P.DIRECT_MAX} (the group copies "
             "into the peer's window with its own stores); proxy: gdaDirectMaxBytes=0 (the copy engine, queued "
             "by the proxy); group: a warp (a one-warp program) or a block of that many warps")
    span = opts.max_bytes
    status = P.status_words(group)
    P.fill_sources(group, span)
    groups = ((cco.CoopScope.WARP, 1, "warp"), (cco.CoopScope.BLOCK, 4, "block 4w"),
              (cco.CoopScope.BLOCK, 16, "block 16w"))

    def puts(dc_of, coop, warps, size, count):
        return lambda rk: lambda: G.put_flush[(1,)](dc_of(rk).ptr, rk.win.handle, status[rk.rank], 1, count, 0, span,
                                                    size, EACH=True, COOP=coop, num_warps=warps,
                                                    extern_libs=group.libs)

    def wide(rk):
        return rk.dc_wide

    def proxy(rk):
        return rk.dc_proxy

    for coop, warps, _ in groups:
        group.run_once(group.on([0], puts(wide, coop, warps, 8, 1)))  # load
    for size in sweep(min(max(opts.min_bytes, 4096), span), min(span, P.DIRECT_MAX)):
        progress("gda direct copy", size_label(size))
        reps = 20 if opts.quick else 100
        for coop, warps, label in groups:
            t_direct = group.time_kernels(group.on([0], puts(wide, coop, warps, size, reps)), reps, trials)
            t_proxy = group.time_kernels(group.on([0], puts(proxy, coop, warps, size, reps)), reps, trials)
            rows.append([size, label, t_direct * 1e6, spread_of(t_direct), t_proxy * 1e6, t_direct / t_proxy])
    P.check_status(group, status, "GDA direct copy")
    largest = min(span, P.DIRECT_MAX)
    for coop, warps, label in groups:
        P.check_landed(group, span, puts(wide, coop, warps, largest, 1), f"GDA direct put ({label})", largest)


def _bandwidth(ctx):
    group, progress, trials, opts = ctx.group, ctx.progress, ctx.options.trials, ctx.options
    rows = ctx.report.suite(
        f"GDA put bandwidth, rank 0 -> rank 1 on {torch.cuda.device_count()} GPU(s)",
        [R.size(), R.number("reps"), R.figure("put+flush", "us"), R.figure("put", "GB/s"), R.spread(),
         R.figure("in 64 KiB pieces", "GB/s"), R.figure("memcpy", "GB/s"), R.figure("put/memcpy", "%")],
        note="a kernel posts `reps` puts and flushes once (the copies run back to back); put+flush: one put "
             "flushed each time (the latency); in 64 KiB pieces: each put posted as puts of 64 KiB one after "
             "another (up to gdaDirectGroupMaxBytes a piece is the block's own copy; through the proxy, pieces that "
             "continue each other join into one copy); memcpy: cudaMemcpyAsync "
             "of the same bytes from rank 0's window to rank 1's, replayed from a CUDA graph; reps: puts in each "
             "timed run")
    span = opts.max_bytes
    status = P.status_words(group)
    P.fill_sources(group, span)

    def puts(size, count, each=False):
        return lambda rk: lambda: G.put_flush[(1,)](rk.dc.ptr, rk.win.handle, status[rk.rank], 1, count, 0, span, size,
                                                    EACH=each, COOP=cco.CoopScope.BLOCK, num_warps=4,
                                                    extern_libs=group.libs)

    def pieces(size, count):
        return lambda rk: lambda: G.put_pieces[(1,)](rk.dc.ptr, rk.win.handle, status[rk.rank], 1, count, 0, span, size,
                                                     PIECE=PIECE, num_warps=4, extern_libs=group.libs)

    group.run_once(group.on([0], puts(8, 1)))  # load
    group.run_once(group.on([0], puts(8, 1, True)))
    group.run_once(group.on([0], pieces(0, 1)))  # no piece: loads it whatever the span
    for size in sweep(min(max(opts.min_bytes, 4096), span), span):
        progress("gda put", size_label(size))
        reps = max(5, min(200, int(4e9 // size) // 50))
        t_each = group.time_kernels(group.on([0], puts(size, reps, True)), reps, trials)
        t_put = group.time_kernels(group.on([0], puts(size, reps)), reps, trials)
        t_pieces = (group.time_kernels(group.on([0], pieces(size, reps)), reps, trials) if size >= 2 * PIECE
                    else float("nan"))
        t_copy = group.time_graphs(group.on([0], P.memcpy(size, span)), reps, trials)
        gb = size / 1e9
        rows.append([size, reps, t_each * 1e6, gb / t_put, spread_of(t_put), gb / t_pieces, gb / t_copy,
                     100 * t_copy / t_put])
    P.check_status(group, status, "GDA put bandwidth")
    P.check_landed(group, span, puts(span, 1), "GDA put")
    if span % PIECE == 0:
        P.check_landed(group, span, pieces(span, 1), "GDA put in pieces")
