# SPDX-License-Identifier: MIT
"""Results of `cco perf`: tables in the style of nccl-tests, or one JSON document.

A table is a title, its note, the heading lines (the column names, then their units) and one
line per row; the heading lines start with '#', so the rows are the only lines without one.
Every column has a fixed width, so a row is printed, aligned with the others, the moment it is
measured (a live report); `print_table` prints the same text afterwards. Numbers are right-
aligned, labels left-aligned; a size is a number of bytes; a figure not measured reads "-".

The JSON document (SCHEMA) carries the same tables: each column's name, unit and key, and
each row as an object from key to value, numbers as numbers (null where nothing was
measured). A figure's key is its name and unit ("cco us/rt"), any other column's its name.
"""

import json
import math
import sys
from dataclasses import dataclass

SCHEMA = 1

BYTES, INT, FLOAT, TEXT = "bytes", "int", "float", "text"
_WIDTHS = {BYTES: 12, INT: 8, FLOAT: 10, TEXT: 8}
GAP = "  "


@dataclass(frozen=True)
class Column:
    name: str
    unit: str = ""
    kind: str = FLOAT
    width: int = 0  # at least; the name and the unit widen it

    @property
    def key(self):
        return f"{self.name} {self.unit}" if self.kind == FLOAT and self.unit else self.name

    @property
    def cells(self):
        """The printed width."""
        return max(self.width or _WIDTHS[self.kind], len(self.name), len(self.unit) + 2)

    def format(self, value):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            text = "-"
        elif self.kind == FLOAT and isinstance(value, (int, float)) and not isinstance(value, bool):
            text = f"{value:.3f}" if abs(value) < 1000 else f"{value:.1f}"
        else:
            text = str(value)
        return text.ljust(self.cells) if self.kind == TEXT else text.rjust(self.cells)

    def to_dict(self):
        return {"name": self.name, "unit": self.unit, "kind": self.kind, "width": self.width, "key": self.key}

    @classmethod
    def from_dict(cls, data):
        return cls(data["name"], data.get("unit", ""), data.get("kind", FLOAT), data.get("width", 0))


# The columns most tables have.
def size(name="size"):
    return Column(name, "B", BYTES)


def count():
    return Column("count", "elements", INT, 10)


def text(name, width=0):
    return Column(name, "", TEXT, width)


def number(name, unit="", width=0):
    """An integer that is a setting of the row, not a figure (ranks, warps)."""
    return Column(name, unit, INT, width)


def figure(name, unit):
    return Column(name, unit, FLOAT)


def spread():
    """(slowest - fastest trial) / median of the figure before it, in % (measure.Timing)."""
    return Column("spread", "%", FLOAT, 7)


def format_heading(title, columns, note=""):
    """A blank line, '# title', the note, and the heading lines: the names, then the units
    (where a column has one)."""
    def line(texts):
        return ("# " + GAP.join(t.ljust(c.cells) if c.kind == TEXT else t.rjust(c.cells)
                                for c, t in zip(columns, texts))).rstrip()

    lines = ["", f"# {title}"] + [f"#   {text}" for text in _wrap(note)] + [line([c.name for c in columns])]
    if any(c.unit for c in columns):
        lines.append(line([f"({c.unit})" if c.unit else "" for c in columns]))
    return "\n".join(lines)


def format_row(row, columns):
    return ("  " + GAP.join(c.format(v) for c, v in zip(columns, row))).rstrip()


def _wrap(note, width=100):
    lines, line = [], ""
    for word in note.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line] if line else lines


class Rows(list):
    """One table's rows; a row appended to a live report's table is printed at once."""

    def __init__(self, columns, out=None):
        super().__init__()
        self.columns = columns
        self.out = out

    def append(self, row):
        if len(row) != len(self.columns):
            raise ValueError(f"cco perf: a row of {len(row)} values for {len(self.columns)} columns: {row}")
        row = [float(v) if isinstance(v, float) else v for v in row]  # a Timing is kept as the number it is
        super().append(row)
        if self.out is not None:
            print(format_row(row, self.columns), file=self.out, flush=True)

    def extend(self, rows):
        for row in rows:
            self.append(row)


class Report:
    def __init__(self, header, meta=None, live=None, legend=""):
        """live: a stream that gets the header now and every table and row as they come;
        legend: what every table's figures are (printed under the header)."""
        self.header = header
        self.legend = legend
        self.meta = meta or {}  # the run's record (perf/meta.py): command, versions, settings
        self.suites = []
        self.live = None
        if live is not None:
            print(self._top(), file=live, flush=True)
            self.go_live(live)

    def _top(self):
        return "\n".join([self.header] + [f"# {line}" for line in _wrap(self.legend)])

    def go_live(self, out):
        """Tables started from now on print as they are measured (the header is not repeated)."""
        self.live = out

    def suite(self, title, columns, note=""):
        rows = Rows(list(columns), self.live)
        self.suites.append({"suite": title, "columns": rows.columns, "rows": rows, "note": note})
        if self.live is not None:
            print(format_heading(title, rows.columns, note), file=self.live, flush=True)
        return rows

    def print_table(self, out):
        print(self._top(), file=out)
        for s in self.suites:
            print(format_heading(s["suite"], s["columns"], s["note"]), file=out)
            for row in s["rows"]:
                print(format_row(row, s["columns"]), file=out)
        out.flush()

    def to_dict(self):
        return {"schema": SCHEMA, "header": self.header, "legend": self.legend, "meta": self.meta, "suites": [
            {"suite": s["suite"], "note": s["note"], "columns": [c.to_dict() for c in s["columns"]],
             "rows": [{c.key: _number(v) for c, v in zip(s["columns"], row)} for row in s["rows"]]}
            for s in self.suites]}

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    @classmethod
    def from_dict(cls, data):
        """The report that to_json wrote (another process's)."""
        if data.get("schema") != SCHEMA:
            raise ValueError(f"cco perf: a report of schema {data.get('schema')}, this is schema {SCHEMA}")
        report = cls(data["header"], data.get("meta"), legend=data.get("legend", ""))
        for s in data["suites"]:
            columns = [Column.from_dict(c) for c in s["columns"]]
            rows = report.suite(s["suite"], columns, s["note"])
            rows.extend([row.get(c.key) for c in columns] for row in s["rows"])
        return report


def _number(value):
    """JSON has no NaN or infinity: a figure that is neither measured nor finite is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def size_label(n):
    """A size for a sentence (a note, a step's name): 4KiB, 1MiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def parse_size(text):
    text = text.strip().upper().replace("IB", "").replace("B", "")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * scale)


def main(argv=None):
    """python -m cco_tools.perf.report REPORT.json: the tables of a saved report."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cco_tools.perf.report REPORT.json", file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8") as f:
            report = Report.from_dict(json.load(f))
    except (OSError, ValueError, KeyError) as e:  # a run that failed leaves no report, or half of one
        print(f"no report in {args[0]}: {e}", file=sys.stderr)
        return 1
    report.print_table(sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
