"""Every CCO_*/MORI_* name the sources read is in cco._env.KNOWN, which `cco doctor` uses to
name variables set by mistake: a variable added without its entry fails here, not silently in
a user's doctor run. Run from the repository root (.ci/run)."""

import pathlib
import re
import sys

sys.path.insert(0, "bindings/python")
from cco import _env  # noqa: E402

ROOTS = ["host/src", "host/include", "bindings/python/cco", "device", "tools/perf", "examples"]
NAME = re.compile(r"[\"'`]((?:CCO|MORI)_[A-Z0-9_]+)[\"'`]")

read = set()
for root in ROOTS:
    for path in pathlib.Path(root).rglob("*"):
        if path.suffix in (".py", ".cc", ".h", ".hpp", ".cu", ".sh"):
            read |= set(NAME.findall(path.read_text(errors="replace")))  # a quoted name is a variable's
missing = sorted(read - _env.KNOWN)
if missing:
    sys.exit(f"read by the sources but not in cco._env.KNOWN: {', '.join(missing)}")
print(f"{len(read)} variable names read, every one in cco._env.KNOWN: ok")
