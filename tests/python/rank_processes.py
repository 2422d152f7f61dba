# SPDX-License-Identifier: MIT
"""Ranks as real processes for the Python host tests (the twin of tests/host/multiprocess).

run_ranks forks one child per rank. Rank 0 mints the unique id and hands it to the
others, pickled, through pipes, so the id's trip through pickle is part of every test
and the parent never starts the rendezvous thread (it forks with no thread running).
Each child runs body(rank, nranks, uid) and reports its return value or its traceback;
the parent waits with a deadline and kills stragglers, so a hang fails the test instead
of stalling the run.
"""

import multiprocessing
import os
import pickle
import time
import traceback
from multiprocessing.connection import wait

from cco import Communicator

# Set in every child before its first CCO call: the cpu platform, and bounded waits well
# below the test deadline.
RANK_ENV = {"CCO_PLATFORM": "cpu", "CCO_TIMEOUT_MS": "10000"}


class RankFailure(AssertionError):
    pass


def _child(rank, nranks, body, env, uid_readers, uid_writers, report):
    os.environ.update(env)  # before the first CCO call of this process reads it
    try:
        if rank == 0:
            uid = Communicator.get_unique_id()
            for writer in uid_writers[1:]:
                writer.send_bytes(pickle.dumps(uid))
        else:
            for writer in uid_writers:  # so rank 0 dying reads as EOF here, not as a hang
                writer.close()
            uid = pickle.loads(uid_readers[rank].recv_bytes())
        outcome = ("ok", body(rank, nranks, uid))
    except BaseException:  # noqa: B036 - anything a rank raises is the test's verdict
        outcome = ("error", traceback.format_exc())
    try:
        report.send(outcome)
    except Exception:  # an unpicklable return value is a test bug: say so
        report.send(("error", "rank returned an unpicklable value:\n" + traceback.format_exc()))
    report.close()


def run_ranks_raw(nranks, body, timeout=60, env=None):
    """Per rank: ("ok", value), ("error", traceback), ("exit", code) or ("hung", None)."""
    env = {**RANK_ENV, **(env or {})}
    ctx = multiprocessing.get_context("fork")
    uid_pipes = [ctx.Pipe(duplex=False) for _ in range(nranks)]
    report_pipes = [ctx.Pipe(duplex=False) for _ in range(nranks)]
    processes = [
        ctx.Process(
            target=_child,
            args=(rank, nranks, body, env, [r for r, _ in uid_pipes], [w for _, w in uid_pipes], report_pipes[rank][1]),
            daemon=True,
        )
        for rank in range(nranks)
    ]
    for p in processes:
        p.start()
    for reader, writer in uid_pipes:
        reader.close()
        writer.close()
    for _, writer in report_pipes:
        writer.close()

    outcomes = [None] * nranks
    readers = {report_pipes[rank][0]: rank for rank in range(nranks)}
    deadline = time.monotonic() + timeout
    while readers and time.monotonic() < deadline:
        for reader in wait(list(readers), timeout=max(0.0, deadline - time.monotonic())):
            rank = readers.pop(reader)
            try:
                outcomes[rank] = reader.recv()
            except EOFError:  # died without a word: judged by its exit code below
                pass
    for rank, p in enumerate(processes):
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()
            outcomes[rank] = ("hung", None)
        elif outcomes[rank] is None or (p.exitcode != 0 and outcomes[rank][0] == "ok"):
            outcomes[rank] = ("exit", p.exitcode)  # no report, or a crash after reporting
    return outcomes


def run_ranks(nranks, body, timeout=60, env=None):
    """Runs body on nranks processes; returns their return values, or fails with every rank's story."""
    outcomes = run_ranks_raw(nranks, body, timeout, env)
    failures = [f"rank {rank}: {kind}\n{detail or ''}" for rank, (kind, detail) in enumerate(outcomes) if kind != "ok"]
    if failures:
        raise RankFailure(f"{len(failures)} of {nranks} ranks failed:\n" + "\n".join(failures))
    return [value for _, value in outcomes]
