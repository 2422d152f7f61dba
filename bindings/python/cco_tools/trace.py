# SPDX-License-Identifier: MIT
"""`cco trace merge` and `cco trace check`: the device-side trace's files (CCO_TRACE: one Chrome
trace-event JSON file per device communicator and flush, pid = rank) joined into one timeline,
and checked against what Perfetto takes (cco_tools.trace_format).

Alignment. Each file's timestamps are its host's CLOCK_MONOTONIC (the library moved the
device's stamps by the clock offset it estimated: otherData.cco.clock). Files from one host
share that clock and are joined as they are; where they come from several hosts (distinct
otherData.cco.hostHash), each is moved by its CLOCK_REALTIME - CLOCK_MONOTONIC
(otherData.cco.realtimeMinusMonotonicNs), onto the hosts' wall clocks, which are as close as
their time sync keeps them. The merged timeline then starts at 0 (otherData.cco.baseNs says
where that was). Files of one rank (several device communicators, or flushes) keep pid = rank,
with their threads apart and named after their device communicator; flow ids are renumbered so
that no two files share one.
"""

import json
import os
import sys

from cco_tools import trace_format


def add_parser(sub):
    p = sub.add_parser("trace", help="the device-side trace (CCO_TRACE): join the ranks' files into one timeline")
    actions = p.add_subparsers(dest="trace_command", required=True)
    m = actions.add_parser("merge", help="join trace files (or folders of them) into one, aligned")
    m.add_argument("inputs", nargs="+", help="trace files, or folders (CCO_TRACE's) whose *.json files to take")
    m.add_argument("-o", "--output", required=True, help="the merged trace (JSON)")
    m.set_defaults(run=lambda ns, argv: merge_command(ns.inputs, ns.output))
    c = actions.add_parser("check", help="say whether trace files are what Perfetto takes")
    c.add_argument("files", nargs="+")
    c.set_defaults(run=lambda ns, argv: check_command(ns.files))


def expand(inputs):
    """The trace files named: files as they are, folders' *.json files in name order."""
    files = []
    for name in inputs:
        if os.path.isdir(name):
            files += sorted(os.path.join(name, f) for f in os.listdir(name) if f.endswith(".json"))
        else:
            files.append(name)
    return files


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if trace_format.events_of(doc) is None:
        raise ValueError(f"{path}: not a trace (no 'traceEvents' list)")
    return doc


def _meta(doc):
    other = doc.get("otherData") if isinstance(doc, dict) else None
    meta = other.get("cco") if isinstance(other, dict) else None
    return meta if isinstance(meta, dict) else {}


def _ns(us):
    return round(us * 1000)


def merge(docs, names=None):
    """One trace of `docs` (trace documents, as load gives them), aligned as the module says."""
    names = names or [f"trace {i}" for i in range(len(docs))]
    metas = [_meta(d) for d in docs]
    hosts = {m.get("hostHash", m.get("host")) for m in metas}
    across_hosts = len(hosts) > 1
    shifts = [int(m.get("realtimeMinusMonotonicNs", 0)) if across_hosts else 0 for m in metas]

    # Every timed event in ns on the common clock, to rebase on the earliest.
    timed = [_ns(e["ts"]) + shift for d, shift in zip(docs, shifts) for e in trace_format.events_of(d)
             if isinstance(e, dict) and e.get("ph") != "M" and "ts" in e]
    base = min(timed) if timed else 0

    out, named_processes, next_tid, next_flow = [], set(), {}, 1
    files_of_pid = {}
    for d, meta in zip(docs, metas):
        for e in trace_format.events_of(d):
            if isinstance(e, dict) and "pid" in e:
                files_of_pid.setdefault(e["pid"], set()).add(id(d))
    for d, meta, shift, name in zip(docs, metas, shifts, names):
        tids, flows = {}, {}
        label = f"dc {meta['devComm']}.{meta.get('flush', 0)}" if "devComm" in meta else name

        def tid_of(pid, tid):
            if tid == 0:
                return 0  # the process itself
            if (pid, tid) not in tids:
                tids[(pid, tid)] = next_tid.get(pid, 1)
                next_tid[pid] = tids[(pid, tid)] + 1
            return tids[(pid, tid)]

        for e in trace_format.events_of(d):
            e = dict(e)
            pid = e.get("pid", 0)
            shared = len(files_of_pid.get(pid, ())) > 1
            if "tid" in e:
                e["tid"] = tid_of(pid, e["tid"])
            if e.get("ph") == "M":
                if e.get("name") in ("process_name", "process_sort_index"):
                    if (pid, e["name"]) in named_processes:
                        continue
                    named_processes.add((pid, e["name"]))
                elif e.get("name") == "thread_name" and shared:
                    e["args"] = dict(e["args"], name=f"{e['args']['name']} [{label}]")
                elif e.get("name") == "thread_sort_index":
                    e["args"] = dict(e["args"], sort_index=e["tid"])
                out.append(e)
                continue
            if "ts" in e:
                e["ts"] = (_ns(e["ts"]) + shift - base) / 1000
            if e.get("ph") in ("s", "t", "f") and "id" in e:
                key = (e["id"], e.get("cat"), e.get("name"))
                if key not in flows:
                    flows[key] = next_flow
                    next_flow += 1
                e["id"] = flows[key]
            out.append(e)
    return {
        "traceEvents": out,
        "displayTimeUnit": "ns",
        "otherData": {"cco": {
            "merged": [dict(m, file=n) for m, n in zip(metas, names)],
            "clockDomain": "CLOCK_REALTIME" if across_hosts else "CLOCK_MONOTONIC",
            "baseNs": base,
        }},
    }


def merge_command(inputs, output):
    files = expand(inputs)
    if not files:
        print(f"cco trace merge: no trace files in {' '.join(inputs)}", file=sys.stderr)
        return 2
    try:
        docs = [load(f) for f in files]
    except (OSError, ValueError) as e:
        print(f"cco trace merge: {e}", file=sys.stderr)
        return 2
    merged = merge(docs, files)
    wrong = trace_format.problems(merged)
    if wrong:  # the inputs were not what the library writes
        print("cco trace merge: the merged trace would not open whole:\n  " + "\n  ".join(wrong), file=sys.stderr)
        return 1
    with open(output, "w", encoding="utf-8") as f:
        json.dump(merged, f, separators=(",", ":"))
    ranks = sorted({m.get("rank") for m in merged["otherData"]["cco"]["merged"] if "rank" in m})
    dropped = sum(m.get("dropped", 0) for m in merged["otherData"]["cco"]["merged"])
    print(f"cco trace merge: {len(files)} file(s), ranks {ranks}, {len(merged['traceEvents'])} events "
          f"on {merged['otherData']['cco']['clockDomain']} -> {output}" +
          (f" ({dropped} call(s) dropped by full buffers: raise CCO_TRACE_EVENTS)" if dropped else ""))
    return 0


def check_command(files):
    failed = 0
    for path in expand(files):
        try:
            wrong = trace_format.problems(load(path))
        except (OSError, ValueError) as e:
            wrong = [str(e)]
        print(f"{path}: " + ("ok" if not wrong else "\n  " + "\n  ".join(wrong)))
        failed += bool(wrong)
    return 1 if failed else 0
