# SPDX-License-Identifier: MIT
"""`cco perf --suites tcp` between two network namespaces (root): the same benchmark and
anchors (cco_tools/perf/suites/tcp.py), with the two "hosts" in namespaces joined by veth and a bridge
instead of on loopback; falls back to loopback where namespaces cannot be made.

  python3 tools/perf/tcp_bench.py [--max-bytes N] [--loopback] [--targets] [--json OUT]
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "python"))
import netns  # noqa: E402
from cco_tools.perf.report import Report  # noqa: E402
from cco_tools.perf.suites import tcp as perf_tcp  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--loopback", action="store_true", help="loopback even where namespaces work")
    ap.add_argument("--targets", action="store_true", help="the project's target beside each round trip")
    ap.add_argument("--json", default="")
    opts = ap.parse_args()
    hosts = netns.Hosts(2) if not opts.loopback and netns.available() else None
    try:
        if hosts:
            commands = [lambda argv, k=k: hosts.command(k, argv) for k in (0, 1)]
            across, local = perf_tcp.measure(opts.max_bytes, opts.rounds, commands, hosts.address(1), "=cco0")
            path = "two network namespaces joined by veth and a bridge"
        else:
            across, local = perf_tcp.measure(opts.max_bytes, opts.rounds)
            path = "two host ids over loopback"
    finally:
        if hosts:
            hosts.remove()
    report = Report(f"tcp backend benchmark: {os.cpu_count()} cores")
    perf_tcp.add_suites(report, across, local, path, opts.targets)
    report.print_table(sys.stdout)
    if opts.json:
        with open(opts.json, "w") as f:
            f.write(report.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
