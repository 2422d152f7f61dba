# SPDX-License-Identifier: MIT
"""What a Chrome trace-event JSON document must be for Perfetto (and chrome://tracing) to take
every event of it, as CCO's traces use the format; `problems(doc)` lists what is not.

The rules are the Trace Event Format's (the JSON object form: {"traceEvents": [...],
"displayTimeUnit": "ms" | "ns", "otherData": {...}}) as Perfetto's JSON importer reads them:
every event has a string "ph"; "pid" and "tid" are whole numbers that fit 32 bits (a string
there is only a shortcut Perfetto tolerates); "ts" is a number of microseconds; an "X" event
without a number "dur" is dropped; an "i" event's scope "s" is g, p or t; a flow ("s", "t",
"f") is matched by (id, cat, name), so every flow that starts must end and the other way
round, and "f" binds to the slice enclosing it with "bp": "e"; "M" events name processes
and threads through args.name (or order them through args.sort_index). Beyond what the
importer checks, the slices of one thread must nest (it reports the others as misnested and
draws them wrongly): CCO's writer splits a thread in as many as that takes.
"""

PHASES = set("XiIMstfBEbenC")
METADATA = {"process_name": "name", "thread_name": "name", "process_labels": "labels",
            "process_sort_index": "sort_index", "thread_sort_index": "sort_index"}


def _whole(value, bits=32):
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < (1 << bits)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def events_of(doc):
    """The event list of either form (object or bare array), or None."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        return doc["traceEvents"]
    return None


def problems(doc, limit=20):
    """What in `doc` Perfetto would drop or misdraw, at most `limit` sentences ([] = none)."""
    found = []

    def bad(sentence):
        if len(found) < limit:
            found.append(sentence)

    events = events_of(doc)
    if events is None:
        return ["not a trace: neither a list of events nor an object with a 'traceEvents' list"]
    if isinstance(doc, dict):
        if "displayTimeUnit" in doc and doc["displayTimeUnit"] not in ("ms", "ns"):
            bad(f"displayTimeUnit {doc['displayTimeUnit']!r} is neither 'ms' nor 'ns'")
        if "otherData" in doc and not isinstance(doc["otherData"], dict):
            bad("otherData is not an object")
    flows = {}
    slices = {}
    for n, e in enumerate(events):
        where = f"event {n}"
        if not isinstance(e, dict):
            bad(f"{where} is not an object")
            continue
        ph = e.get("ph")
        if not isinstance(ph, str) or ph[:1] not in PHASES or len(ph) != 1:
            bad(f"{where}: ph {ph!r} is not a known phase")
            continue
        where = f"event {n} ({ph} {e.get('name')!r})"
        for key in ("pid", "tid"):
            if key in e and not _whole(e[key]):
                bad(f"{where}: {key} {e[key]!r} is not a whole number of 32 bits")
        if "args" in e and not isinstance(e["args"], dict):
            bad(f"{where}: args is not an object")
        if ph == "M":
            wants = METADATA.get(e.get("name"))
            if wants is None:
                bad(f"{where}: unknown metadata name")
            elif not isinstance(e.get("args"), dict) or wants not in e["args"]:
                bad(f"{where}: metadata without args.{wants}")
            continue
        if not _number(e.get("ts")) or e["ts"] < 0:
            bad(f"{where}: ts {e.get('ts')!r} is not a number of microseconds")
            continue
        if ph in "XiIBEbenC" and not isinstance(e.get("name"), str):
            bad(f"{where}: no name")
        if ph == "X":
            if not _number(e.get("dur")) or e["dur"] < 0:
                bad(f"{where}: dur {e.get('dur')!r} is not a number >= 0 (Perfetto drops it)")
                continue
            begin = round(e["ts"] * 1000)  # whole ns: float sums would misjudge touching slices
            slices.setdefault((e.get("pid"), e.get("tid")), []).append((begin, begin + round(e["dur"] * 1000), n))
        elif ph in "iI":
            if e.get("s", "t") not in ("g", "p", "t"):
                bad(f"{where}: scope {e.get('s')!r} is not g, p or t")
        elif ph in "stf":
            if not (_whole(e.get("id"), 64) or isinstance(e.get("id"), str)):
                bad(f"{where}: a flow without an id")
                continue
            if ph == "f" and e.get("bp", "e") != "e":
                bad(f"{where}: bp {e.get('bp')!r} (only 'e' binds to the enclosing slice)")
            key = (e["id"], e.get("cat"), e.get("name"))
            flows.setdefault(key, []).append(ph)
    for key, phases in flows.items():
        if phases.count("s") != phases.count("f"):
            bad(f"flow {key}: {phases.count('s')} start(s) and {phases.count('f')} end(s)")
    for (pid, tid), spans in slices.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends = []
        for begin, end, n in spans:
            while open_ends and open_ends[-1] <= begin:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                bad(f"event {n}: its slice [{begin}, {end}] ns on pid {pid} tid {tid} overlaps one it is not inside")
            open_ends.append(end)
    return found
