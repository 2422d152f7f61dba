# SPDX-License-Identifier: MIT
"""The project's own benchmark targets (issues #9, #11, #13, #30, #32), judged on `cco perf` reports:
met, missed, or not measured (no such table, its anchors read n/a, or a target over NVLink
judged on one GPU). `cco perf --targets` judges its own run; tools/perf/issue_targets.py
judges saved reports. Every figure comes from the reports.

Rows are read as the JSON has them: a figure's key is its name and unit ("cco us/rt"); a size
is bytes (reports of schema 1) or a label such as "4KiB" (earlier reports).
"""

import re

from cco_tools.perf import report as R

SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
MET, MISSED, NONE = "met", "missed", "not measured"
TCP_ROUND_TRIP = "round trip <= the bare ping-pong + the local backend's round trip (#11)"
TCP_BANDWIDTH = "the largest put >= 80 % of the bare stream (#11)"


def tcp_round_trip_target(bare_us, local_us):
    """What a tcp round trip must not exceed: the bare ping-pong between the same endpoints
    plus the local backend's round trip (both ranks on one host, through their proxies)."""
    return bare_us + local_us


def size_bytes(size):
    if isinstance(size, int) and not isinstance(size, bool):
        return size
    m = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB)", str(size))
    return int(m.group(1)) * SIZE_UNITS[m.group(2)] if m else None


def label(size):
    b = size_bytes(size)
    return R.size_label(b) if b is not None else str(size)


def number(value):
    return value if isinstance(value, (int, float)) and value == value else None  # NaN: none


class Tables:
    """Every table of the reports, with the number of GPUs of the machine that made it.
    reports: (source, report as a dict) pairs."""

    def __init__(self, reports):
        self.tables = []  # (title, rows, gpus, source, date)
        self.used = None  # the source of the table the last find() returned
        for source, report in reports:
            try:
                suites = report["suites"]
            except (KeyError, TypeError):
                continue  # not a cco perf report
            m = re.search(r"(\d+) x ", report.get("header", ""))
            gpus = int(m.group(1)) if m else None
            meta = report.get("meta")
            date = str(meta.get("date_utc", "")) if isinstance(meta, dict) else ""
            for s in suites:
                self.tables.append((s.get("suite", ""), s.get("rows", []), gpus, source, date))

    def find(self, prefix):
        """The rows and GPU count of the table whose title starts with `prefix`: made on the
        most GPUs, then the newest (the report's meta.date_utc; ISO dates sort as text), then
        the last named."""
        found = [(gpus or 0, date, i) for i, (title, _, gpus, _, date) in enumerate(self.tables)
                 if title.startswith(prefix)]
        if not found:
            self.used = None
            return None, None
        _, rows, gpus, self.used, _ = self.tables[max(found)[2]]
        return rows, gpus


def table(t, title, nvlink=False):
    """(rows, None) of the table titled `title...`, or (None, why it is not measured);
    nvlink: the target is over NVLink, which a report made on one GPU does not measure."""
    rows, gpus = t.find(title)
    if rows is None:
        return None, f"no '{title}' table"
    if nvlink and not (gpus and gpus >= 2):
        return None, f"made on {gpus} GPU(s): not over NVLink"
    return rows, None


def gda_round_trip(t):
    """Judged on the default path between LSA peers (direct: the device's own stores); the
    proxy's figures (every operation through both proxies and the copy engine) are printed
    beside it, judged by nothing. Tables without a path column had the proxy path only."""
    rows, why = table(t, "GDA put+signal round trip", nvlink=True)
    if why:
        return NONE, why

    def puts(path):
        return [r for r in rows if str(r.get("payload", "")).startswith("put ") and r.get("path", "proxy") == path
                and r.get("launch") == "in-kernel" and number(r.get("cco us/rt")) is not None]

    direct, proxy = puts("direct"), puts("proxy")
    aside = "; proxy path: " + ", ".join(f"{r['payload']} {r['cco us/rt']:.2f}" for r in proxy) if proxy else ""
    if not direct:
        return NONE, "no put rows on the default (direct) path" + aside
    worst = max(direct, key=lambda r: r["cco us/rt"])
    detail = ", ".join(f"{r['payload']} {r['cco us/rt']:.2f}" for r in direct)
    return (MET if worst["cco us/rt"] <= 10 else MISSED), f"in a kernel, us, direct path: {detail}{aside}"


def gda_large_put(t):
    rows, why = table(t, "GDA put bandwidth", nvlink=True)
    if why:
        return NONE, why
    row = next((r for r in rows if size_bytes(r.get("size")) == 256 << 20), None)
    share = number(row.get("put/memcpy %")) if row else None
    if share is None:
        return NONE, "no 256 MiB row"
    return (MET if share >= 80 else MISSED), f"{share:.1f} % of memcpy"


def _tcp_round_trips(t, bound):
    """Each tcp round trip row against bound(row), its limit in us (None: an anchor reads n/a):
    (verdict, why not measured or None, [(row, figure, limit)])."""
    rows, why = table(t, "GDA over tcp round trip")
    if why or not rows:
        return NONE, why or "no rows", []
    judged = []
    for r in rows:
        tcp, limit = number(r.get("tcp us/rt")), bound(r)
        if tcp is None or limit is None:
            return NONE, f"{r.get('payload')}: n/a", []
        judged.append((r, tcp, limit))
    return (MET if all(tcp <= limit for _, tcp, limit in judged) else MISSED), None, judged


def tcp_round_trip(t):
    def bound(r):
        target = number(r.get("target us/rt"))
        if target is None:  # a report made without --targets: its anchors are in the row
            bare, local = number(r.get("bare tcp us/rt")), number(r.get("local us/rt"))
            target = tcp_round_trip_target(bare, local) if bare is not None and local is not None else None
        return target

    verdict, why, judged = _tcp_round_trips(t, bound)
    if why:
        return verdict, why
    return verdict, "us: " + ", ".join(f"{r['payload']} {tcp:.1f} (target {limit:.1f})" for r, tcp, limit in judged)


def tcp_bandwidth(t):
    rows, _ = t.find("GDA over tcp put bandwidth")
    sized = [r for r in rows or [] if size_bytes(r.get("size")) and number(r.get("tcp/bare %")) is not None]
    if not sized:
        return NONE, "no 'GDA over tcp put bandwidth' table"
    largest = max(sized, key=lambda r: size_bytes(r["size"]))
    share = largest["tcp/bare %"]
    return (MET if share >= 80 else MISSED), f"{label(largest['size'])}: {share:.1f} % of a bare stream"


def uncovered(rows, lo, hi):
    """Why the rows' sizes do not cover [lo, hi] (None where they do): a target over a range
    of sizes is not judged on part of it. Covered: `lo` measured, a size at or above `hi`, and
    no step between neighbours larger than the sweep's 4x."""
    sizes = sorted({size_bytes(r.get("size")) for r in rows} - {None})
    if lo not in sizes:
        return f"not measured at {label(lo)}"
    if sizes[-1] < hi:
        return f"not measured up to {label(hi)} (largest {label(sizes[-1])})"
    steps = [(a, b) for a, b in zip(sizes, sizes[1:]) if a >= lo and a < hi and b > 4 * a]
    return f"a gap from {label(steps[0][0])} to {label(steps[0][1])}" if steps else None


def _best(row, columns):
    values = [number(row.get(c)) for c in columns]
    values = [v for v in values if v is not None]
    return min(values) if values else None


def allreduce_beats_symm(t):
    rows, why = table(t, "all-reduce per launch", nvlink=True)
    if why:
        return NONE, why
    cco_columns = ("cco us", "cco 2-shot us", "cco push us")
    peer_columns = ("symm 1-shot us", "symm 2-shot us")
    why = uncovered([r for r in rows if r.get("launch") == "graph"], 8 << 10, 1 << 20)
    if why:
        return NONE, why
    # Every size from 8 KiB up to the first at or above 1 MiB (a sweep may step past 1 MiB).
    measured = sorted({size_bytes(r["size"]) for r in rows if size_bytes(r.get("size"))})
    top = next(b for b in measured if b >= 1 << 20)
    sizes = sorted({r["size"] for r in rows if size_bytes(r.get("size")) and 8 << 10 <= size_bytes(r["size"]) <= top},
                   key=size_bytes)
    parts, verdict = [], MET
    for size in sizes:
        graph = next((r for r in rows if r["size"] == size and r.get("launch") == "graph"), None)
        peer = _best(graph, peer_columns) if graph else None
        ours = [_best(r, cco_columns) for r in rows if r["size"] == size and r.get("launch") in ("graph", "graph+pdl")]
        ours = min((v for v in ours if v is not None), default=None)
        if peer is None or ours is None:
            return NONE, f"{label(size)}: SymmetricMemory or CCO reads n/a"
        if ours >= peer:
            verdict = MISSED
        parts.append(f"{label(size)} {ours:.2f}/{peer:.2f}")
    if not sizes:
        return NONE, "no sizes from 8 KiB to 1 MiB"
    return verdict, "CCO's best / SymmetricMemory's best, us per launch in a graph: " + ", ".join(parts)


def lsa_put_vs_memcpy(t):
    rows, why = table(t, "LSA put bandwidth", nvlink=True)
    if why:
        return NONE, why
    why = uncovered(rows, 4 << 10, 16 << 20)  # from 4 KiB, to the quick sweep's top at least
    if why:
        return NONE, why
    parts, verdict = [], MET
    for r in rows:
        if (size_bytes(r.get("size")) or 0) < 4096:
            continue
        shares = [number(r.get(c)) for c in ("cco/memcpy %", "cco pdl/memcpy %")]
        shares = [v for v in shares if v is not None]
        if not shares:
            continue
        share = max(shares)  # the better of plain and PDL launches
        if share < 100:
            verdict = MISSED
        parts.append(f"{label(r['size'])} {share:.0f}")
    if not parts:
        return NONE, "no sizes from 4 KiB"
    return verdict, "% of memcpy: " + ", ".join(parts)


def lsa_barrier(t):
    rows, why = table(t, "LSA barrier latency", nvlink=True)
    if why:
        return NONE, why
    row = next((r for r in rows if r.get("coop") == "block" and r.get("order", "acq_rel") == "acq_rel"), None)
    us = number(row.get("barrier us/round", row.get("us/round"))) if row else None  # (earlier reports: us/round)
    if us is None:
        return NONE, "no block row"
    return (MET if us <= 2.0 else MISSED), f"block, acq_rel: {us:.2f} us a round"


def control_plane(t):
    """On a GPU (the cpu platform's table is no GPU figure), the slowest rank's time."""
    rows, gpus = t.find("host control plane, 8 ranks as processes, cuda platform")
    if rows is None:
        rows, gpus = t.find("host control plane, 8 ranks as processes, hip platform")
    if rows is None or not gpus:
        return NONE, "no 'host control plane, 8 ranks' table made on a GPU"
    steps = {r.get("step"): number(r.get("max ms", r.get("median ms"))) for r in rows}
    devcomm, register = steps.get("ccoDevCommCreate"), steps.get("ccoWindowRegister 1GiB")
    if devcomm is None or register is None:
        return NONE, "no ccoDevCommCreate or ccoWindowRegister 1GiB row"
    verdict = MET if devcomm <= 1 and register <= 15 else MISSED
    return verdict, (f"slowest rank: ccoDevCommCreate {devcomm:.2f} ms (<= 1), "
                     f"ccoWindowRegister 1 GiB {register:.1f} ms (<= 15)")


# cco.ops.checks.OPERATORS, spelled here: importing cco.ops would bring Triton into a tool that
# only reads reports.
OPERATORS = ("gemm_ar", "gemm_rs", "ag_gemm", "gemm_ag", "gemm_a2a", "a2a_gemm")
LLAMA = re.compile(r"^(FFN up|FFN down|attn out) M=(\d+)( \(failed\))?$")   # a row that failed says so


def _one_rank_ops_rows(t):
    """(operator, row) of every one-rank cco.ops table, or (None, why none)."""
    found = []
    for op in OPERATORS:
        rows, _ = t.find(f"cco.ops.{op}, 1 ranks")
        found += [(op, r) for r in rows or []]
    return (found, None) if found else (None, "no one-rank 'cco.ops' table")


def _judge_ops(rows, column, floor):
    low = [f"{op} {r['shape']} {number(r.get(column)) or 0:.1f}" for op, r in rows
           if not (number(r.get(column)) or 0) >= floor or str(r.get("shape", "")).endswith("(failed)")]
    if low:
        return MISSED, f"{len(rows) - len(low)} of {len(rows)} rows >= {floor} %; below: " + ", ".join(low)
    return MET, f"all {len(rows)} rows >= {floor} % (lowest {min(number(r.get(column)) for _, r in rows):.1f})"


def ops_vs_matmul(t):
    """Each operator at the Llama-3-70B shapes with M >= 4096, one rank: matmul/fused (a row that
    failed reads as missed)."""
    rows, why = _one_rank_ops_rows(t)
    if why:
        return NONE, why
    llama = [(op, r) for op, r in rows if (m := LLAMA.match(str(r.get("shape", "")))) and int(m.group(2)) >= 4096]
    if not llama:
        return NONE, "no Llama shape with M >= 4096"
    return _judge_ops(llama, "matmul/fused %", 95)


def ops_machinery(t):
    """One rank, every shape: the operator against its own GEMM core alone (core/fused)."""
    rows, why = _one_rank_ops_rows(t)
    if why:
        return NONE, why
    return _judge_ops(rows, "core/fused %", 95)


# --- #32: the proxy path at its floor (one GPU, two ranks) ---------------------------------
PROXY_ROUND_TRIP_US = {"signal only": 4.0, "put 8B": 5.0, "put 4KiB": 6.0}


def proxy_round_trip(t):
    """GDA through both proxies, in a kernel: signal alone <= 4 us, put 8 B + signal <= 5, put
    4 KiB + signal <= 6."""
    rows, why = table(t, "GDA put+signal round trip")
    if why:
        return NONE, why
    parts, verdict = [], MET
    for payload, bound in PROXY_ROUND_TRIP_US.items():
        row = next((r for r in rows if r.get("payload") == payload and r.get("path", "proxy") == "proxy"
                    and r.get("launch") == "in-kernel" and number(r.get("cco us/rt")) is not None), None)
        if row is None:
            return NONE, f"no in-kernel '{payload}' row through the proxy"
        if row["cco us/rt"] > bound:
            verdict = MISSED
        parts.append(f"{payload} {row['cco us/rt']:.1f} (<= {bound:g})")
    return verdict, "us, in a kernel: " + ", ".join(parts)


def proxy_put_flush(t):
    """A put and its flush through the proxy, every size measured up to 64 KiB: <= 5 us."""
    rows, why = table(t, "GDA put+flush latency")
    if why:
        return NONE, why
    small = [r for r in rows if (size_bytes(r.get("size")) or 0) <= 64 << 10 and number(r.get("proxy us")) is not None]
    if not small:
        return NONE, "no proxy figure up to 64 KiB"
    worst = max(small, key=lambda r: r["proxy us"])
    return (MET if worst["proxy us"] <= 5 else MISSED), (
        f"slowest {worst['proxy us']:.1f} us ({label(worst['size'])}, {worst.get('group', '?')}), "
        f"fastest {min(r['proxy us'] for r in small):.1f}")


def sdma_round_trip(t):
    rows, why = table(t, "SDMA put+signal round trip")
    if why:
        return NONE, why
    measured = [r for r in rows if number(r.get("cco us/rt")) is not None]
    if not measured:
        return NONE, "no figures"
    verdict = MET if all(r["cco us/rt"] <= 10 for r in measured) else MISSED
    return verdict, "us: " + ", ".join(f"{label(r['payload'])} {r['cco us/rt']:.1f}" for r in measured)


def sdma_bandwidth(t):
    """From 1 MiB, every size the report measured: >= 90 % of cudaMemcpyAsync."""
    rows, why = table(t, "SDMA put bandwidth")
    if why:
        return NONE, why
    large = [r for r in rows
             if (size_bytes(r.get("size")) or 0) >= 1 << 20 and number(r.get("sdma/memcpy %")) is not None]
    if not any(size_bytes(r["size"]) == 1 << 20 for r in large):
        return NONE, "no 1 MiB row"
    verdict = MET if all(r["sdma/memcpy %"] >= 90 for r in large) else MISSED
    return verdict, "% of memcpy: " + ", ".join(f"{label(r['size'])} {r['sdma/memcpy %']:.0f}" for r in large)


def sdma_put_quiet(t):
    rows, why = table(t, "SDMA put bandwidth")
    if why:
        return NONE, why
    row = next((r for r in rows if size_bytes(r.get("size")) == 4096 and number(r.get("put+quiet us")) is not None),
               None)
    if row is None:
        return NONE, "no 4 KiB put+quiet figure"
    return (MET if row["put+quiet us"] <= 8 else MISSED), f"{row['put+quiet us']:.1f} us"


def tcp_within_bare(t):
    """The tcp round trip within 3x the bare ping-pong of the same run (#32 asks it of the 2-core
    CI machine: judge reports made there)."""
    def bound(r):
        bare = number(r.get("bare tcp us/rt"))
        return 3 * bare if bare is not None else None

    verdict, why, judged = _tcp_round_trips(t, bound)
    if why:
        return verdict, why
    return verdict, "us: " + ", ".join(f"{r['payload']} {tcp:.1f} ({3 * tcp / limit:.1f}x bare {limit / 3:.1f})"
                                       for r, tcp, limit in judged)


TARGETS = [
    ("#9", "GDA put+signal round trip <= 10 us (default path)", gda_round_trip),
    ("#9", "GDA 256 MiB put >= 80 % of memcpy", gda_large_put),
    ("#11", "tcp round trip <= bare + local", tcp_round_trip),
    ("#11", "tcp large put >= 80 % of a bare stream", tcp_bandwidth),
    ("#13", "all-reduce beats SymmetricMemory 8 KiB-1 MiB in a graph", allreduce_beats_symm),
    ("#13", "LSA put >= memcpy from 4 KiB", lsa_put_vs_memcpy),
    ("#13", "LSA barrier <= 2.0 us", lsa_barrier),
    ("#13", "control plane", control_plane),
    ("#30", "each operator >= 95 % of torch.matmul, Llama shapes, M >= 4096", ops_vs_matmul),
    ("#30", "one rank: each operator within 5 % of its GEMM core", ops_machinery),
    ("#32", "GDA proxy round trip: signal <= 4, put 8 B <= 5, put 4 KiB <= 6 us", proxy_round_trip),
    ("#32", "GDA put + flush through the proxy <= 5 us up to 64 KiB", proxy_put_flush),
    ("#32", "SDMA put+signal round trip <= 10 us", sdma_round_trip),
    ("#32", "SDMA put >= 90 % of cudaMemcpyAsync from 1 MiB", sdma_bandwidth),
    ("#32", "SDMA put + quiet <= 8 us at 4 KiB", sdma_put_quiet),
    ("#32", "tcp round trip <= 3x the bare ping-pong (2-core machine)", tcp_within_bare),
]


def judge(reports):
    """[(issue, target, verdict, detail, source)] for the reports: (source, report dict) pairs."""
    tables = Tables(reports)
    verdicts = []
    for issue, name, check in TARGETS:
        verdict, detail = check(tables)
        verdicts.append((issue, name, verdict, detail, tables.used or ""))
    return verdicts


def add_table(report):
    """`cco perf --targets`: the targets judged on this report's own tables, as its last table."""
    rows = report.suite("project targets", [R.text("issue", 5), R.text("target", 56), R.text("verdict", 12),
                                             R.text("measured")],
                        note="the issues' targets, judged on this run's tables; tools/perf/issue_targets.py judges "
                             "saved reports")
    for issue, name, verdict, detail, _ in judge([("this run", report.to_dict())]):
        rows.append([issue, name, verdict, detail])
