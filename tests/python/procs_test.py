# SPDX-License-Identifier: MIT
"""cco._supervisor: rank processes (cco launch's, and the benchmark's own) are waited for
together; the first that fails, or the deadline, stops the others and names the rank,
instead of leaving them in a rendezvous. And cco_tools.perf.meta: what a report records about
its run, never a secret."""

import sys
import time

import pytest

from cco._supervisor import CAPTURE, PREFIX, RankProcesses


def code(text):
    return [sys.executable, "-c", text]


def ranks(*texts, **kwargs):
    return RankProcesses([code(t) for t in texts], stdout=CAPTURE, stderr=CAPTURE, **kwargs)


def test_every_output_once_all_succeed():
    with ranks("print('a')", "print('b')") as procs:
        outs = procs.wait(30).check("two ranks")
    assert [out.strip() for out, _ in outs] == ["a", "b"]


def test_a_failed_rank_ends_the_waiting_one_at_once():
    # rank 0: would wait for rank 1 for ever
    procs = ranks("import time; time.sleep(60)", "import sys; sys.stderr.write('rank 1 lost its peer'); sys.exit(3)")
    begin = time.monotonic()
    with procs, pytest.raises(RuntimeError) as failed:
        procs.wait(60).check("two ranks")
    assert time.monotonic() - begin < 20
    assert "rank 1 failed first (exit 3)" in str(failed.value) and "lost its peer" in str(failed.value)
    assert procs.popens[0].poll() is not None  # stopped, not left behind


def test_a_rank_that_never_says_ready_is_named_with_its_stderr():
    procs = ranks("print('ready', flush=True); import time; time.sleep(60)",
                  "import sys; sys.stderr.write('no GPU here'); sys.exit(1)")
    with procs, pytest.raises(RuntimeError) as failed:
        procs.await_line("ready", 30, "two ranks")
    assert "rank 1 did not start (exited)" in str(failed.value) and "no GPU here" in str(failed.value)
    assert procs.popens[0].poll() is not None  # stopped, not left waiting for "go"
    silent = ranks("import time; time.sleep(60)")
    with silent, pytest.raises(RuntimeError, match="rank 0 did not start \\(timed out\\)"):
        silent.await_line("ready", 1, "one rank")
    assert silent.popens[0].poll() is not None


def test_the_deadline_ends_every_rank():
    procs = ranks("import time; time.sleep(60)", "import time; time.sleep(60)")
    with procs, pytest.raises(RuntimeError, match="still running after 1 s"):
        procs.wait(1).check("two ranks")
    assert all(p.poll() is not None for p in procs.popens)


def test_a_handshake_then_the_result():
    """What the host suite does: each rank says ready, gets go, prints its result."""
    worker = "import sys; print('ready', flush=True); sys.stdin.readline(); print('result', flush=True)"
    with ranks(worker, worker, stdin=True) as procs:
        procs.await_line("ready", 30, "two ranks")
        procs.send_line("go")
        outs = procs.wait(30).check("two ranks")
    assert [out.strip() for out, _ in outs] == ["result", "result"]


def test_prefixed_lines_name_their_rank(capfd):
    with RankProcesses([code("print('x'); print('y', end='')"), code("import sys; sys.stderr.write('z\\n')")],
                       stdout=PREFIX, stderr=PREFIX) as procs:
        outcome = procs.wait(30)
    assert outcome.status == 0 and outcome.outputs == [(None, None), (None, None)]
    out, err = capfd.readouterr()
    assert out.splitlines() == ["[rank 0] x", "[rank 0] y"] and err == "[rank 1] z\n"


def test_a_report_records_its_run_but_no_secret(monkeypatch):
    from cco_tools.perf.meta import run_meta

    monkeypatch.setenv("CCO_UNIQUE_ID", "43434349deadbeef")
    monkeypatch.setenv("CCO_PERF_UIDS", "43434349deadbeef,43434349deadbeef")
    monkeypatch.setenv("CCO_TIMEOUT_MS", "1234")
    meta = run_meta(["perf", "--quick"], "cpu", 2, "threads", trials=3)
    assert meta["env"]["CCO_TIMEOUT_MS"] == "1234" and meta["ranks"] == 2
    assert meta["command"][-2:] == ["perf", "--quick"]
    assert not any("UNIQUE_ID" in name or "UIDS" in name for name in meta["env"])
    assert "deadbeef" not in repr(meta)
