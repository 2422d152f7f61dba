"""`cco perf --plot FILE.png`: every sweep of a report (rows over transfer sizes) drawn as
figures against size, one panel per suite, with the anchors measured in the same run (every
other figure column) beside CCO's. Ratios (%, a/b) are left to the table.

    python -m cco.cli.plot REPORT.json OUT.png      # a report saved with `cco perf --json`

Needs matplotlib (pip install matplotlib); cco itself does not depend on it.
"""

import sys

from cco.cli.report import Report, parse_size

_UNITS = ("GB/s", "us", "us/rt", "ms")


def _unit(column):
    return "us" if column.endswith(("us", "us/rt", "ms")) else "GB/s"


def _sweeps(report):
    """(suite, unit, sizes, {column: values}) for every suite whose rows go over sizes, one
    entry per unit (bandwidths and latencies are drawn apart)."""
    for s in report.suites:
        if not s["rows"] or s["columns"][0] not in ("size", "payload"):
            continue
        try:
            sizes = [parse_size(str(row[0])) for row in s["rows"]]
        except ValueError:
            continue
        if len(set(sizes)) != len(sizes):
            continue
        groups = {}
        for i, column in enumerate(s["columns"][1:], start=1):
            values = [row[i] for row in s["rows"]]
            if column.endswith(_UNITS) and all(isinstance(v, (int, float)) for v in values):
                groups.setdefault(_unit(column), {})[column] = values
        for unit, series in groups.items():
            yield s, unit, sizes, series


def plot(report, path):
    """Draws the report's sweeps into `path` (PNG); returns the titles of the panels drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise SystemExit(f"cco perf --plot needs matplotlib (pip install matplotlib): {e}") from e
    sweeps = list(_sweeps(report))
    if not sweeps:
        raise SystemExit("cco perf --plot: the report has no sweep over sizes to draw")
    fig, axes = plt.subplots(len(sweeps), 1, figsize=(9, 3.6 * len(sweeps)), squeeze=False)
    titles = []
    for ax, (suite, unit, sizes, series) in zip(axes[:, 0], sweeps):
        for column, values in series.items():
            ax.plot(sizes, values, marker="o", label=column, linewidth=2 if column.startswith(("cco", "put")) else 1)
        ax.set_xscale("log", base=2)
        if unit == "us":
            ax.set_yscale("log")
        ax.set_xlabel("bytes")
        ax.set_ylabel(unit)
        title = f"{suite['suite']} [{unit}]"
        ax.set_title(title if len(title) < 90 else title[:87] + "...", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        titles.append(title)
    fig.suptitle(report.header, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return titles


def main(argv=None):
    import json

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m cco.cli.plot REPORT.json OUT.png", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        report = Report.from_dict(json.load(f))
    for title in plot(report, args[1]):
        print(f"drew: {title}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
