# SPDX-License-Identifier: MIT
"""`cco perf --suites tcp`: the tcp backend against its anchors, measured in the same run by
the same two processes between the same endpoints (gda_tcp_bench, shipped with the package):

  across   two ranks on two "hosts" (distinct CCO_HOSTID; loopback here, network namespaces
           with tools/perf/tcp_bench.py): a bare TCP ping-pong and stream, then GDA put+signal
           and signal round trips and put bandwidth through the tcp backend
  local    the same round trips with both ranks on one host through the local backend, with
           the direct path off (CCO_GDA_DIRECT_MAX_BYTES=0): the tcp path goes through both
           proxies too, so the proxies' own cost is the anchor, not the device's stores

The cpu platform (host memory): these are the backend's figures, not a GPU's. The project's
targets for them (perf/targets.py) are shown with --targets.
"""

import json
import os
import tempfile

from cco import _resources
from cco._supervisor import CAPTURE, RankProcesses
from cco_tools.perf import report as R
from cco_tools.perf import targets
from cco_tools.perf.report import size_label


def bench_path():
    path = _resources.tool_path("gda_tcp_bench")
    if path is None:
        raise SystemExit("cco perf --suites tcp: gda_tcp_bench is neither in the package nor built "
                         "(bazel build //tools/perf:gda_tcp_bench)")
    return path


def run_pair(bench, suites, max_bytes, rounds, host_ids, commands, address, ifname, extra_env=None, label="tcp"):
    """Rank 0 and 1 of gda_tcp_bench; rank 0's figures. Under `cco perf --trace DIR` (CCO_TRACE) the
    pair's traces go into DIR/label, a job of their own."""
    with tempfile.TemporaryDirectory() as tmp:
        id_file = os.path.join(tmp, "id")
        argvs, envs = [], []
        for rank in (0, 1):
            env = dict(os.environ, CCO_PLATFORM="cpu", CCO_HOSTID=host_ids[rank], CCO_SOCKET_IFNAME=ifname,
                       CCO_TIMEOUT_MS="60000")
            for name in ("CCO_NET", "CCO_TEST_NODES_PER_HOST", "CCO_UNIQUE_ID", "CCO_RANK", "CCO_WORLD_SIZE",
                         "CCO_GDA_DIRECT_MAX_BYTES"):
                env.pop(name, None)
            env.update(extra_env or {})
            if env.get("CCO_TRACE"):
                env["CCO_TRACE"] = os.path.join(env["CCO_TRACE"], label)
            envs.append(env)
            argvs.append(commands[rank]([bench, str(rank), id_file, address, suites, str(max_bytes), str(rounds)]))
        with RankProcesses(argvs, envs, stdout=CAPTURE, stderr=CAPTURE) as pair:
            outs = pair.wait(900).check("gda_tcp_bench")
        return [json.loads(line) for line in outs[0][0].splitlines() if line.startswith("{")]


def measure(max_bytes, rounds, across_commands=None, address="127.0.0.1", ifname="=lo"):
    """(across, local) figures; across_commands wraps each rank's argv (network namespaces)."""
    bench = bench_path()
    plain = [lambda argv: argv, lambda argv: argv]
    across = run_pair(bench, "bare,gda", max_bytes, rounds, ["cco-perf-a", "cco-perf-b"], across_commands or plain,
                      address, ifname, label="tcp-across")
    local = run_pair(bench, "gda", min(max_bytes, 1 << 20), rounds, ["cco-perf-a", "cco-perf-a"], plain, "127.0.0.1",
                     "=lo", {"CCO_GDA_DIRECT_MAX_BYTES": "0"}, label="tcp-local")
    return across, local


def _need(figure, what):
    """A figure the bench must have printed; its absence is a failed run, said as such."""
    if figure is None:
        raise RuntimeError(f"cco perf tcp: gda_tcp_bench printed no '{what}' figure")
    return figure


def _figure(figures, suite, what, size=None):
    for f in figures:
        if f["suite"] == suite and f["what"] == what and (size is None or f["bytes"] == size):
            return f
    return None


def _spread(figure):
    """(slowest - fastest block) / median of a round trip timed in blocks, in %."""
    if "min" not in figure or not figure["value"] > 0:
        return None
    return 100 * (figure["max"] - figure["min"]) / figure["value"]


def add_suites(report, across, local, path, with_targets=False):
    """The round-trip and bandwidth tables, each figure beside its anchors (and, with_targets,
    the project's target for the round trip beside them)."""
    bare = _need(_figure(across, "bare", "tcp pingpong 8B"), "bare tcp pingpong 8B")["value"]
    columns = [R.text("payload", 14), R.figure("tcp", "us/rt"), R.spread(), R.figure("bare tcp", "us/rt"),
               R.figure("local", "us/rt")]
    note = ("tcp: the tcp backend between two host ids; bare tcp: an 8-byte ping-pong on a socket of its own between "
            "the same endpoints; local: both ranks on one host, through their proxies (the direct path off); "
            "each the median of 15 blocks")
    if with_targets:
        columns += [R.figure("target", "us/rt"), R.text("met", 3)]
        note += f"; target: {targets.TCP_ROUND_TRIP}"
    rows = report.suite(f"GDA over tcp round trip ({path}, cpu platform)", columns, note=note)
    for what, label in (("put+signal round trip 8B", "put+signal 8B"), ("signal round trip", "signal")):
        tcp = _need(_figure(across, "gda", what), what)
        loc = _need(_figure(local, "gda", what), f"local {what}")["value"]
        row = [label, tcp["value"], _spread(tcp), bare, loc]
        if with_targets:
            target = targets.tcp_round_trip_target(bare, loc)
            row += [target, "yes" if tcp["value"] <= target else "no"]
        rows.append(row)
    rows = report.suite(f"GDA over tcp put bandwidth ({path}, cpu platform)",
                        [R.size(), R.figure("tcp", "GB/s"), R.figure("bare tcp", "GB/s"), R.figure("tcp/bare", "%")],
                        note="`reps` puts back to back, then a flush (remote completion); bare: one blocking socket; "
                             "one timed run per size (no spread)" +
                             (f"; target: {targets.TCP_BANDWIDTH}" if with_targets else ""))
    for size in sorted({f["bytes"] for f in across if f["what"] == "put bandwidth"}):
        tcp = _need(_figure(across, "gda", "put bandwidth", size), f"put bandwidth {size_label(size)}")["value"]
        anchor = _need(_figure(across, "bare", "tcp stream", size), f"bare tcp stream {size_label(size)}")["value"]
        rows.append([size, tcp, anchor, 100 * tcp / anchor])


def run(ctx):
    ctx.progress("tcp: gda_tcp_bench, across two host ids and local")
    across, local = measure(ctx.options.max_bytes, ctx.options.rounds)
    add_suites(ctx.report, across, local, "two host ids over loopback", ctx.options.targets)
