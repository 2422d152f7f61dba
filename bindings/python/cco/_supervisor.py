# SPDX-License-Identifier: MIT
"""Rank processes started together and waited for together: `cco.launch` runs its ranks here,
and so does the `cco perf` benchmark (its own rank processes and the helpers of its suites).

One rank that fails ends the others (they would otherwise wait in a rendezvous for a peer
that is gone), as does the deadline; SIGINT, SIGTERM and SIGHUP sent to this process are
forwarded to every rank still running. Each rank's stdout and stderr is, as the caller asks:

  PREFIX   copied here line by line, each line led by "[rank r] " (torchrun's style), so the
           output of several ranks stays readable;
  CAPTURE  kept for the caller (a handshake line, a result, the tail of an error);
  INHERIT  this process's own stream, untouched.

The ranks run in sessions of their own: a Ctrl-C at the terminal reaches this process only,
which forwards it once, instead of every rank getting it twice.
"""

import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

PREFIX, CAPTURE, INHERIT = "prefix", "capture", "inherit"
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
TIMED_OUT = 124  # timeout(1)'s status

_print_lock = threading.Lock()  # whole lines from several ranks, never interleaved characters


def exit_status(returncode):
    """A shell's exit status for a Popen returncode: 128 + N for a death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _tail(text, limit=2000):
    return text.strip()[-limit:] if text else ""


class _Stream:
    """One pipe of one rank, read to its end by a thread of its own."""

    def __init__(self, pipe, mode, rank, sink):
        self.mode = mode
        self.lines = []  # what CAPTURE kept
        self.ended = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(pipe, mode, f"[rank {rank}] ", sink), daemon=True)
        self._thread.start()

    def _read(self, pipe, mode, prefix, sink):
        try:
            for line in pipe:
                if mode == PREFIX:
                    if sink is None:
                        continue  # drained, so that the rank never blocks on a full pipe
                    try:
                        with _print_lock:
                            sink.write(prefix + (line if line.endswith("\n") else line + "\n"))
                            sink.flush()
                    except (OSError, ValueError):  # our own reader went away (cco launch ... | head)
                        sink = None
                else:
                    with self._changed:
                        self.lines.append(line)
                        self._changed.notify_all()
        except (OSError, ValueError) as e:  # the pipe broke: the rank is judged by its exit
            with self._changed:
                self.lines.append(f"(reading its output failed: {e})\n")
        finally:
            with self._changed:
                self.ended = True
                self._changed.notify_all()

    def first_line(self, deadline):
        """The first line not yet taken (removed from what is kept), "" at the end of the
        stream, None at the deadline."""
        with self._changed:
            while not self.lines and not self.ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)
            return self.lines.pop(0) if self.lines else ""

    def text(self, timeout):
        """What CAPTURE kept, once the stream ended (None for a PREFIXed stream)."""
        self._thread.join(timeout)
        with self._changed:
            return "".join(self.lines) if self.mode == CAPTURE else None


@dataclass
class Outcome:
    """How the ranks ended. status: 0; the first failed rank's exit status (128 + N for
    signal N); TIMED_OUT past the deadline; 128 + N after signal N reached this process.
    outputs: (stdout, stderr) of each rank, the text of the streams CAPTUREd, else None."""

    status: int = 0
    failed_rank: int = None
    timed_out: bool = False
    signal: int = None
    timeout: float = None
    outputs: list = field(default_factory=list)

    def describe(self, what):
        """One sentence on what went wrong (None when nothing did), naming the rank."""
        if self.signal is not None:
            return f"{what}: stopped by {signal.Signals(self.signal).name}"
        if self.timed_out:
            tails = "".join(f"\nrank {i}: {_tail(err, 500)}" for i, (_, err) in enumerate(self.outputs) if err)
            return f"{what}: ranks still running after {self.timeout} s" + tails
        if self.failed_rank is not None:
            err = self.outputs[self.failed_rank][1] if self.outputs else None
            return (f"{what}: rank {self.failed_rank} failed first (exit {self.status})" +
                    (f":\n{_tail(err)}" if err else ""))
        return None

    def check(self, what):
        """The outputs when every rank exited 0; otherwise RuntimeError(describe(what))."""
        problem = self.describe(what)
        if problem:
            raise RuntimeError(problem)
        return self.outputs


class RankProcesses:
    """`commands[r]` run as rank r with environment `envs[r]` (None: this one's), all at once.

    Use as a context manager: leaving it stops the ranks still running and puts this
    process's signal handlers back. stdin=True gives each rank a pipe (send_line)."""

    def __init__(self, commands, envs=None, stdout=PREFIX, stderr=PREFIX, stdin=False):
        self.popens = []
        self._streams = []  # (stdout, stderr) of each rank: a _Stream, or None
        self._stopped = set()  # the ranks stop() ended (their deaths are not failures of their own)
        self._signalled = None
        self._previous = {}
        self._forward_signals()
        try:
            for rank, command in enumerate(commands):
                self._start(rank, command, None if envs is None else envs[rank], stdout, stderr, stdin)
        except BaseException:
            self.close()
            raise

    def _start(self, rank, command, env, stdout, stderr, stdin):
        piped = {PREFIX: subprocess.PIPE, CAPTURE: subprocess.PIPE, INHERIT: None}
        p = subprocess.Popen(command, env=env, stdout=piped[stdout], stderr=piped[stderr],
                             stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, text=True, errors="replace",
                             start_new_session=True)
        self.popens.append(p)
        self._streams.append(tuple(None if mode == INHERIT else _Stream(pipe, mode, rank, sink)
                                   for pipe, mode, sink in ((p.stdout, stdout, sys.stdout),
                                                            (p.stderr, stderr, sys.stderr))))

    # --- signals ---------------------------------------------------------------------------
    def _forward_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; a launch from a thread forwards nothing
        for signum in FORWARDED_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, frame):
        self._signalled = signum
        for p in self.popens:
            if p.poll() is None:
                p.send_signal(signum)

    def _restore_signals(self):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    # --- talking to the ranks --------------------------------------------------------------
    def await_line(self, line, timeout, what):
        """Reads one line of each rank's CAPTUREd stdout and checks that it is `line` (a
        handshake), all within `timeout` seconds; otherwise stops every rank and raises,
        naming the rank that did not answer, with its stderr when that is CAPTUREd."""
        deadline = time.monotonic() + timeout
        for rank, (out, err) in enumerate(self._streams):
            got = out.first_line(deadline)
            if self._signalled is not None:
                self.stop()
                raise RuntimeError(f"{what}: stopped by {signal.Signals(self._signalled).name}")
            got = got if got is None else got.strip()
            if got != line:
                why = "timed out" if got is None else f"said {got!r}" if got else "exited"
                self.stop()
                text = err.text(5) if err is not None else None
                raise RuntimeError(f"{what}: rank {rank} did not start ({why})" + (f":\n{_tail(text)}" if text else ""))

    def send_line(self, text):
        """`text` and a newline to every rank's stdin."""
        for p in self.popens:
            p.stdin.write(text + "\n")
            p.stdin.flush()

    # --- the end ---------------------------------------------------------------------------
    def wait(self, timeout=None, grace=10.0):
        """Waits for every rank. The first that exits non-zero, the deadline or a forwarded
        signal ends the others (SIGTERM, then SIGKILL after `grace` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        outcome = Outcome(timeout=timeout)
        # Every rank is polled each pass (a list, not a generator: any() over a generator stops
        # at the first rank still running, and a later rank's failure would go unseen).
        while any([p.poll() is None for p in self.popens]):
            failed = [r for r, p in enumerate(self.popens) if p.returncode not in (None, 0)]
            if failed or self._signalled is not None:
                break
            if deadline is not None and time.monotonic() > deadline:
                outcome.timed_out = True
                break
            time.sleep(0.01)
        if self._signalled is not None:  # they have the signal too: a while to end on their own
            end = time.monotonic() + grace
            while time.monotonic() < end and any([p.poll() is None for p in self.popens]):
                time.sleep(0.01)
        self.stop(grace)
        failed = self._first_failure()
        if self._signalled is not None:
            outcome.signal = self._signalled
            outcome.status = 128 + self._signalled
        elif outcome.timed_out:
            outcome.status = TIMED_OUT
        elif failed is not None:
            outcome.failed_rank, outcome.status = failed, exit_status(self.popens[failed].returncode)
        outcome.outputs = [tuple(s.text(10) if s is not None else None for s in pair) for pair in self._streams]
        return outcome

    def _first_failure(self):
        """The rank that failed first: of those that failed on their own (a rank this class
        stopped shows a death by SIGTERM or SIGKILL, which is the others' consequence), the
        lowest; else the lowest that failed at all."""
        failed = [r for r, p in enumerate(self.popens) if p.returncode not in (None, 0)]
        own = [r for r in failed if r not in self._stopped]
        return (own or failed or [None])[0]

    def stop(self, grace=10.0):
        """Ends every rank still running (SIGTERM, then SIGKILL after `grace` seconds) and
        reaps it, so that its exit status is known."""
        running = [r for r, p in enumerate(self.popens) if p.poll() is None]
        self._stopped.update(running)
        for r in running:
            self.popens[r].terminate()
        end = time.monotonic() + grace
        for r in running:
            try:
                self.popens[r].wait(max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.popens[r].kill()
                try:
                    self.popens[r].wait(10)
                except subprocess.TimeoutExpired:  # unkillable (in the kernel): its exit stays unknown
                    pass

    def close(self):
        self.stop()
        self._restore_signals()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False
