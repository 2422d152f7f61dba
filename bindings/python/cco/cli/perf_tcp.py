"""`cco perf --suites tcp`: the tcp backend against its anchors, measured in the same run by
the same two processes between the same endpoints (gda_tcp_bench, shipped with the package):

  across   two ranks on two "hosts" (distinct CCO_HOSTID; loopback here, network namespaces
           with tools/perf/tcp_bench.py): a bare TCP ping-pong and stream, then GDA put+signal
           and signal round trips and put bandwidth through the tcp backend
  local    the same round trips with both ranks on one host through the local backend, with
           the direct path off (CCO_GDA_DIRECT_MAX_BYTES=0): the tcp path goes through both
           proxies too, so the proxies' own cost is the anchor, not the device's stores

The cpu platform (host memory): these are the backend's figures, not a GPU's. Targets
(issue 11): round trip <= bare ping-pong + the local round trip; the largest put >= 80 % of
the bare stream.
"""

import json
import os
import subprocess
import tempfile

from cco import _resources
from cco.cli.procs import kill_all, wait_all
from cco.cli.report import size_label


def bench_path():
    path = _resources.tool_path("gda_tcp_bench")
    if path is None:
        raise SystemExit("cco perf --suites tcp: gda_tcp_bench is neither in the package nor built "
                         "(bazel build //tools/perf:gda_tcp_bench)")
    return path


def run_pair(bench, suites, max_bytes, rounds, host_ids, commands, address, ifname, extra_env=None):
    """Rank 0 and 1 of gda_tcp_bench; rank 0's figures."""
    with tempfile.TemporaryDirectory() as tmp:
        id_file = os.path.join(tmp, "id")
        procs = []
        try:
            _start_pair(procs, bench, suites, max_bytes, rounds, host_ids, commands, address, ifname, id_file, extra_env)
        except BaseException:
            kill_all(procs)
            raise
        outs = wait_all(procs, 900, "gda_tcp_bench")
        return [json.loads(line) for line in outs[0][0].splitlines() if line.startswith("{")]


def _start_pair(procs, bench, suites, max_bytes, rounds, host_ids, commands, address, ifname, id_file, extra_env):
    """Starts rank 0 and 1 of gda_tcp_bench into `procs` (the caller kills them if this fails)."""
    for rank in (0, 1):
        env = dict(os.environ, CCO_PLATFORM="cpu", CCO_HOSTID=host_ids[rank], CCO_SOCKET_IFNAME=ifname,
                   CCO_TIMEOUT_MS="60000")
        for name in ("CCO_NET", "CCO_TEST_NODES_PER_HOST", "CCO_UNIQUE_ID", "CCO_RANK", "CCO_WORLD_SIZE",
                     "CCO_GDA_DIRECT_MAX_BYTES"):
            env.pop(name, None)
        env.update(extra_env or {})
        argv = commands[rank]([bench, str(rank), id_file, address, suites, str(max_bytes), str(rounds)])
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))


def measure(max_bytes, rounds, across_commands=None, address="127.0.0.1", ifname="=lo"):
    """(across, local) figures; across_commands wraps each rank's argv (network namespaces)."""
    bench = bench_path()
    plain = [lambda argv: argv, lambda argv: argv]
    across = run_pair(bench, "bare,gda", max_bytes, rounds, ["cco-perf-a", "cco-perf-b"], across_commands or plain,
                      address, ifname)
    local = run_pair(bench, "gda", min(max_bytes, 1 << 20), rounds, ["cco-perf-a", "cco-perf-a"], plain, "127.0.0.1",
                     "=lo", {"CCO_GDA_DIRECT_MAX_BYTES": "0"})
    return across, local


def _need(value, what):
    """A figure the bench must have printed; its absence is a failed run, said as such."""
    if value is None:
        raise RuntimeError(f"cco perf tcp: gda_tcp_bench printed no '{what}' figure")
    return value


def _figure(figures, suite, what, size=None):
    for f in figures:
        if f["suite"] == suite and f["what"] == what and (size is None or f["bytes"] == size):
            return f["value"]
    return None


def add_suites(report, across, local, path):
    """The round-trip and bandwidth suites, each figure beside its anchors."""
    bare = _need(_figure(across, "bare", "tcp pingpong 8B"), "bare tcp pingpong 8B")
    rows = report.suite(f"GDA over tcp round trip ({path}, cpu platform)",
                        ["payload", "tcp us/rt", "bare tcp us/rt", "local us/rt", "target us/rt", "met"],
                        note="target: the bare ping-pong between the same endpoints + the local backend's round trip "
                             "(both ranks on one host, through their proxies: the direct path off)")
    for what, label in (("put+signal round trip 8B", "put+signal 8B"), ("signal round trip", "signal")):
        tcp, loc = _need(_figure(across, "gda", what), what), _need(_figure(local, "gda", what), f"local {what}")
        rows.append([label, tcp, bare, loc, bare + loc, "yes" if tcp <= bare + loc else "no"])
    rows = report.suite(f"GDA over tcp put bandwidth ({path}, cpu platform)",
                        ["size", "tcp GB/s", "bare tcp GB/s", "tcp/bare %"],
                        note="`reps` puts back to back, then a flush (remote completion); bare: one blocking socket; "
                             "target at the largest size: 80 %")
    for size in sorted({f["bytes"] for f in across if f["what"] == "put bandwidth"}):
        tcp = _need(_figure(across, "gda", "put bandwidth", size), f"put bandwidth {size_label(size)}")
        anchor = _need(_figure(across, "bare", "tcp stream", size), f"bare tcp stream {size_label(size)}")
        rows.append([size_label(size), tcp, anchor, 100 * tcp / anchor])


def run_suite(report, opts):
    top = min(opts.max_bytes, 1 << 20) if opts.quick else min(opts.max_bytes, 64 << 20)
    across, local = measure(top, 200 if opts.quick else 2000)
    add_suites(report, across, local, "two host ids over loopback")
