"""Results of `cco perf`: rows of one suite, printed as a table or gathered as JSON.

A live report prints each suite's heading when the suite starts and each row the moment it is
measured, so a long run shows its progress; the table is the same as `print_table` prints
afterwards. Columns have fixed widths (a row is printed before the next is known): the first,
the row's label, is left-aligned in 24 characters, the figures right-aligned in 12."""

import json

LABEL_WIDTH = 24
FIGURE_WIDTH = 12


class Rows(list):
    """One suite's rows; a row appended to a live report's suite is printed at once."""

    def __init__(self, columns, out=None):
        super().__init__()
        self.columns = columns
        self.out = out

    def append(self, row):
        super().append(row)
        if self.out is not None:
            print(format_row(row, self.columns), file=self.out, flush=True)

    def extend(self, rows):
        for row in rows:
            self.append(row)


class Report:
    def __init__(self, header, meta=None, live=None):
        """live: a stream that gets the header now and every suite and row as they come."""
        self.header = header
        self.meta = meta or {}  # the run's record (cli/meta.py): command, versions, settings
        self.suites = []
        self.live = None
        if live is not None:
            print(header, file=live, flush=True)
            self.go_live(live)

    def go_live(self, out):
        """Suites started from now on print as they are measured (the header is not repeated)."""
        self.live = out

    def suite(self, name, columns, note=""):
        rows = Rows(columns, self.live)
        self.suites.append({"suite": name, "columns": columns, "rows": rows, "note": note})
        if self.live is not None:
            print(format_heading(name, columns, note), file=self.live, flush=True)
        return rows

    def print_table(self, out):
        print(self.header, file=out)
        for s in self.suites:
            print(format_heading(s["suite"], s["columns"], s["note"]), file=out)
            for row in s["rows"]:
                print(format_row(row, s["columns"]), file=out)
        out.flush()

    def to_json(self):
        return json.dumps({"header": self.header, "meta": self.meta, "suites": [
            {"suite": s["suite"], "note": s["note"], "columns": s["columns"],
             "rows": [dict(zip(s["columns"], r)) for r in s["rows"]]}
            for s in self.suites]}, indent=2)

    @classmethod
    def from_dict(cls, data):
        """The report that to_json wrote (another process's)."""
        report = cls(data["header"], data.get("meta"))
        for s in data["suites"]:
            rows = report.suite(s["suite"], s["columns"], s["note"])
            rows.extend([row[c] for c in s["columns"]] for row in s["rows"])
        return report


def format_heading(name, columns, note):
    """A blank line, '# name  (note)', and the column names."""
    title = f"\n# {name}" + (f"  ({note})" if note else "")
    return title + "\n" + format_row(columns, columns)


def format_row(row, columns):
    cells = [_fmt(v) for v in row]
    first = cells[0].ljust(max(LABEL_WIDTH, len(columns[0])))
    rest = [c.rjust(max(FIGURE_WIDTH, len(name))) for c, name in zip(cells[1:], columns[1:])]
    return "  ".join([first, *rest])


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 1000 else f"{v:.1f}"
    return str(v)


def size_label(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def parse_size(text):
    text = text.strip().upper().replace("IB", "").replace("B", "")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * scale)
