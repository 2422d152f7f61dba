# SPDX-License-Identifier: MIT
"""Which benchmark targets of the open issues a set of `cco perf --json` reports meets.

  python3 tools/perf/issue_targets.py REPORT.json|FOLDER ...

Reads every report named (a folder: each *.json in it), finds the table each target is
judged on by its title, and prints one line per target: met, missed, or not measured (no
such table, its anchors read n/a, or a target over NVLink judged on one GPU), with the file
the figures came from. Where several reports have the table, the one made on the most GPUs
counts, and of those the last named. The targets and how each is judged are the package's
(cco_tools/perf/targets.py, which `cco perf --targets` uses on its own run); reports of
every schema are read.
"""

import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
from cco_tools.perf import targets  # noqa: E402

TARGETS = targets.TARGETS


def load(paths):
    """(file, report) for every JSON file named or in a folder named; files that do not
    parse are left out (a folder of results holds other JSON too)."""
    reports = []
    for path in paths:
        for name in sorted(glob.glob(os.path.join(path, "*.json"))) if os.path.isdir(path) else [path]:
            try:
                with open(name) as f:
                    reports.append((name, json.load(f)))
            except (OSError, ValueError):
                continue
    return reports


def judge(paths):
    """[(issue, target, verdict, detail, file)] for the reports at `paths`."""
    return targets.judge(load(paths))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", help="cco perf --json reports, or folders of them")
    opts = ap.parse_args(argv)
    print("| issue | target | verdict | measured | report |")
    print("|---|---|---|---|---|")
    for issue, name, verdict, detail, source in judge(opts.reports):
        print(f"| {issue} | {name} | {verdict} | {detail} | {source} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
