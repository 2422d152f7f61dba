"""CCO's launcher: `python -m cco.launch -n N [--] script.py|program args...`
(or `-m module args...`)

Mints the unique id (this process hosts the rendezvous), starts N copies of the script
with CCO_RANK / CCO_WORLD_SIZE / CCO_LOCAL_RANK / CCO_UNIQUE_ID set, and waits. If one
rank fails, the others are stopped; the exit status is the first failure's.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

from cco.communicator import Communicator


def launch(n, argv, timeout=None, env=None):
    """Runs `argv` as ranks 0..n-1 (with `env` added to this environment); returns the
    exit status."""
    uid = Communicator.get_unique_id()
    procs = []
    for rank in range(n):
        rank_env = {**os.environ, **(env or {}), "CCO_RANK": str(rank), "CCO_WORLD_SIZE": str(n),
                    "CCO_LOCAL_RANK": str(rank), "CCO_UNIQUE_ID": uid.hex()}
        # A Python script runs under this interpreter; anything else (a C++ example) as it is.
        command = [sys.executable] + argv if argv[0].endswith(".py") or argv[0] == "-m" else argv
        procs.append(subprocess.Popen(command, env=rank_env))
    deadline = None if timeout is None else time.monotonic() + timeout
    status = 0
    # Every rank is polled each pass (a list, not a generator: any() over a generator stops at
    # the first rank still running, and a later rank's failure would go unseen).
    while any([p.poll() is None for p in procs]):
        failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
        late = deadline is not None and time.monotonic() > deadline
        if failed or late:
            status = failed[0] if failed else 124
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            break
        time.sleep(0.05)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return status or next((p.returncode for p in procs if p.returncode), 0)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m cco.launch", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--nproc", type=int, required=True, help="number of ranks")
    ap.add_argument("--timeout", type=float, default=None, help="seconds before the ranks are stopped")
    ap.add_argument("-m", dest="module", help="run a Python module as each rank (like python -m)")
    ap.add_argument("script", nargs=argparse.REMAINDER)
    opts = ap.parse_args(argv)
    script = opts.script[1:] if opts.script[:1] == ["--"] else opts.script
    if opts.module:
        script = ["-m", opts.module] + script
    if opts.nproc < 1 or not script:
        ap.error("need -n >= 1 and a script")
    return launch(opts.nproc, script, opts.timeout)


if __name__ == "__main__":
    sys.exit(main())
