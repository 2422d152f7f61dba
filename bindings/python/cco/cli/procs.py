"""Rank processes a benchmark starts itself: waited for together, so that one that fails
(or the deadline) ends the others instead of leaving them blocked in a rendezvous."""

import select
import threading
import time


def kill_all(procs):
    """Kills every process still running and reaps it (a killed one's exit is then known)."""
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        try:
            p.wait(10)
        except Exception:  # noqa: BLE001 (still running after a kill: its exit stays unknown)
            pass


def _tail(text, limit=2000):
    return text.strip()[-limit:] if text else ""


def await_line(procs, line, timeout, what):
    """Reads one line from each process's stdout and checks it is `line` (a handshake), all
    within `timeout` seconds; otherwise kills every process and raises with the stderr of the
    one that did not answer (its stderr must be a pipe)."""
    deadline = time.monotonic() + timeout
    for rank, p in enumerate(procs):
        got = None
        left = deadline - time.monotonic()
        if left > 0 and select.select([p.stdout], [], [], left)[0]:
            got = p.stdout.readline().strip()
        if got != line:
            kill_all(procs)
            try:
                _, err = p.communicate(timeout=5)
            except Exception:  # noqa: BLE001 (its pipes broke or it lingers: say what we know)
                err = None
            why = "timed out" if got is None else f"said {got!r}" if got else "exited"
            raise RuntimeError(f"{what}: rank {rank} did not start ({why})" + (f":\n{_tail(err)}" if err else ""))


def wait_all(procs, timeout, what):
    """(stdout, stderr) of every process once all exited 0. The first seen to exit non-zero,
    or `timeout` seconds, kills the rest and raises, naming that rank (the first to fail is
    the cause; the others often fail because it did) and its stderr, or every rank's on a
    timeout."""
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
    first_failed, timed_out = None, False
    try:
        while first_failed is None and any(t.is_alive() for t in readers):
            failed = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
            if failed:
                first_failed = failed[0]
            elif time.monotonic() > deadline:
                timed_out = True
                break
            else:
                time.sleep(0.005)
    finally:
        kill_all(procs)
        for t in readers:
            t.join(10)
    if timed_out:
        tails = "".join(f"\nrank {i}: {_tail(err, 500)}" for i, (_, err) in enumerate(outs) if err)
        raise RuntimeError(f"{what}: ranks still running after {timeout} s" + tails)
    if first_failed is None:
        first_failed = next((i for i, p in enumerate(procs) if p.returncode != 0), None)
    if first_failed is not None:
        err = outs[first_failed][1]
        raise RuntimeError(f"{what}: rank {first_failed} failed first (exit {procs[first_failed].returncode})" +
                           (f":\n{_tail(err)}" if err else ""))
    return outs
