# SPDX-License-Identifier: MIT
"""CCO's launcher: `cco launch -n N [--] script.py|program args...` (or `-m module args...`),
the same as `python -m cco.launch ...`.

Mints the unique id (this process hosts the rendezvous), starts N copies of the script
with CCO_RANK / CCO_WORLD_SIZE / CCO_LOCAL_RANK / CCO_UNIQUE_ID set (and, under MPS, the
CUDA_DEVICE_MAX_CONNECTIONS of cco.runtime.mps_connections where none is set), and waits. Each line
the ranks print comes out led by "[rank r] " (--no-prefix: as printed). SIGINT, SIGTERM and
SIGHUP are forwarded to the ranks. If one rank fails, the others are stopped, the failed rank
is named, and the exit status is its own (128 + N for a death by signal N; 124 after
--timeout).
"""

import argparse
import os
import sys

from cco._supervisor import INHERIT, PREFIX, RankProcesses
from cco.runtime import mps_connections


def start(n, argv, env=None, stdout=PREFIX, stderr=PREFIX):
    """Starts `argv` as ranks 0..n-1 (with `env` added to this environment) and returns their
    RankProcesses (cco._supervisor), to wait for. A Python script or `-m module` runs under
    this interpreter; anything else (a C++ example) as it is."""
    from cco.communicator import Communicator

    uid = Communicator.get_unique_id()
    command = [sys.executable] + list(argv) if argv[0].endswith(".py") or argv[0] == "-m" else list(argv)
    common = {**os.environ, **(env or {})}
    connections = mps_connections(common, n)  # under MPS: the ranks' hardware work queues
    if connections:
        common["CUDA_DEVICE_MAX_CONNECTIONS"] = connections
    envs = [{**common, "CCO_RANK": str(rank), "CCO_WORLD_SIZE": str(n), "CCO_LOCAL_RANK": str(rank),
             "CCO_UNIQUE_ID": uid.hex()} for rank in range(n)]
    return RankProcesses([command] * n, envs, stdout=stdout, stderr=stderr)


def launch(n, argv, timeout=None, env=None, prefix=True):
    """Runs `argv` as ranks 0..n-1 (with `env` added to this environment); returns the exit
    status, after saying on stderr which rank failed."""
    mode = PREFIX if prefix else INHERIT
    with start(n, argv, env, stdout=mode, stderr=mode) as ranks:
        outcome = ranks.wait(timeout)
    problem = outcome.describe("cco launch")
    if problem:
        print(problem + ("" if n == 1 or outcome.signal else "; the other ranks were stopped"), file=sys.stderr)
    return outcome.status


def main(argv=None, prog="python -m cco.launch"):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--nproc", type=int, required=True, help="number of ranks")
    ap.add_argument("--timeout", type=float, default=None, help="seconds before the ranks are stopped")
    ap.add_argument("--no-prefix", action="store_true",
                    help="the ranks' output as they print it, without '[rank r] ' (one rank's JSON to a file)")
    ap.add_argument("-m", dest="module", help="run a Python module as each rank (like python -m)")
    ap.add_argument("script", nargs=argparse.REMAINDER)
    opts = ap.parse_args(argv)
    script = opts.script[1:] if opts.script[:1] == ["--"] else opts.script
    if opts.module:
        script = ["-m", opts.module] + script
    if opts.nproc < 1 or not script:
        ap.error("need -n >= 1 and a script")
    return launch(opts.nproc, script, opts.timeout, prefix=not opts.no_prefix)


if __name__ == "__main__":
    sys.exit(main())
