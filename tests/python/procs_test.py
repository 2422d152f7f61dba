"""cco.cli.procs: rank processes are waited for together; the first that fails, or the
deadline, kills the others and names the rank, instead of leaving them in a rendezvous. And
cco.cli.meta: what a report records about its run, never a secret."""

import subprocess
import sys
import time

import pytest

from cco.cli.procs import await_line, wait_all


def start(code):
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_every_output_once_all_succeed():
    outs = wait_all([start("print('a')"), start("print('b')")], 30, "two ranks")
    assert [out.strip() for out, _ in outs] == ["a", "b"]


def test_a_failed_rank_ends_the_waiting_one_at_once():
    waiting = start("import time; time.sleep(60)")  # rank 0: would wait for rank 1 for ever
    failing = start("import sys; sys.stderr.write('rank 1 lost its peer'); sys.exit(3)")
    begin = time.monotonic()
    with pytest.raises(RuntimeError) as failed:
        wait_all([waiting, failing], 60, "two ranks")
    assert time.monotonic() - begin < 20
    assert "rank 1 failed first (exit 3)" in str(failed.value) and "lost its peer" in str(failed.value)
    assert waiting.poll() is not None  # killed, not left behind


def test_a_rank_that_never_says_ready_is_named_with_its_stderr():
    ready = start("print('ready', flush=True); import time; time.sleep(60)")
    dead = start("import sys; sys.stderr.write('no GPU here'); sys.exit(1)")
    with pytest.raises(RuntimeError) as failed:
        await_line([ready, dead], "ready", 30, "two ranks")
    assert "rank 1 did not start (exited)" in str(failed.value) and "no GPU here" in str(failed.value)
    assert ready.poll() is not None  # killed, not left waiting for "go"
    silent = start("import time; time.sleep(60)")
    with pytest.raises(RuntimeError, match="rank 0 did not start \\(timed out\\)"):
        await_line([silent], "ready", 1, "one rank")
    assert silent.poll() is not None


def test_the_deadline_kills_every_rank():
    ranks = [start("import time; time.sleep(60)") for _ in range(2)]
    with pytest.raises(RuntimeError, match="still running after 1 s"):
        wait_all(ranks, 1, "two ranks")
    assert all(p.poll() is not None for p in ranks)


def test_a_report_records_its_run_but_no_secret(monkeypatch):
    from cco.cli.meta import run_meta

    monkeypatch.setenv("CCO_UNIQUE_ID", "43434349deadbeef")
    monkeypatch.setenv("CCO_PERF_UIDS", "43434349deadbeef,43434349deadbeef")
    monkeypatch.setenv("CCO_TIMEOUT_MS", "1234")
    meta = run_meta("cpu", 2, "threads")
    assert meta["env"]["CCO_TIMEOUT_MS"] == "1234" and meta["ranks"] == 2 and meta["command"]
    assert not any("UNIQUE_ID" in name or "UIDS" in name for name in meta["env"])
    assert "deadbeef" not in repr(meta)
