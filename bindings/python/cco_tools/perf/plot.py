# SPDX-License-Identifier: MIT
"""`cco perf --plot FILE.png`: every table of a report drawn, one panel per table and unit,
with the anchors measured in the same run (every other figure column) beside CCO's:

  a table over sizes (its first column bytes)  lines against the size, on log axes;
  any other table                              bars, one group per row (its labels).

Ratios (%, a/b) and the spread are left to the table.

    python -m cco_tools.perf.plot REPORT.json OUT.png    # a report saved with `cco perf --json FILE`

Needs matplotlib (pip install matplotlib); cco itself does not depend on it.
"""

import json
import sys

from cco_tools.perf.report import BYTES, FLOAT, Report

_DRAWN_UNITS = ("GB/s", "GB/s/rank", "us", "us/rt", "us/round", "us/launch", "us/call", "ms")
SIZES, LABELS = "sizes", "labels"


def panels(report):
    """(table, unit, how, x, {column key: values}) for every table with a figure to draw, one
    entry per unit (bandwidths and latencies are drawn apart); how: SIZES (x: bytes) or
    LABELS (x: each row's labels)."""
    for s in report.suites:
        columns, rows = s["columns"], s["rows"]
        if not rows:
            continue
        figures = [i for i, c in enumerate(columns) if c.kind == FLOAT and c.unit in _DRAWN_UNITS]
        if not figures:
            continue
        sizes = [row[0] for row in rows]
        if columns[0].kind == BYTES and len(set(sizes)) == len(sizes) and all(isinstance(b, int) and b > 0
                                                                            for b in sizes):
            how, x = SIZES, sizes
        else:
            labels = [i for i, c in enumerate(columns) if c.kind != FLOAT]
            how, x = LABELS, [" ".join(str(row[i]) for i in labels) for row in rows]
        groups = {}
        for i in figures:
            values = [row[i] if isinstance(row[i], (int, float)) else float("nan") for row in rows]
            groups.setdefault(columns[i].unit, {})[columns[i].key] = values
        for unit, series in groups.items():
            yield s, unit, how, x, series


def plot(report, path):
    """Draws the report's tables into `path` (PNG); returns the titles of the panels drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise SystemExit(f"cco perf --plot needs matplotlib (pip install matplotlib): {e}") from e
    drawn = list(panels(report))
    if not drawn:
        raise SystemExit("cco perf --plot: the report has no figure to draw")
    ncols = 1 if len(drawn) <= 4 else 2
    nrows = (len(drawn) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(9 * ncols, 3.8 * nrows), squeeze=False)
    titles = []
    for ax, (table, unit, how, x, series) in zip(axes.flat, drawn):
        if how == SIZES:
            for key, values in series.items():
                ax.plot(x, values, marker="o", label=key, linewidth=2 if key.startswith(("cco", "put")) else 1)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("bytes")
        else:
            width = 0.8 / len(series)
            for k, (key, values) in enumerate(series.items()):
                ax.bar([i + k * width for i in range(len(x))], values, width, label=key)
            ax.set_xticks([i + 0.4 - width / 2 for i in range(len(x))])
            ax.set_xticklabels(x, rotation=30, ha="right", fontsize=7)
        if unit.startswith("us") or unit == "ms":
            ax.set_yscale("log")
        ax.set_ylabel(unit)
        title = f"{table['suite']} [{unit}]"
        ax.set_title(title if len(title) < 90 else title[:87] + "...", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        titles.append(title)
    for ax in list(axes.flat)[len(drawn):]:
        ax.set_visible(False)
    fig.suptitle(report.header, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return titles


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m cco_tools.perf.plot REPORT.json OUT.png", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        report = Report.from_dict(json.load(f))
    for title in plot(report, args[1]):
        print(f"drew: {title}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
