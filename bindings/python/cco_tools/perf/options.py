# SPDX-License-Identifier: MIT
"""`cco perf`'s options: the command line, read once into a frozen Options with every derived
value (the platform, the suites, the sizes after --quick's caps) settled here; nothing changes
them afterwards."""

import argparse
import os
from dataclasses import dataclass

from cco.runtime import mps_serves
from cco_tools.perf.report import parse_size
from cco_tools.perf.suites import MODULES

GPU_SUITES = tuple(MODULES["cuda"])
CPU_SUITES = tuple(MODULES["cpu"])
# Suites that start processes of their own instead of using the job's ranks.
OWN_PROCESSES = ("host", "tcp", "ops")
TRIALS, QUICK_TRIALS = 5, 3


class UsageError(Exception):
    """Options that cannot run: said to the user, exit status 2."""


def add_arguments(p):
    p.add_argument("-n", "--ranks", type=int, default=0, help="ranks (default: 2, or the GPU count if larger)")
    p.add_argument("--suites", default="", help="comma-separated subset of: " + ", ".join(GPU_SUITES) +
                   " (on the cpu platform: " + ", ".join(CPU_SUITES) + ")")
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
                        "rank has a GPU of its own or an MPS daemon runs); ignored under a launcher, which decides")
    p.add_argument("--quick", action="store_true", help="few sizes and repetitions (smoke test)")
    p.add_argument("--ops-transports", default="lsa", metavar="LIST",
                   help="the ops suite's transports, comma-separated: lsa, gda, sdma (sdma: the rank processes "
                        "get CCO_ENABLE_SDMA=1)")
    p.add_argument("--trials", type=int, default=0,
                   help=f"timed runs of each figure; the table shows their median and spread "
                        f"(default {TRIALS}, {QUICK_TRIALS} with --quick)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                   help="the report as JSON: on stdout instead of the tables, or into FILE beside them")
    p.add_argument("--plot", default="", metavar="FILE.png",
                   help="also draw every table against its sizes, with its anchors (needs matplotlib)")
    p.add_argument("--trace", default="", metavar="DIR",
                   help="record the device-side trace of every device communicator (CCO_TRACE=DIR): one Chrome "
                        "trace JSON file per rank and device communicator in DIR; join them with "
                        "`cco trace merge DIR -o all.json`")
    p.add_argument("--targets", action="store_true",
                   help="judge the project's own targets on this run's figures (a table at the end)")
    # A rank process that `cco perf` started: where it writes its report for the parent.
    p.add_argument("--report-to", default=None, help=argparse.SUPPRESS)


def gpu_count():
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@dataclass(frozen=True)
class Options:
    argv: tuple              # the command line (`perf ...`), handed on to the rank processes
    platform: str            # cuda or cpu
    gpus: int                # visible GPUs (0 on the cpu platform)
    suites: tuple
    ranks: int               # asked for with -n; 0: the default
    ranks_as: str            # threads or processes (where no launcher decides)
    min_bytes: int
    max_bytes: int           # the put/get sweep's top, after the platform's and --quick's caps
    allreduce_ranks: int     # the all-reduce's ranks when ranks are threads
    allreduce_ranks_given: bool
    allreduce_max_bytes: int
    barrier_rounds: int      # LSA barrier rounds
    rounds: int              # round trips of a ping-pong, host barriers
    host_ranks: int
    host_window: int
    quick: bool
    trials: int
    json: str                # None: the tables; "-": JSON on stdout; else a file
    plot: str
    targets: bool
    trace: str               # CCO_TRACE's folder for the run ("": no trace)
    ops_transports: tuple    # the ops suite's transports
    report_to: str           # a rank process's report file (None elsewhere)

    @property
    def world(self):
        """Ranks of a job this process starts (threads or processes); a launcher's job has
        the launcher's count."""
        return self.ranks or (2 if self.platform == "cpu" else max(2, self.gpus))

    @property
    def json_on_stdout(self):
        return self.json == "-"

    @classmethod
    def from_args(cls, ns, argv):
        platform = ns.platform
        gpus = 0
        if platform != "cpu":
            gpus = gpu_count()
            platform = "cuda" if platform == "cuda" or gpus > 0 else "cpu"
        known = CPU_SUITES if platform == "cpu" else GPU_SUITES
        suites = tuple(s for s in ns.suites.split(",") if s) or known
        unknown = [s for s in suites if s not in known]
        if unknown:
            raise UsageError(f"unknown suite(s) {unknown} for the {platform} platform (have: {', '.join(known)})")
        paired = [s for s in suites if s not in OWN_PROCESSES]
        if ns.ranks < 0 or (ns.ranks == 1 and paired):
            raise UsageError(f"--ranks {ns.ranks}: the suites {', '.join(paired)} need 2 ranks or more")
        max_bytes = parse_size(ns.max_size)
        if platform == "cpu":  # host memory: the sweeps stop at 64 MiB (1 MiB quick)
            max_bytes = min(max_bytes, 1 << 20 if ns.quick else 64 << 20)
        elif ns.quick:
            max_bytes = min(max_bytes, 16 << 20)
        if ns.launch != "auto":
            ranks_as = ns.launch
        else:
            # One process per rank where every rank has a GPU of its own, or where MPS runs the
            # processes' kernels side by side. Ranks as threads of one MPS client share one pool
            # of hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS): a proxy's stream behind a
            # kernel that waits for it stalled the GDA suite's first proxied row on an H100.
            own_gpus = gpus >= 2 and (ns.ranks or gpus) <= gpus
            ranks_as = "processes" if platform != "cpu" and (own_gpus or mps_serves()) else "threads"
        ops_transports = tuple(t for t in ns.ops_transports.split(",") if t)
        odd = [t for t in ops_transports if t not in ("lsa", "gda", "sdma")]
        if odd or not ops_transports:
            raise UsageError(f"--ops-transports {ns.ops_transports!r}: name some of lsa, gda, sdma")
        given = list(argv)
        if "--report-to" in given:  # the parent's argument to this rank process, not the user's
            at = given.index("--report-to")
            del given[at:at + 2]
        return cls(
            argv=tuple(given), platform=platform, gpus=gpus, suites=suites, ranks=ns.ranks, ranks_as=ranks_as,
            min_bytes=parse_size(ns.min_size), max_bytes=max_bytes,
            allreduce_ranks=ns.allreduce_ranks or 4, allreduce_ranks_given=ns.allreduce_ranks is not None,
            allreduce_max_bytes=parse_size(ns.allreduce_max),
            barrier_rounds=min(ns.barrier_rounds, 2000) if ns.quick else ns.barrier_rounds,
            rounds=200 if ns.quick else 2000,
            host_ranks=min(ns.host_ranks, 4) if ns.quick else ns.host_ranks,
            host_window=parse_size(ns.host_window or ("64M" if platform == "cpu" else "1G")),
            quick=ns.quick, trials=ns.trials or (QUICK_TRIALS if ns.quick else TRIALS),
            json=ns.json, plot=ns.plot, targets=ns.targets, trace=os.path.abspath(ns.trace) if ns.trace else "",
            ops_transports=ops_transports, report_to=ns.report_to)
