# SPDX-License-Identifier: MIT
"""`cco perf --suites put` on GPUs: LSA put bandwidth, rank 0's [0, S) -> rank 1's [S, 2S)
through peer pointers by a Triton kernel, then ranks 0 and 1 both at once, each with the
other; anchors: a raw-pointer twin of the kernel (no CCO call) and cudaMemcpyAsync of the
same bytes. Every CCO kernel of a row is checked: it lands in a cleared destination. The
get suite (lsa_get.py) is the same transfer in the other direction.
"""

import torch
import triton

from cco_tools.perf import report as R
from cco_tools.perf.kernels import lsa as K
from cco_tools.perf.measure import spread_of, sweep
from cco_tools.perf.report import size_label

# Copy kernel shapes (int64 words a program moves per half step, warps, programs per SM),
# each tried at every size on the raw twin; the fastest is then used by CCO and twin alike.
# The large ones for bandwidth, the small ones spread a transfer of a few KiB over more
# multiprocessors.
COPY_CONFIGS = [(2048, 8, 4), (4096, 8, 2), (4096, 16, 2), (1024, 4, 8), (8192, 16, 1), (2048, 4, 8), (512, 2, 8),
                (256, 1, 16)]


def reps_for(size):
    return max(5, min(200, int(4e9 // max(size, 1)) // 50))


def _sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


def run(ctx):
    transfer(ctx, "put")


def transfer(ctx, direction):
    """put: rank 0's [0, S) -> rank 1's [S, 2S); get: rank 1's [0, S) -> rank 0's [S, 2S);
    then ranks 0 and 1 both at once, each with the other."""
    group, progress, trials, opts = ctx.group, ctx.progress, ctx.options.trials, ctx.options
    span = opts.max_bytes
    kernel = K.lsa_put if direction == "put" else K.lsa_get
    rows = ctx.report.suite(
        f"LSA {direction} bandwidth, {group.world} ranks on {torch.cuda.device_count()} GPU(s)",
        [R.size(), R.number("reps"), R.text("shape", 9), R.figure("cco", "GB/s"), R.spread(),
         R.figure("cco pdl", "GB/s"), R.figure("raw twin", "GB/s"), R.figure("memcpy", "GB/s"),
         R.figure("cco/memcpy", "%"), R.figure("cco pdl/memcpy", "%"), R.figure("cco/raw", "%"),
         R.figure("both", "GB/s/rank"), R.figure("both aggregate", "GB/s")],
        note="one rank transfers, then both at once; memcpy = cudaMemcpyAsync device-to-device of the same bytes; "
             "cco pdl: launched with programmatic dependent launch (each put starts while the one before it "
             "ends); shape: the copy shape (words per half step, warps, programs per SM) that was fastest for the "
             "raw twin at that size, used by every kernel of the row; reps: transfers in each timed run")
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
        reps = reps_for(size)
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
            t = group.time_graphs(group.on([0], launch(size, pdl=pdl)), reps, trials)
            for rk in group.held([dst_rank]):
                if not torch.equal(rk.view(dst_rank, span, size // 8, torch.int64), pattern(rk, src_rank)[:size // 8]):
                    raise RuntimeError(f"cco perf: {direction}{name}, {size_label(size)}: data check failed")
            return t

        t_cco = timed_and_checked("", pdl=False)
        t_pdl = timed_and_checked(" with PDL", pdl=True)
        t_raw = group.time_graphs(group.on([0], raw(size)), reps, trials)
        t_copy = group.time_graphs(group.on([0], memcpy(size)), reps, trials)
        t_both = group.time_graphs(group.on(pair, launch(size)), reps, trials)
        gb = size / 1e9
        rows.append([size, reps, "/".join(map(str, config[0])), gb / t_cco, spread_of(t_cco), gb / t_pdl, gb / t_raw,
                     gb / t_copy, 100 * t_copy / t_cco, 100 * t_copy / t_pdl, 100 * t_raw / t_cco, gb / t_both,
                     2 * gb / t_both])
    # The data arrived: after the last (both) transfer, ranks 0 and 1 each hold the
    # other's pattern in [S, 2S) (the peer put it there, or this rank got it).
    for rk in group.held(pair):
        if not torch.equal(rk.view(rk.rank, span, span // 8, torch.int64), pattern(rk, peer_of[rk.rank])):
            raise RuntimeError(f"cco perf: {direction} data check failed on rank {rk.rank}")
    group.align()
