# SPDX-License-Identifier: MIT
"""tools/perf/proxy_timeline.py on a trace written here: two ranks bouncing a proxied signal,
each step of every leg read off the right events (the peer's wait that the signal ended, the
peer's answer after it), and direct posts (no ticket) left out."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.getcwd(), "tools", "perf"))
import proxy_timeline  # noqa: E402


def x(name, cat, ts, dur, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": 0, "tid": 1, "ts": ts, "dur": dur, "args": args}


def write(folder, rank, events):
    doc = {"traceEvents": events, "otherData": {"cco": {"rank": rank}}}
    (folder / f"cco-trace.r{rank}.json").write_text(json.dumps(doc))


def test_each_step_of_a_leg(tmp_path):
    # Rank 0 posts at 100 (2 us), its proxy takes it at 103 and queues it at 103.5; rank 1's
    # wait ends at 110 and it answers at 110.5; rank 0's proxy sees `consumed` at 109.
    write(tmp_path, 0, [
        x("gda.signal", "device", 100, 2, record=0, ring=1, ticket=0),
        x("gda.signal", "device", 50, 1, record=1, direct=True),  # direct: not the proxy's
        x("issue gda.signal", "proxy", 103, 0.5, record=0, ring=1, ticket=0),
        x("gda.signal", "proxy", 103.5, 5.5, record=0, bytes=0),
        x("gda.wait_signal", "device", 111, 9, signal=1, least=1),
    ])
    write(tmp_path, 1, [
        x("gda.wait_signal", "device", 90, 20, signal=1, least=1),
        x("gda.signal", "device", 110.5, 2, record=0, ring=0, ticket=0),
        x("issue gda.signal", "proxy", 113, 0.5, record=0, ring=0, ticket=0),
    ])
    rows = proxy_timeline.steps(proxy_timeline.load(str(tmp_path)))
    first = [r for r in rows if r["post"] == 2 and r["pickup"] == 1][0]
    assert first == {"post": 2, "pickup": 1, "issue": 0.5, "land": 6.5, "reply": 0.5, "done": 5.5, "leg": 10.5}
    # Rank 1's post: its proxy queued at 113.5, rank 0's wait ended at 120; no answer after it.
    second = [r for r in rows if r is not first]
    assert second == [{"post": 2, "pickup": 0.5, "issue": 0.5, "land": 6.5, "reply": None, "done": None,
                       "leg": None}]


def test_no_posts_is_said(tmp_path, capsys):
    write(tmp_path, 0, [x("gda.wait_signal", "device", 1, 1, signal=0, least=1)])
    assert proxy_timeline.main(["proxy_timeline.py", str(tmp_path)]) == 1
    assert "no proxied signal posts" in capsys.readouterr().err
