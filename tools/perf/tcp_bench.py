"""The tcp backend's benchmark (gda_tcp_bench.cc), with its anchors from the same run:

  across   two ranks on two "hosts" joined by tcp: two network namespaces (root), else
           loopback with distinct CCO_HOSTID; the bare TCP ping-pong and stream between the
           same endpoints, then GDA put+signal / signal round trips and put bandwidth
  local    the same GDA round trips with both ranks on one host (the local backend): twice
           the proxy's one-way overhead without a network

Targets (issue 11): round trip over tcp <= bare ping-pong + the local round trip; large-put
bandwidth >= 80 % of the bare stream.

  python3 tools/perf/tcp_bench.py BENCH_BINARY [--max-bytes N] [--loopback] [--json OUT]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import netns  # noqa: E402


def run_pair(bench, suites, max_bytes, host_ids, commands, address, ifname):
    with tempfile.TemporaryDirectory() as tmp:
        id_file = os.path.join(tmp, "id")
        procs = []
        for rank in (0, 1):
            env = dict(os.environ, CCO_PLATFORM="cpu", CCO_HOSTID=host_ids[rank], CCO_SOCKET_IFNAME=ifname,
                       CCO_TIMEOUT_MS="60000")
            env.pop("CCO_NET", None)
            env.pop("CCO_TEST_NODES_PER_HOST", None)
            argv = commands[rank]([bench, str(rank), id_file, address, suites, str(max_bytes)])
            procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=600) for p in procs]
        for rank, (p, (out, err)) in enumerate(zip(procs, outs)):
            if p.returncode != 0:
                raise SystemExit(f"rank {rank} failed ({p.returncode}):\n{err}")
        return [json.loads(line) for line in outs[0][0].splitlines() if line.startswith("{")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench")
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--loopback", action="store_true", help="loopback even where namespaces work")
    ap.add_argument("--json", default="")
    opts = ap.parse_args()

    use_netns = not opts.loopback and netns.available()
    hosts = netns.Hosts(2) if use_netns else None
    try:
        if hosts:
            across_cmds = [lambda a, k=k: hosts.command(k, a) for k in (0, 1)]
            address, ifname, path = hosts.address(1), "=cco0", "two network namespaces joined by veth and a bridge"
        else:
            across_cmds = [lambda a: a, lambda a: a]
            address, ifname, path = "127.0.0.1", "=lo", "loopback"
        across = run_pair(opts.bench, "bare,gda", opts.max_bytes, ["benchA", "benchB"], across_cmds, address, ifname)
        local = run_pair(opts.bench, "gda", 1 << 20, ["benchA", "benchA"], [lambda a: a, lambda a: a], "127.0.0.1",
                         "=lo")
    finally:
        if hosts:
            hosts.remove()

    def get(figures, suite, what, size=None):
        for f in figures:
            if f["suite"] == suite and f["what"] == what and (size is None or f["bytes"] == size):
                return f["value"]
        return None

    lines = [f"tcp backend benchmark: {path}, cpu platform, {os.cpu_count()} cores, {platform.node()}", ""]
    bare_rt = get(across, "bare", "tcp pingpong 8B")
    local_rt = get(local, "gda", "put+signal round trip 8B")
    lines.append(f"{'round trip (us)':28s} {'tcp':>8s} {'bare tcp':>9s} {'local':>8s} {'target':>8s}")
    verdicts = []
    for what in ("put+signal round trip 8B", "signal round trip"):
        tcp, loc = get(across, "gda", what), get(local, "gda", what)
        target = bare_rt + loc
        verdicts.append(tcp <= target)
        lines.append(f"{what:28s} {tcp:8.2f} {bare_rt:9.2f} {loc:8.2f} {target:8.2f} {'met' if tcp <= target else 'MISSED'}")
    lines += ["", f"{'put size':>10s} {'tcp GB/s':>9s} {'bare GB/s':>10s} {'tcp/bare %':>11s}"]
    sizes = sorted({f["bytes"] for f in across if f["what"] == "put bandwidth"})
    for size in sizes:
        tcp, bare = get(across, "gda", "put bandwidth", size), get(across, "bare", "tcp stream", size)
        lines.append(f"{size:10d} {tcp:9.3f} {bare:10.3f} {100 * tcp / bare:10.1f}%")
    largest = sizes[-1]
    ratio = get(across, "gda", "put bandwidth", largest) / get(across, "bare", "tcp stream", largest)
    verdicts.append(ratio >= 0.8)
    lines.append(f"largest put: {100 * ratio:.1f}% of the bare stream (target 80%): {'met' if ratio >= 0.8 else 'MISSED'}")
    print("\n".join(lines))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"path": path, "cores": os.cpu_count(), "host": platform.node(), "across": across,
                       "local": local, "table": lines}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
