# SPDX-License-Identifier: MIT
"""Where a proxied GDA signal's microseconds go, from the device-side trace of a ping-pong
between two ranks (CCO_TRACE, one JSON file per rank and device communicator): for every
signal a rank posted through its proxy, the steps from its post to the peer's wait ending,
and then to the peer's answer:

    post      the device call: the descriptor written and the doorbell rung
    pickup    the post's end to the proxy taking the descriptor
    issue     the proxy's host time queueing the work (a stream write, or a store)
    land      the work queued to the peer's wait ending (the signal seen)
    reply     the peer's wait ending to its own post beginning
    done      the work queued to the proxy seeing the ring's `consumed` pass it
    leg       one post's beginning to the peer's answer beginning (half a round trip)

Device and proxy stamps share the host's CLOCK_MONOTONIC after the trace writer aligned them
(its clock offset: a bound from each side), so steps across that line carry its error, and
`pickup` can read slightly negative.

    CCO_GDA_DIRECT_MAX_BYTES=0 CCO_TRACE=/tmp/tr python -m cco.launch -n 2 stage/bin/gda_rtt_probe
    python3 tools/perf/proxy_timeline.py /tmp/tr
"""

import bisect
import glob
import json
import os
import statistics
import sys


def load(folder):
    """{rank: [events]} of every trace file in `folder` (the ranks' device communicators joined)."""
    by_rank = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        rank = doc.get("otherData", {}).get("cco", {}).get("rank")
        if rank is None:
            continue
        by_rank.setdefault(rank, []).extend(e for e in doc.get("traceEvents", []) if e.get("ph") == "X")
    return by_rank


def steps(by_rank):
    """Per proxied signal post of a two-rank ping-pong, its steps in microseconds."""
    posts, waits, issues, flights = {}, {}, {}, {}
    for rank, events in by_rank.items():
        posts[rank], waits[rank], issues[rank], flights[rank] = [], [], {}, {}
        for e in events:
            name, cat, args = e.get("name"), e.get("cat"), e.get("args", {})
            begin, end = float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))
            if cat == "device" and name == "gda.signal" and "ticket" in args:
                posts[rank].append((begin, end, args["record"]))
            elif cat == "device" and name == "gda.wait_signal":
                waits[rank].append(end)
            elif cat == "proxy" and name == "issue gda.signal":
                issues[rank][args["record"]] = (begin, end)
            elif cat == "proxy" and name == "gda.signal":
                flights[rank][args["record"]] = end
    for rank in posts:
        posts[rank].sort()
        waits[rank].sort()
    rows = []
    for rank in posts:
        peer = 1 - rank
        if peer not in waits:
            continue
        answers = [p[0] for p in posts[peer]]
        for begin, end, record in posts[rank]:
            if record not in issues[rank]:
                continue
            taken, queued = issues[rank][record]
            at = bisect.bisect_left(waits[peer], queued)
            if at == len(waits[peer]):
                continue
            seen = waits[peer][at]
            nxt = bisect.bisect_left(answers, seen)
            reply = answers[nxt] - seen if nxt < len(answers) else None
            done = flights[rank].get(record)
            rows.append({
                "post": end - begin, "pickup": taken - end, "issue": queued - taken, "land": seen - queued,
                "reply": reply, "done": None if done is None else done - queued,
                "leg": None if reply is None else answers[nxt] - begin,
            })
    return rows


def report(rows):
    names = ("post", "pickup", "issue", "land", "reply", "done", "leg")
    print(f"{len(rows)} proxied signal posts")
    print(f"{'step':<8} {'median us':>10} {'p10 us':>8} {'p90 us':>8}")
    for name in names:
        values = sorted(r[name] for r in rows if r[name] is not None)
        if not values:
            continue
        p10, p90 = values[len(values) // 10], values[(len(values) * 9) // 10]
        print(f"{name:<8} {statistics.median(values):10.2f} {p10:8.2f} {p90:8.2f}")


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rows = steps(load(argv[1]))
    if not rows:
        print("no proxied signal posts with a peer's wait after them in", argv[1], file=sys.stderr)
        return 1
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
