"""`cco perf`: nccl-tests for CCO, with each figure's anchor measured in the same run.

On GPUs (cuda / hip platforms): ranks are threads of this process, one communicator each,
spread over the visible GPUs (several ranks per GPU share it: their kernels run
concurrently on separate streams, which processes on one GPU cannot do without MPS).
Suites: LSA put / get bandwidth (anchors: a raw-pointer twin kernel and the device-to-
device memcpy), LSA barrier latency per coop scope (anchor: a raw flag ping-pong), one-shot
all-reduce latency and bus bandwidth (anchor: torch's reduction of the same buffers).
Without a GPU it runs the host suites on the cpu platform.
"""

import os
import sys

from cco.cli.report import parse_size

GPU_SUITES = ("host", "put", "get", "barrier", "allreduce")
CPU_SUITES = ("host", "barrier", "put")


def add_parser(sub):
    p = sub.add_parser("perf", help="benchmark every transport on this machine's GPUs (or the cpu platform)")
    p.add_argument("-n", "--ranks", type=int, default=0, help="ranks (default: 2, or the GPU count if larger)")
    p.add_argument("--suites", default="", help="comma-separated subset of: " + ", ".join(GPU_SUITES))
    p.add_argument("--min-size", default="4K", help="smallest transfer (put/get)")
    p.add_argument("--max-size", default="256M", help="largest transfer (put/get)")
    p.add_argument("--allreduce-ranks", type=int, default=4, help="ranks of the all-reduce suite")
    p.add_argument("--allreduce-max", default="1M", help="largest all-reduce (bytes of float32)")
    p.add_argument("--barrier-rounds", type=int, default=20000)
    p.add_argument("--host-ranks", type=int, default=8, help="processes of the host suite")
    p.add_argument("--host-window", default="", help="window of the host suite (1G on GPUs, 64M on cpu)")
    p.add_argument("--platform", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--quick", action="store_true", help="few sizes and repetitions (smoke test)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=run)


def _gpu_available():
    try:
        import torch

        return torch.cuda.is_available() and torch.cuda.device_count() > 0
    except ImportError:
        return False


def run(opts):
    platform = opts.platform
    if platform == "auto":
        platform = "cuda" if _gpu_available() else "cpu"
    os.environ.setdefault("CCO_PLATFORM", platform)
    opts.min_bytes = parse_size(opts.min_size)
    opts.max_bytes = parse_size(opts.max_size)
    opts.allreduce_max_bytes = parse_size(opts.allreduce_max)
    if platform == "cpu":
        from cco.cli import perf_cpu as backend
        known = CPU_SUITES
    else:
        from cco.cli import perf_gpu as backend
        known = GPU_SUITES
    opts.suite_list = [s for s in opts.suites.split(",") if s] or list(known)
    unknown = [s for s in opts.suite_list if s not in known]
    if unknown:
        print(f"cco perf: unknown suite(s) {unknown} for the {platform} platform (have: {', '.join(known)})",
              file=sys.stderr)
        return 2
    report = backend.run(opts)
    if "host" in opts.suite_list:
        from cco.cli import perf_host

        window = parse_size(opts.host_window or ("64M" if platform == "cpu" else "1G"))
        ranks = min(opts.host_ranks, 4) if opts.quick else opts.host_ranks
        perf_host.run_suite(report, ranks, window, platform)
    if opts.json:
        print(report.to_json())
    else:
        report.print_table(sys.stdout)
    return 0
