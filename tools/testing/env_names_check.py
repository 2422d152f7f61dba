# SPDX-License-Identifier: MIT
"""Every CCO_*/MORI_* name the sources read is in cco._env.KNOWN, which `cco doctor` uses to
name variables set by mistake: a variable added without its entry fails here, not silently in
a user's doctor run. Run from the repository root (.ci/run)."""

import os
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
os.chdir(REPO)
sys.path.insert(0, str(REPO / "bindings" / "python"))
from cco import _env  # noqa: E402

ROOTS = ["host/src", "host/include", "bindings/python/cco", "bindings/python/cco_tools", "device", "tools", "examples",
         "tests", ".ci"]
# A quoted name (getenv("X"), environ["X"]) or a shell expansion ($X, ${X...}) is a variable's.
NAME = re.compile(r"[\"'`]((?:CCO|MORI)_[A-Z0-9_]+)[\"'`]|\$\{?((?:CCO|MORI)_[A-Z0-9_]+)")

read = set()
for root in ROOTS:
    for path in pathlib.Path(root).rglob("*"):
        if path.is_file() and (path.suffix in (".py", ".cc", ".h", ".hpp", ".cu", ".sh") or path.name == "run"):
            for line in path.read_text(errors="replace").splitlines():
                # A test may set a name on purpose to show the library ignores it; it says so.
                if "env-check: ignored on purpose" not in line:
                    read |= {a or b for a, b in NAME.findall(line)}
# Macros the headers define are names too (tests quote them), not variables.
macros = {m for root in ("abi", "host/include", "device") for path in pathlib.Path(root).rglob("*.h*")
          for m in re.findall(r"#define\s+((?:CCO|MORI)_[A-Z0-9_]+)", path.read_text(errors="replace"))}
assert len(read) > 20 and pathlib.Path(_env.__file__).resolve().is_relative_to(REPO), (len(read), _env.__file__)
missing = sorted(read - macros - _env.KNOWN)
if missing:
    sys.exit(f"read by the sources but not in cco._env.KNOWN: {', '.join(missing)}")
print(f"{len(read)} variable names read, every one in cco._env.KNOWN: ok")
