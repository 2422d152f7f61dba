"""`cco perf`: nccl-tests for CCO, with each figure's anchor measured in the same run.

Where the ranks run (cli/ranks.py):
  - under a launcher (`python -m cco.launch`, torchrun, mpirun) this process joins the
    job as one rank and rank 0 prints the report;
  - otherwise, with one rank per GPU (`--launch processes`, the default on several GPUs),
    `cco perf` starts one process per rank itself and merges what they measured;
  - otherwise ranks are threads of this process, one communicator each, spread over the
    visible GPUs (several ranks per GPU run their kernels concurrently on separate
    streams, which processes on one GPU cannot do without MPS).
Suites: LSA put / get bandwidth (anchors: a raw-pointer twin kernel and the device-to-
device memcpy), LSA barrier latency per coop scope (anchor: a raw flag ping-pong), one-shot
all-reduce latency and bus bandwidth (anchor: torch's reduction of the same buffers), the
all-reduce per launch as users call it, graph and eager (anchors: NCCL, torch SymmetricMemory
one-shot and two-shot; one process per GPU), GDA
put+signal round trip and put bandwidth through the proxies (anchors: the flag ping-pong and
the memcpy between the two ranks), SDMA put bandwidth and put+signal round trip through the
copy-engine queues (anchors: the memcpy, the LSA put, the flag ping-pong), and the host
control plane. Without a GPU it runs the host suites on the cpu platform.
"""

import os
import sys
import time

from cco.cli.report import parse_size

GPU_SUITES = ("host", "put", "get", "barrier", "allreduce", "launch", "gda", "sdma")
CPU_SUITES = ("host", "barrier", "put", "tcp")


def add_parser(sub):
    p = sub.add_parser("perf", help="benchmark every transport on this machine's GPUs (or the cpu platform)")
    p.add_argument("-n", "--ranks", type=int, default=0, help="ranks (default: 2, or the GPU count if larger)")
    p.add_argument("--suites", default="", help="comma-separated subset of: " + ", ".join(GPU_SUITES))
    p.add_argument("--min-size", default="4K", help="smallest transfer (put/get)")
    p.add_argument("--max-size", default="256M", help="largest transfer (put/get)")
    p.add_argument("--allreduce-ranks", type=int, default=None,
                   help="ranks of the all-reduce suite when ranks are threads (default 4)")
    p.add_argument("--allreduce-max", default="1M", help="largest all-reduce (bytes of float32)")
    p.add_argument("--barrier-rounds", type=int, default=20000)
    p.add_argument("--host-ranks", type=int, default=8, help="processes of the host suite")
    p.add_argument("--host-window", default="", help="window of the host suite (1G on GPUs, 64M on cpu)")
    p.add_argument("--platform", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--launch", choices=["auto", "threads", "processes"], default="auto",
                   help="ranks as threads of this process, or one process each (auto: processes when every "
                        "rank has a GPU of its own); ignored under a launcher, which decides")
    p.add_argument("--quick", action="store_true", help="few sizes and repetitions (smoke test)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--plot", default="", metavar="FILE.png",
                   help="also draw every sweep against size, with its anchors (needs matplotlib)")
    p.set_defaults(run=run)


def _gpu_available():
    try:
        import torch

        return torch.cuda.is_available() and torch.cuda.device_count() > 0
    except ImportError:
        return False


def run(opts):
    started = time.monotonic()
    platform = opts.platform
    if platform == "auto":
        platform = "cuda" if _gpu_available() else "cpu"
    os.environ.setdefault("CCO_PLATFORM", platform)
    opts.min_bytes = parse_size(opts.min_size)
    opts.max_bytes = parse_size(opts.max_size)
    opts.allreduce_max_bytes = parse_size(opts.allreduce_max)
    opts.allreduce_ranks_given = opts.allreduce_ranks
    opts.allreduce_ranks = opts.allreduce_ranks or 4
    known = CPU_SUITES if platform == "cpu" else GPU_SUITES
    opts.suite_list = [s for s in opts.suites.split(",") if s] or list(known)
    unknown = [s for s in opts.suite_list if s not in known]
    if unknown:
        print(f"cco perf: unknown suite(s) {unknown} for the {platform} platform (have: {', '.join(known)})",
              file=sys.stderr)
        return 2
    from cco.runtime import launched

    joined = launched()
    if joined is None and _one_process_per_rank(opts, platform):
        return _start_processes(opts, platform, started)
    if platform == "cpu":
        from cco.cli import perf_cpu as backend
    else:
        from cco.cli import perf_gpu as backend
    leads = joined is None or joined[0] == 0  # the process that prints
    # The leading process prints every row as it is measured (a rank that `cco perf` started
    # prints through its parent's terminal); --json prints the whole report at the end.
    live = sys.stdout if leads and not opts.json else None
    if joined is None:
        report = backend.run(opts, live=live)
    else:
        rank, world, uid = joined
        if opts.ranks and opts.ranks != world:
            print(f"cco perf: the launcher started {world} ranks; --ranks {opts.ranks} is ignored", file=sys.stderr)
        if platform != "cpu":
            _pick_gpu(rank)
            if rank == 0:
                _warn_about_shared_gpus(opts, world)
        report = backend.run(opts, (rank, uid), world, live=live)
    if "host" in opts.suite_list:
        if joined is None:
            _host_suite(report, opts, platform)
        elif leads and REPORT_FILE not in os.environ:
            print("cco perf: the host suite runs only when cco perf starts the ranks itself", file=sys.stderr)
    if leads:
        _emit(report, opts, started)
    return 0


# Where the rank-0 process that `cco perf` started writes its report for the parent.
REPORT_FILE = "CCO_PERF_REPORT"


def _one_process_per_rank(opts, platform):
    if opts.launch != "auto":
        return opts.launch == "processes"
    if platform == "cpu":
        return False
    gpus = _gpu_count()
    return gpus >= 2 and (opts.ranks or gpus) <= gpus


def _start_processes(opts, platform, started):
    """One process per rank through CCO's launcher; rank 0 hands its report back here,
    where the host suite (which starts processes of its own) runs afterwards."""
    import json
    import tempfile

    from cco.cli.report import Report
    from cco.launch import launch

    world = max(2, opts.ranks or (0 if platform == "cpu" else _gpu_count()))
    with tempfile.TemporaryDirectory(prefix="cco-perf-") as tmp:
        path = os.path.join(tmp, "report.json")
        # MASTER_ADDR / MASTER_PORT: the torch.distributed rendezvous of the peers measured
        # beside CCO (suite "launch"); the launcher's ranks are RANK / WORLD_SIZE there.
        env = {REPORT_FILE: path, "CCO_PLATFORM": platform, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}
        status = launch(world, ["-m", "cco.cli", *opts.argv], env=env)
        if status != 0:
            print(f"cco perf: a rank failed (exit {status})", file=sys.stderr)
            return status
        with open(path) as f:
            report = Report.from_dict(json.load(f))
    if not opts.json:
        report.go_live(sys.stdout)  # rank 0 printed its suites; the host suite's rows follow
    if "host" in opts.suite_list:
        _host_suite(report, opts, platform)
    _emit(report, opts, started)
    return 0


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _host_suite(report, opts, platform):
    from cco.cli import perf_host

    window = parse_size(opts.host_window or ("64M" if platform == "cpu" else "1G"))
    ranks = min(opts.host_ranks, 4) if opts.quick else opts.host_ranks
    perf_host.run_suite(report, ranks, window, platform)


def _emit(report, opts, started):
    """The end of a run: the JSON report, or the table's closing line (its rows are out)."""
    path = os.environ.get(REPORT_FILE)
    if path:  # a rank that `cco perf` started: the parent finishes the report
        with open(path, "w") as f:
            f.write(report.to_json())
    elif opts.json:
        print(report.to_json())
    else:
        print(f"\ncco perf: {len(report.suites)} tables in {time.monotonic() - started:.1f} s", flush=True)
    if opts.plot and not path:
        from cco.cli.plot import plot

        plot(report, opts.plot)
        print(f"cco perf: drew {opts.plot}", file=sys.stderr)


def _warn_about_shared_gpus(opts, world):
    """Processes that share a GPU take turns on it unless MPS runs: kernels that wait
    for each other (barriers, ping-pong) then measure the time slices."""
    gpus = _gpu_count()
    mps = os.environ.get("CUDA_MPS_PIPE_DIRECTORY") or os.path.exists("/tmp/nvidia-mps/control")
    if world > gpus and not mps:
        print(f"cco perf: {world} processes share {gpus} GPU(s) and no MPS daemon was found: their kernels "
              "time-slice, so barrier figures will be slow (start nvidia-cuda-mps-control -d, or use "
              "--launch threads)", file=sys.stderr)
    if "allreduce" in opts.suite_list and opts.allreduce_ranks_given not in (None, world):
        print(f"cco perf: ranks are processes, so the all-reduce runs on all {world} of them "
              f"(--allreduce-ranks applies to threads)", file=sys.stderr)


def _gpu_count():
    import torch

    return torch.cuda.device_count()


def _pick_gpu(rank):
    import torch

    from cco.runtime import local_rank

    torch.cuda.set_device(local_rank(rank) % _gpu_count())
