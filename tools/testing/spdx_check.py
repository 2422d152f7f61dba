#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every source file of ours opens with its license: an `SPDX-License-Identifier: MIT` line first
(second after a shebang). Ours: the C, C++ and CUDA sources and headers, Python, shell scripts
(with or without .sh) and Bazel files that git tracks, less third_party/ and what a generator
writes. Names every file without the line; `--add` writes the line into them (in a C comment
where the file opens with one, as the C headers do)."""

import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
LICENSE = "SPDX-License-Identifier: MIT"
SLASH_COMMENTS = {".c", ".cc", ".h", ".hpp", ".cu"}
HASH_COMMENTS = {".py", ".sh", ".bazel", ".bzl"}
BAZEL_NAMES = {"BUILD", "WORKSPACE"}
NOT_OURS = "third_party/"


def comment(rel, first_line):
    """The comment that carries the line in file `rel`, or None where the file is not a source of ours."""
    path = pathlib.PurePosixPath(rel)
    if rel.startswith(NOT_OURS):
        return None
    if path.suffix in SLASH_COMMENTS:
        return f"/* {LICENSE} */" if first_line.startswith("/*") else f"// {LICENSE}"
    shell_script = path.suffix == "" and first_line.startswith("#!") and first_line.rstrip().endswith(("sh", "bash"))
    if path.suffix in HASH_COMMENTS or path.name in BAZEL_NAMES or shell_script:
        return f"# {LICENSE}"
    return None  # the generated Triton stubs (.pyi), data, docs, configuration


def main(argv):
    add = "--add" in argv
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    checked, missing = 0, []
    for rel in filter(None, files.split("\0")):
        path = REPO / rel
        if path.is_symlink() or not path.is_file():
            continue
        lines = path.read_text(errors="replace").split("\n")
        line = comment(rel, lines[0])
        if line is None:
            continue
        checked += 1
        at = 1 if lines[0].startswith("#!") else 0
        if len(lines) > at and lines[at] in (f"# {LICENSE}", f"// {LICENSE}", f"/* {LICENSE} */"):
            continue
        missing.append(rel)
        if add:
            lines.insert(at, line)
            path.write_text("\n".join(lines))
    if missing and not add:
        print(f"without an '{LICENSE}' line at the top (tools/testing/spdx_check.py --add writes it):")
        print("".join(f"  {rel}\n" for rel in missing), end="")
        return 1
    print(f"{checked} source files, {len(missing)} {'given the line' if add else 'without it'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
