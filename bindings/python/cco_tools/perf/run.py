# SPDX-License-Identifier: MIT
"""`cco perf`: nccl-tests for CCO, with each figure's anchor measured in the same run.

Where the ranks run (perf/ranks.py):
  - under a launcher (`cco launch`, torchrun, mpirun) this process joins the job as one
    rank and rank 0 prints the report;
  - otherwise, with one rank per GPU or under MPS (`--launch processes`, the default there),
    `cco perf` starts one process per rank itself (the supervisor of cco.launch); rank 0
    prints its tables as it measures them and writes its report into the file the parent
    names (--report-to), and the parent adds what it measures itself (the host suite);
  - otherwise ranks are threads of this process, one communicator each, spread over the
    visible GPUs (several ranks per GPU run their kernels concurrently on separate
    streams, which processes on one GPU cannot do without MPS).
Suites (perf/suites/, one module each): LSA put / get bandwidth (anchors: a raw-pointer twin
kernel and the device-to-device memcpy), LSA barrier latency per coop scope (anchor: a raw
flag ping-pong), one-shot all-reduce latency and bus bandwidth (anchor: torch's reduction of
the same buffers), the all-reduce per launch as users call it, graph and eager (anchors: NCCL,
torch SymmetricMemory one-shot and two-shot; one process per GPU), GDA put+signal round trip
and put bandwidth through the proxies (anchors: the flag ping-pong and the memcpy between the
two ranks), SDMA put bandwidth and put+signal round trip through the copy-engine queues
(anchors: the memcpy, the LSA put, the flag ping-pong), and the host control plane. Without a
GPU it runs the host suites on the cpu platform.
"""

import json
import os
import socket
import sys
import tempfile
import time

from cco.runtime import mps_serves
from cco_tools.perf import suites as S
from cco_tools.perf.meta import run_meta
from cco_tools.perf.options import OWN_PROCESSES
from cco_tools.perf.report import Report

LEGEND = ("sizes in bytes; each figure is the median of {trials} timed runs (a run: many operations, "
          "the slowest rank's time); spread: (slowest - fastest run) / median of the figure before it, in %")


def main(options):
    """Runs `cco perf` as `options` say; the exit status."""
    started = time.monotonic()
    os.environ.setdefault("CCO_PLATFORM", options.platform)
    if options.trace:  # read by every device communicator made from here on, in this process and its children
        os.makedirs(options.trace, exist_ok=True)
        os.environ["CCO_TRACE"] = options.trace
    from cco.runtime import launched

    joined = launched()
    if joined is None and options.ranks_as == "processes":
        return _start_processes(options, started)
    leads = joined is None or joined[0] == 0  # the process that prints
    # The leading process prints every row as it is measured (a rank that `cco perf` started
    # prints through its parent's terminal); JSON on stdout is the whole report at the end.
    live = sys.stdout if leads and not options.json_on_stdout else None
    progress = S.Progress(quiet=not leads)
    if joined is not None:
        rank, world, _ = joined
        if options.ranks and options.ranks != world:
            print(f"cco perf: the launcher started {world} ranks; --ranks {options.ranks} is ignored", file=sys.stderr)
        if options.platform != "cpu":
            _pick_gpu(rank)
            if rank == 0:
                _warn_about_shared_gpus(options, world)
    measure = _cpu if options.platform == "cpu" else _gpu
    report = measure(options, joined, live, progress)
    if joined is None:
        _run_own_process_suites(options, report, progress)
    elif leads and options.report_to is None:
        for name in _own_process_suites(options):
            print(f"cco perf: the {name} suite runs only when cco perf starts the ranks itself", file=sys.stderr)
    if leads:
        _finish(report, options, started)
    return 0


def _header(options, joined, world):
    how = "launched processes" if joined else "threads"
    if options.platform == "cpu":
        return f"cco perf: cpu platform (host memory), {world} ranks as {how}", how
    import torch
    import triton

    return (f"cco perf: {torch.cuda.device_count()} x {torch.cuda.get_device_properties(0).name}, "
            f"triton {triton.__version__}, torch {torch.__version__}, ranks as {how}"), how


def _report(options, joined, world, live):
    header, how = _header(options, joined, world)
    device = None
    if options.platform != "cpu":
        import torch

        device = torch.cuda.current_device()
    meta = run_meta(options.argv, "cpu" if options.platform == "cpu" else "gpu", world, how, device=device,
                    trials=options.trials)
    return Report(header, meta, live=live, legend=LEGEND.format(trials=options.trials))


def _cpu(options, joined, live, progress):
    """The cpu platform: host memory standing in for device memory."""
    from cco_tools.perf.ranks import CpuRank, Ranks

    world = joined[1] if joined else options.world
    report = _report(options, joined, world, live)
    if "tcp" in options.suites and joined is None:  # it starts its own two processes
        S.module("cpu", "tcp").run(S.Context(options, report, progress=progress))
    paired = [name for name in ("barrier", "put") if name in options.suites]
    if paired:
        top = options.max_bytes
        member = (joined[0], joined[2]) if joined else None
        with Ranks(world, lambda r, uid: CpuRank(r, world, uid, top), member) as group:
            for name in paired:
                S.module("cpu", name).run(S.Context(options, report, group, progress))
    return report


def _gpu(options, joined, live, progress):
    """GPUs: every kernel of a measurement is captured in a CUDA graph per rank and the graphs
    are replayed at once, so launch overhead is out of the figures and ranks overlap. Each
    suite builds work only for the ranks held here (`group.on`) and makes the same group
    calls on every process, so launched processes stay in step."""
    from cco_tools.perf.ranks import RankGroup
    from cco_tools.perf.suites import launch as per_launch_suite

    world = joined[1] if joined else options.world
    report = _report(options, joined, world, live)
    suites = options.suites
    # Launched processes are one job of `world` ranks: one group serves every suite. On
    # threads the all-reduce has its own rank count (--allreduce-ranks).
    shared = joined is not None or options.allreduce_ranks == world
    window = 2 * options.max_bytes
    barriers = 1
    per_launch = joined is not None and "launch" in suites  # one process per rank only
    if (shared and "allreduce" in suites) or per_launch:
        window, barriers = max(window, options.allreduce_max_bytes), per_launch_suite.programs_per_rank(world)
    if per_launch:  # the two-shot's result area, and the push kernel's buffers, follow the input
        count = options.allreduce_max_bytes // 4
        window = max(window, per_launch_suite.push_offsets(count, world, per_launch_suite.programs_per_rank(world))[1])
    grouped = [name for name in ("put", "get", "barrier", "gda", "sdma") if name in suites]
    if shared and "allreduce" in suites:
        grouped.append("allreduce")
    if per_launch:
        grouped.append("launch")
    if grouped:
        member = (joined[0], joined[2]) if joined else None
        with RankGroup(world, window, barriers, member, gda="gda" in suites, sdma="sdma" in suites) as group:
            for name in grouped:
                S.module("cuda", name).run(S.Context(options, report, group, progress))
    if "launch" in suites and not per_launch:
        progress("launch: skipped (one process per rank only: --launch processes, torchrun or cco launch)")
    if not shared and "allreduce" in suites:
        n = options.allreduce_ranks
        with RankGroup(n, options.allreduce_max_bytes, per_launch_suite.programs_per_rank(n)) as group:
            S.module("cuda", "allreduce").run(S.Context(options, report, group, progress))
    return report


def _start_processes(options, started):
    """One process per rank through CCO's launcher; rank 0 writes its report into a file
    named here, and the host suite (which starts processes of its own) runs here afterwards."""
    from cco._supervisor import INHERIT, PREFIX
    from cco.launch import start

    world = options.world
    with tempfile.TemporaryDirectory(prefix="cco-perf-") as tmp:
        path = os.path.join(tmp, "report.json")
        # MASTER_ADDR / MASTER_PORT: the torch.distributed rendezvous of the peers measured
        # beside CCO (suite "launch"); the launcher's ranks are RANK / WORLD_SIZE there.
        env = {"CCO_PLATFORM": options.platform, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}
        # Rank 0's tables come through as it prints them; progress and errors name their rank.
        with start(world, ["-m", "cco_tools", *options.argv, "--report-to", path], env, stdout=INHERIT,
                   stderr=PREFIX) as ranks:
            outcome = ranks.wait()
        if outcome.status != 0:
            print(outcome.describe("cco perf"), file=sys.stderr)
            return outcome.status
        with open(path, encoding="utf-8") as f:
            report = Report.from_dict(json.load(f))
    if not options.json_on_stdout:
        report.go_live(sys.stdout)  # rank 0 printed its tables; those of the suites with processes of their own follow
    _run_own_process_suites(options, report, S.Progress())
    _finish(report, options, started)
    return 0


def _own_process_suites(options):
    """The chosen suites that start rank processes of their own (the host suite, the fused
    operators'), in the order they run: once per job, in the process `cco perf` was started as
    (tcp, on the cpu platform, runs with the others)."""
    return [name for name in OWN_PROCESSES
            if name != "tcp" and name in options.suites and name in S.MODULES[options.platform]]


def _run_own_process_suites(options, report, progress):
    for name in _own_process_suites(options):
        S.module(options.platform, name).run(S.Context(options, report, progress=progress))


def _finish(report, options, started):
    """The end of a run: the targets (--targets), then the JSON report or the closing line
    (the tables are out), and the plot."""
    if options.report_to:  # a rank that `cco perf` started: the parent finishes the report
        with open(options.report_to, "w", encoding="utf-8") as f:
            f.write(report.to_json())
        return
    if options.targets:
        from cco_tools.perf import targets

        targets.add_table(report)
    if options.json_on_stdout:
        print(report.to_json())
    else:
        if options.json:
            with open(options.json, "w", encoding="utf-8") as f:
                f.write(report.to_json())
        print(f"\ncco perf: {len(report.suites)} tables in {time.monotonic() - started:.1f} s", flush=True)
    if options.plot:
        from cco_tools.perf.plot import plot

        plot(report, options.plot)
        print(f"cco perf: drew {options.plot}", file=sys.stderr)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _warn_about_shared_gpus(options, world):
    """Processes that share a GPU take turns on it unless MPS runs: kernels that wait
    for each other (barriers, ping-pong) then measure the time slices."""
    gpus = options.gpus
    if world > gpus and not mps_serves():
        print(f"cco perf: {world} processes share {gpus} GPU(s) and no MPS daemon was found: their kernels "
              "time-slice, so barrier figures will be slow (start nvidia-cuda-mps-control -d, or use "
              "--launch threads)", file=sys.stderr)
    if "allreduce" in options.suites and options.allreduce_ranks_given and options.allreduce_ranks != world:
        print(f"cco perf: ranks are processes, so the all-reduce runs on all {world} of them "
              f"(--allreduce-ranks applies to threads)", file=sys.stderr)


def _pick_gpu(rank):
    import torch

    from cco.runtime import local_rank

    torch.cuda.set_device(local_rank(rank) % torch.cuda.device_count())
