"""Results of `cco perf`: rows of one suite, printed as a table or gathered as JSON."""

import json


class Report:
    def __init__(self, header, meta=None):
        self.header = header
        self.meta = meta or {}  # the run's record (cli/meta.py): command, versions, settings
        self.suites = []

    def suite(self, name, columns, note=""):
        rows = []
        self.suites.append({"suite": name, "columns": columns, "rows": rows, "note": note})
        return rows

    def print_table(self, out):
        print(self.header, file=out)
        for s in self.suites:
            print(f"\n# {s['suite']}" + (f"  ({s['note']})" if s["note"] else ""), file=out)
            widths = [max(len(c), 12) for c in s["columns"]]
            print("  ".join(c.rjust(w) for c, w in zip(s["columns"], widths)), file=out)
            for row in s["rows"]:
                print("  ".join(_fmt(v).rjust(w) for v, w in zip(row, widths)), file=out)
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
            report.suite(s["suite"], s["columns"], s["note"]).extend([row[c] for c in s["columns"]] for row in s["rows"])
        return report


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
