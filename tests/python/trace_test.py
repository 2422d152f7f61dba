# SPDX-License-Identifier: MIT
"""The device-side trace from Python and the command line, on the cpu platform: `cco perf
--trace DIR` writes a trace per rank (the tcp suite's pair of processes, GDA through the proxy
over tcp and over the local backend), each file and their merge are what Perfetto takes
(cco_tools.trace_format), the stamps of every post are in order (post <= issue <= in flight),
`cco trace merge` lines up hosts and keeps the threads and flows of the files apart, and the
binding's trace_flush writes a file only for a traced device communicator."""

import json
import os
import subprocess
import sys

import pytest

from cco_tools import trace, trace_format

ENV = dict(os.environ, CCO_PLATFORM="cpu", CCO_TIMEOUT_MS="20000")


def run_cco(*args, timeout=300, env=ENV):
    return subprocess.run([sys.executable, "-m", "cco_tools", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def slices(doc):
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def flows(doc):
    """{id: (start event, end event)}"""
    by_id = {}
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f"):
            by_id.setdefault(e["id"], {})[e["ph"]] = e
    return {i: (p["s"], p["f"]) for i, p in by_id.items()}


@pytest.fixture(scope="module")
def perf_trace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace")
    r = run_cco("perf", "--platform", "cpu", "--quick", "--suites", "tcp", "--trace", str(folder), timeout=600)
    assert r.returncode == 0, r.stderr
    return folder


def test_perf_writes_a_trace_per_rank(perf_trace):
    for job, names in (("tcp-across", {"gda.put", "gda.signal", "gda.flush"}), ("tcp-local", {"gda.signal"})):
        files = sorted(os.listdir(perf_trace / job))
        assert [f.split(".")[1] for f in files] == ["r0", "r1"], files
        for f in files:
            doc = load(perf_trace / job / f)
            assert trace_format.problems(doc) == [], f
            meta = doc["otherData"]["cco"]
            assert meta["rank"] == int(f.split(".")[1][1:]) and meta["worldSize"] == 2 and meta["platform"] == "cpu"
            assert meta["recorded"] > 0 and meta["dropped"] == 0 and meta["incomplete"] == 0
            # One clock on the cpu platform: the bounds the trace gives hold 0 between them.
            clock = meta["clock"]
            assert clock["sameClock"] and clock["lowerNs"] <= 0 <= clock["upperNs"] and clock["samples"] > 0
            pids = {e["pid"] for e in doc["traceEvents"]}
            assert pids == {meta["rank"]}
            if meta["rank"] == 0:
                assert names <= {e["name"] for e in slices(doc)}, job
            threads = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
            assert {"block 0 warp 0", "proxy", "proxy in flight"} <= threads


def test_post_issue_and_completion_are_in_order(perf_trace):
    doc = load(perf_trace / "tcp-across" / sorted(os.listdir(perf_trace / "tcp-across"))[0])
    by_start = {(e["tid"], e["ts"]): e for e in slices(doc)}
    posts = 0
    for start, end in flows(doc).values():
        # A flow runs from a post (device) to its issue (proxy), and from the issue to its
        # flight: each one begins no earlier than the one before it.
        assert start["ts"] <= end["ts"], (start, end)
        source = by_start[(start["tid"], start["ts"])]
        target = by_start[(end["tid"], end["ts"])]
        assert target["ts"] >= source["ts"]
        if source["cat"] == "device":
            posts += 1
            assert target["name"] == "issue " + source["name"]
            assert source["args"]["record"] == target["args"]["record"]
    assert posts > 100


def test_merge_joins_the_ranks_into_one_valid_timeline(perf_trace, tmp_path):
    out = tmp_path / "all.json"
    r = run_cco("trace", "merge", str(perf_trace / "tcp-across"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "ranks [0, 1]" in r.stdout
    doc = load(out)
    assert trace_format.problems(doc) == []
    assert {e["pid"] for e in doc["traceEvents"]} == {0, 1}
    assert min(e["ts"] for e in doc["traceEvents"] if "ts" in e) == 0
    cco = doc["otherData"]["cco"]
    # The pair ran as two host ids: lined up on the wall clock.
    assert cco["clockDomain"] == "CLOCK_REALTIME" and len(cco["merged"]) == 2
    assert run_cco("trace", "check", str(out), str(perf_trace / "tcp-local")).returncode == 0


def _doc(rank, host, realtime, events, dev_comm=1):
    meta = {"version": 1, "rank": rank, "hostHash": host, "realtimeMinusMonotonicNs": realtime, "devComm": dev_comm,
            "flush": 0, "dropped": 0}
    return {"traceEvents": [{"ph": "M", "name": "process_name", "pid": rank, "tid": 0,
                             "args": {"name": f"rank {rank}"}},
                            {"ph": "M", "name": "thread_name", "pid": rank, "tid": 1,
                             "args": {"name": "block 0 warp 0"}},
                            *events],
            "displayTimeUnit": "ns", "otherData": {"cco": meta}}


def _x(pid, ts, dur, tid=1):
    return {"ph": "X", "name": "gda.put", "cat": "device", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def test_merge_moves_other_hosts_to_the_wall_clock_and_keeps_files_apart():
    flow = [{"ph": "s", "name": "op", "cat": "flow", "pid": 0, "tid": 1, "ts": 10.0, "id": 1},
            {"ph": "f", "name": "op", "cat": "flow", "pid": 0, "tid": 1, "ts": 10.5, "id": 1, "bp": "e"}]
    a = _doc(0, "A", 5_000_000, [_x(0, 10.0, 1.0), *flow])
    b = _doc(1, "B", 2_000_000, [_x(1, 12.0, 1.0)])
    merged = trace.merge([a, b])
    assert trace_format.problems(merged) == []
    xs = {e["pid"]: e["ts"] for e in slices(merged)}
    # a: 10 us + 5 ms, b: 12 us + 2 ms: b is first, at 0; a 2.998 ms later.
    assert xs[1] == 0 and xs[0] == pytest.approx(2998.0)
    assert merged["otherData"]["cco"]["clockDomain"] == "CLOCK_REALTIME"
    # One host: the clocks are one, nothing moves but the common start.
    same = trace.merge([_doc(0, "A", 5_000_000, [_x(0, 10.0, 1.0)]), _doc(1, "A", 9_000_000, [_x(1, 12.0, 1.0)])])
    assert {e["pid"]: e["ts"] for e in slices(same)} == {0: 0.0, 1: 2.0}
    # Two files of one rank (two device communicators) whose slices overlap: their threads
    # stay apart and say which file they are; both flows survive with ids of their own.
    c = _doc(0, "A", 0, [_x(0, 10.2, 1.0), *flow], dev_comm=2)
    twice = trace.merge([a, c])
    assert trace_format.problems(twice) == []
    names = sorted(e["args"]["name"] for e in twice["traceEvents"] if e["name"] == "thread_name")
    assert names == ["block 0 warp 0 [dc 1.0]", "block 0 warp 0 [dc 2.0]"]
    assert len(flows(twice)) == 2
    assert sum(e["name"] == "process_name" for e in twice["traceEvents"]) == 1


def test_the_format_check_finds_what_perfetto_would_drop_or_misdraw():
    good = _doc(0, "A", 0, [_x(0, 1.0, 4.0), _x(0, 2.0, 1.0), _x(0, 5.0, 1.0)])
    assert trace_format.problems(good) == []
    cases = {
        "overlaps": [_x(0, 1.0, 4.0), _x(0, 3.0, 4.0)],
        "dur": [{"ph": "X", "name": "n", "pid": 0, "tid": 1, "ts": 1.0}],
        "flow": [{"ph": "s", "name": "op", "cat": "flow", "pid": 0, "tid": 1, "ts": 1.0, "id": 7}],
        "32 bits": [_x(-1, 1.0, 1.0)],
        "scope": [{"ph": "i", "name": "n", "pid": 0, "tid": 1, "ts": 1.0, "s": "x"}],
        "phase": [{"ph": "Q", "pid": 0, "tid": 1, "ts": 1.0}],
    }
    for needle, events in cases.items():
        found = trace_format.problems(_doc(0, "A", 0, events))
        assert found and any(needle in p for p in found), (needle, found)
    assert trace_format.problems({"events": []})


def test_trace_flush_from_python(tmp_path):
    code = f"""
import os, sys
from cco import Communicator
os.environ["CCO_TRACE"] = {str(tmp_path / 'on')!r}
uid = Communicator.get_unique_id()
with Communicator.init(1, 0, uid) as comm:
    dc = comm.create_dev_comm()
    assert dc.traced
    comm.trace_flush(dc, {str(tmp_path / 'explicit.json')!r})
    del os.environ["CCO_TRACE"]
    plain = comm.create_dev_comm()
    assert not plain.traced
    comm.trace_flush(plain, {str(tmp_path / 'never.json')!r})
"""
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = load(tmp_path / "explicit.json")
    assert trace_format.problems(doc) == [] and doc["otherData"]["cco"]["recorded"] == 0
    assert not (tmp_path / "never.json").exists()
    assert os.listdir(tmp_path / "on") == []  # nothing recorded since the flush: no file at destroy
