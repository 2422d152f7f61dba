# SPDX-License-Identifier: MIT
"""`cco perf` suite "launch": the all-reduce as users call it, one launch per step, with the
peers they would call instead measured in the same run.

Per launch, float32 sum, one process per GPU:
  graph  `reps` launches captured in one CUDA graph per rank, replayed at once: what a
         framework that captures its step pays;
  graph+pdl  the same, CCO's kernels launched with programmatic dependent launch: each
         starts (and reads its descriptors) while the kernel before it on the stream ends;
  eager  a Python loop of `reps` launches, wall clock (host launch overhead included): what
         a plain eager loop pays.
Columns: CCO's one-shot and two-shot kernels (kernels/lsa.py OneShotAllReduce /
TwoShotAllReduce, Triton's launch path), its barrier-free one-shot (kernels/lsa_push.py
PushAllReduce: each rank pushes its input into its peers' receive slots, each element its own
flag), the push kernel through the low-overhead path for eager callers (one launch captured
once, replayed per call), NCCL through torch.distributed, and torch SymmetricMemory's one-shot
and two-shot.
The anchors need one GPU per rank and a torch.distributed rendezvous (torchrun, or cco perf's
own processes, which get MASTER_ADDR / MASTER_PORT); elsewhere they read "-" (null in JSON) and the note
says why. Every result is checked against the exact sum.
"""

import os
import time

import torch
import triton

from cco_tools.perf import report as R
from cco_tools.perf.kernels import lsa as K
from cco_tools.perf.kernels import lsa_push as P
from cco_tools.perf.measure import Timing, spread_of, sweep
from cco_tools.perf.report import size_label


def programs_per_rank(world):
    """Programs per rank of the all-reduces (and LSA barriers per rank): each program waits on
    its peers', so all of every rank sharing a GPU must be resident at once."""
    return K.max_programs(triton.cdiv(world, torch.cuda.device_count()))


PUSH_VARIANTS = ("plain", "fast", "pdl")


def push_offsets(count, world, programs):
    """Where the PushAllReduce objects (PUSH_VARIANTS: plain, through its graph, launched with
    PDL) keep their buffers: past the two-shot's result area, which the suite's other kernels
    use in between, one after the other; and the window bytes all of it takes."""
    at, offset = {}, K.TwoShotAllReduce.window_bytes(count)
    for variant in PUSH_VARIANTS:
        at[variant] = offset = (offset + 255) // 256 * 256
        offset = P.PushAllReduce.window_bytes(count, world, programs, offset=offset)
    return at, offset


GRAPH_REPS = 100
EAGER_REPS = 400


class Anchors:
    """NCCL and torch SymmetricMemory on this rank, or `why` they cannot run here."""

    def __init__(self, rank, world, device, max_count):
        self.why = None
        if torch.cuda.device_count() < world:
            self.why = f"they need one GPU per rank ({world} ranks, {torch.cuda.device_count()} GPU(s))"
            return
        import torch.distributed as dist

        if not dist.is_initialized():
            if "MASTER_ADDR" not in os.environ or "MASTER_PORT" not in os.environ:
                self.why = "no torch.distributed rendezvous (MASTER_ADDR / MASTER_PORT unset)"
                return
            dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", device))
        from torch.distributed import _symmetric_memory as symm

        self.dist = dist
        self.group_name = dist.group.WORLD.group_name
        self.nccl_buf = torch.empty(max_count, device=f"cuda:{device}", dtype=torch.float32)
        self.symm_buf = symm.empty(max_count, device=f"cuda:{device}", dtype=torch.float32)
        symm.rendezvous(self.symm_buf, self.group_name)

    def fill(self, count, value):
        self.nccl_buf[:count].copy_(value)
        self.symm_buf[:count].copy_(value)

    def nccl(self, count):
        t = self.nccl_buf[:count]
        return lambda: self.dist.all_reduce(t)

    def one_shot(self, count):
        t = self.symm_buf[:count]
        return lambda: torch.ops.symm_mem.one_shot_all_reduce(t, "sum", self.group_name)

    def two_shot(self, count):
        t = self.symm_buf[:count]
        return lambda: torch.ops.symm_mem.two_shot_all_reduce_(t, "sum", self.group_name)

    def close(self):
        if self.why is None:
            self.dist.barrier()


def _per_launch_graph(group, fn, reps, trials):
    """Seconds per launch of `fn`, `reps` of them captured in one graph and replayed by every
    rank at once (the slowest rank counts), `trials` times (a Timing)."""
    fn()  # compiled, loaded and warmed outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    # A capture stream of this rank's device: torch's default one belongs to whichever device
    # captured first in the process (ranks as threads share it).
    with torch.cuda.graph(graph, stream=torch.cuda.Stream()):
        for _ in range(reps):
            fn()
    graph.replay()  # the first replay uploads the graph
    torch.cuda.synchronize()
    times = []
    for _ in range(trials):
        group.align()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    return group.slowest(Timing(times))


def _per_launch_eager(group, fn, reps, trials):
    """Seconds per launch of `fn` called `reps` times from a Python loop, wall clock, every
    rank at once (the slowest rank counts), `trials` times (a Timing)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(trials):
        group.align()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / reps)
    return group.slowest(Timing(times))


def run(ctx):
    group, progress, trials, opts = ctx.group, ctx.progress, ctx.options.trials, ctx.options
    n = group.world
    if not group.spread:
        progress("launch: skipped (needs one process per rank: --launch processes, or a launcher)")
        return
    rk = group.ranks[0]
    top = opts.allreduce_max_bytes
    anchors = Anchors(rk.rank, n, rk.device, top // 4)
    rows = ctx.report.suite(
        f"all-reduce per launch (float32 sum), {n} processes on {torch.cuda.device_count()} GPU(s)",
        [R.size(), R.count(), R.text("type", 7), R.text("launch", 9), R.figure("cco", "us"), R.spread(),
         R.figure("cco 2-shot", "us"), R.figure("cco push", "us"), R.figure("cco fast", "us"), R.figure("nccl", "us"),
         R.figure("symm 1-shot", "us"), R.figure("symm 2-shot", "us"), R.figure("cco best/best peer", "")],
        note="one launch per step; graph: launches captured in one CUDA graph and replayed; eager: a Python "
             "loop, wall clock; cco: the one-shot kernel; cco 2-shot: TwoShotAllReduce; cco push: PushAllReduce (no "
             "barrier: each element is its own flag); cco fast: PushAllReduce(graph=True), "
             "one launch captured once and replayed per call; graph+pdl: CCO's kernels launched with programmatic "
             "dependent launch (each starts while the one before it ends; the peers cannot), beside the peers' "
             "graph figures (repeated from the graph row); the ratio takes CCO's faster kernel" +
             ("" if anchors.why is None else f"; peers n/a: {anchors.why}"))
    programs = programs_per_rank(n)
    graph_reps = 20 if opts.quick else GRAPH_REPS
    eager_reps = 50 if opts.quick else EAGER_REPS
    for size in sweep(8192, top):
        progress("launch", size_label(size))
        count = size // 4
        mine = (torch.arange(count, device=f"cuda:{rk.device}", dtype=torch.float32) % 251) + rk.rank
        expected = (torch.arange(count, device=f"cuda:{rk.device}", dtype=torch.float32) % 251) * n + sum(range(n))
        rk.view(rk.rank, 0, count, torch.float32).copy_(mine)
        out = torch.empty(count, device=f"cuda:{rk.device}", dtype=torch.float32)
        torch.cuda.synchronize()
        group.align()
        at, _ = push_offsets(count, n, programs)
        kernels = {  # built by all ranks at once
            False: dict(cco=K.OneShotAllReduce(rk.dc, rk.win, out, count, n, programs, group.libs),
                        cco2=K.TwoShotAllReduce(rk.dc, rk.win, out, count, n, programs, group.libs),
                        push=P.PushAllReduce(rk.dc, rk.win, out, count, n, programs, group.libs, offset=at["plain"])),
            True: dict(cco=K.OneShotAllReduce(rk.dc, rk.win, out, count, n, programs, group.libs, pdl=True),
                       cco2=K.TwoShotAllReduce(rk.dc, rk.win, out, count, n, programs, group.libs, pdl=True),
                       push=P.PushAllReduce(rk.dc, rk.win, out, count, n, programs, group.libs, offset=at["pdl"],
                                            pdl=True)),
        }
        fast = P.PushAllReduce(rk.dc, rk.win, out, count, n, programs, group.libs, graph=True, offset=at["fast"])
        names = {"cco": "cco all-reduce", "cco2": "cco two-shot all-reduce", "push": "cco push all-reduce"}
        results = {}
        for mode, timer, reps, pdl in (("graph", _per_launch_graph, graph_reps, False),
                                       ("graph+pdl", _per_launch_graph, graph_reps, True),
                                       ("eager", _per_launch_eager, eager_reps, False)):
            row = {}
            for key, fn in kernels[pdl].items():
                out.zero_()
                row[key] = timer(group, fn, reps, trials)
                _check(out, expected, f"{names[key]} ({mode})", size)
            kernels[pdl]["push"].check()
            if mode == "eager":  # fast is itself a graph: a graph of it would time the same replay
                out.zero_()
                row["fast"] = timer(group, fast, reps, trials)
                _check(out, expected, "cco all-reduce (fast path)", size)
                fast.check()
            if anchors.why is None and not pdl:  # the peers launch without PDL: their graph row serves
                # NCCL and the two-shot sum in place, so the timed launches overflow to inf (at
                # the same speed); each is then checked once on a fresh input.
                for name, make, buf in (("nccl", anchors.nccl, anchors.nccl_buf), ("one", anchors.one_shot, None),
                                        ("two", anchors.two_shot, anchors.symm_buf)):
                    anchors.fill(count, mine)
                    fn = make(count)
                    row[name] = timer(group, fn, reps, trials)
                    anchors.fill(count, mine)
                    torch.cuda.synchronize()
                    group.align()
                    result = fn()
                    _check(result if buf is None else buf[:count], expected, f"the {name} peer's all-reduce", size)
            results[mode] = row
        for mode, row in results.items():
            timed = results[mode.split("+")[0]]  # graph+pdl against the peers' graph figures
            peers = [timed[k] for k in ("nccl", "one", "two") if k in timed]

            def us(k, row=row, timed=timed):  # graph+pdl shows the peers' graph figures beside CCO's
                source = row if k in row else timed
                return source[k] * 1e6 if k in source else None

            rows.append([size, count, "float32", mode, us("cco"), spread_of(row["cco"]), us("cco2"), us("push"),
                         us("fast"), us("nccl"), us("one"), us("two"),
                         min(row["cco"], row["cco2"], row["push"]) / min(peers) if peers else None])
    anchors.close()


def _check(got, expected, what, size):
    torch.cuda.synchronize()
    if not torch.equal(got, expected):
        raise RuntimeError(f"cco perf: {what} wrong at {size_label(size)}")
