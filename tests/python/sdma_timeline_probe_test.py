# SPDX-License-Identifier: MIT
"""tools/perf/sdma_timeline_probe.py's reading of a trace written here: each step of a stream
of SDMA puts from two programs off the right events (gaps within a program only, a put the
proxy never took counted as posted alone), and the tables again from the files."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.getcwd(), "tools", "perf"))
import sdma_timeline_probe as probe  # noqa: E402


def x(name, cat, ts, dur, tid=1, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": 0, "tid": tid, "ts": ts, "dur": dur, "args": args}


EVENTS = [
    # Program 1 posts at 100 and 104 (2 us each); program 2 at 101 (3 us), never taken.
    x("sdma.put", "device", 100, 2, record=0, ring=0, ticket=0),
    x("sdma.put", "device", 104, 2, record=1, ring=0, ticket=1),
    x("sdma.put", "device", 101, 3, tid=2, record=2, ring=0, ticket=2),
    # The proxy takes record 0 at 103, queues it at 104, sees it done at 110; record 1: 106.5,
    # 107, not yet done.
    x("issue sdma.put", "proxy", 103, 1, tid=9, record=0, ring=0, ticket=0),
    x("sdma.put", "proxy", 104, 6, tid=10, record=0, bytes=4096),
    x("issue sdma.put", "proxy", 106.5, 0.5, tid=9, record=1, ring=0, ticket=1),
    x("sdma.quiet", "device", 106, 9),
    {"ph": "i", "name": "trace buffer full", "ts": 1},
]


def test_each_step_of_a_stream():
    s = probe.steps(EVENTS)
    assert sorted(s["post"]) == [2, 2, 3]
    assert s["gap"] == [4]  # 100 -> 104 in program 1; program 2 posted once
    assert s["pickup"] == [1, 0.5]
    assert s["issue"] == [1, 0.5]
    assert s["done"] == [6]
    assert s["quiet"] == [9]


def test_report_from_the_files(tmp_path, capsys):
    (tmp_path / "cases.json").write_text(json.dumps({"stream 4 KiB": 3.5, "latency 1 MiB": 20.0}))
    (tmp_path / "stream-4-KiB.json").write_text(json.dumps({"traceEvents": EVENTS}))
    assert probe.main(["sdma_timeline_probe.py", "--report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "stream 4 KiB: 3.50 us a put" in out
    assert "latency 1 MiB" not in out  # no trace file: no table
    post = [line.split() for line in out.splitlines() if line.startswith("post")][0]
    assert post[1:3] == ["3", "2.00"]


def test_usage_is_said(capsys):
    assert probe.main(["sdma_timeline_probe.py"]) == 2
    assert "sdma_timeline_probe" in capsys.readouterr().err
