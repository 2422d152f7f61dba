# SPDX-License-Identifier: MIT
"""tools/testing/doc_links_check.py: every relative link of README.md, docs/ and the results'
READMEs leads to a file of this tree; and the checker finds a broken one."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.getcwd(), "tools", "testing"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "testing"))
import doc_links_check  # noqa: E402


def checkout():
    """The tree under test: Bazel's runfiles (the working folder), else this file's checkout."""
    for root in (os.getcwd(), os.path.abspath(os.path.join(HERE, "..", ".."))):
        if os.path.isfile(os.path.join(root, "README.md")) and os.path.isdir(os.path.join(root, "docs")):
            return root
    raise AssertionError("no README.md and docs/ found")


def test_every_relative_link_resolves():
    root = checkout()
    pages = {os.path.relpath(p, root) for p in doc_links_check.pages(root)}
    assert {"README.md", os.path.join("docs", "README.md")} <= pages
    assert doc_links_check.broken_links(root) == []


def test_a_broken_link_is_found_and_code_is_not_a_link(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("ok\n")
    (tmp_path / "README.md").write_text(
        "[a page](docs/page.md#part) [the web](https://example.org) [here](#top)\n"
        "`[not a link](gone.md)`\n"
        "```\n[inside a block](gone.md)\n```\n"
        "[missing](docs/gone.md)\n")
    assert doc_links_check.broken_links(str(tmp_path)) == [("README.md", 6, "docs/gone.md")]
    assert doc_links_check.main([str(tmp_path)]) == 1
