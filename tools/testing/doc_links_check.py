# SPDX-License-Identifier: MIT
"""Every relative link of the user documentation leads to a file or folder of the checkout.

  python3 tools/testing/doc_links_check.py [ROOT]      (default: the checkout this file is in)

Reads README.md, docs/*.md and results/*/README.md under ROOT, takes every Markdown link
`[text](target)` whose target is a path (not http:, https:, mailto: or a bare #anchor), drops
its #anchor, and checks that the path, relative to the page, exists. Prints each broken link as
`page:line: target` and exits 1 if there is one. Code spans are skipped: a path in backticks
names a file, it does not link to it.
"""

import glob
import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`[^`]*`")
EXTERNAL = ("http://", "https://", "mailto:")


def pages(root):
    found = [os.path.join(root, "README.md")]
    found += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    found += sorted(glob.glob(os.path.join(root, "results", "*", "README.md")))
    return [p for p in found if os.path.isfile(p)]


def links(text):
    """(line number, target) of every link outside code blocks and code spans."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            yield number, match.group(1)


def broken_links(root):
    """[(page, line, target)] of every relative link whose path does not exist."""
    broken = []
    for page in pages(root):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for number, target in links(text):
            if target.startswith(EXTERNAL) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), path))):
                broken.append((os.path.relpath(page, root), number, target))
    return broken


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    root = argv[0] if argv else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    checked = pages(root)
    if not checked:
        print(f"doc_links_check: no README.md under {root}")
        return 1
    broken = broken_links(root)
    for page, number, target in broken:
        print(f"{page}:{number}: {target}")
    print(f"doc_links_check: {len(checked)} pages, {len(broken)} broken links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
