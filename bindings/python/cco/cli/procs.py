"""Rank processes a benchmark starts itself: waited for together, so that one that fails
(or the deadline) ends the others instead of leaving them blocked in a rendezvous."""

import threading
import time


def kill_all(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()


def wait_all(procs, timeout, what):
    """(stdout, stderr) of every process once all exited 0. The first that exits non-zero, or
    `timeout` seconds, kills the rest and raises, naming the rank and its stderr."""
    outs = [(None, None)] * len(procs)

    def collect(i):
        try:
            outs[i] = procs[i].communicate()
        except (OSError, ValueError) as e:  # its pipes broke: the process is judged by its exit
            outs[i] = (None, f"reading its output failed: {e}")

    readers = [threading.Thread(target=collect, args=(i,), daemon=True) for i in range(len(procs))]
    for t in readers:
        t.start()
    deadline = time.monotonic() + timeout
    problem = None
    try:
        while problem is None and any(t.is_alive() for t in readers):
            failed = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
            if failed:
                problem = (failed[0], f"rank {failed[0]} failed (exit {procs[failed[0]].returncode})")
            elif time.monotonic() > deadline:
                problem = (None, f"ranks still running after {timeout} s")
            else:
                time.sleep(0.02)
    finally:
        kill_all(procs)
        for t in readers:
            t.join(10)
        for p in procs:
            try:
                p.wait(10)
            except Exception:  # noqa: BLE001 (still running after a kill: its exit stays unknown)
                pass
    if problem is None:
        failed = [i for i, p in enumerate(procs) if p.returncode != 0]
        if failed:
            problem = (failed[0], f"rank {failed[0]} failed (exit {procs[failed[0]].returncode})")
    if problem is not None:
        rank, why = problem
        err = outs[rank][1] if rank is not None else None
        raise RuntimeError(f"{what}: {why}" + (f":\n{err.strip()[-2000:]}" if err else ""))
    return outs
