# SPDX-License-Identifier: MIT
"""The host SDK's layers: every #include under host/src points down or sideways, never up.

A lower layer knows nothing of the ones built on it, so each can be read, tested and changed
without them: the proxy moves bytes for whatever set it up, the network backends carry them for
whatever drives them. The table below is the one place that says which layer a folder is."""

import re
from pathlib import Path

import pytest

# host/src's folders, lowest layer first; folders on one line are one layer (they may include
# each other and everything below, nothing above).
LAYERS = [
    ["common"],
    ["platform", "topology", "auth"],
    ["bootstrap", "memory"],
    ["net"],
    ["proxy"],
    ["comm"],
    ["api"],
]
LEVEL = {folder: level for level, folders in enumerate(LAYERS) for folder in folders}

# Under Bazel the sources come as runfiles beside this file (//host:sources); from a checkout
# they are the checkout's own.
SRC = Path(__file__).parent.parent.parent / "host" / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def sources(src=SRC):
    return sorted(p for p in src.rglob("*") if p.suffix in (".h", ".cc"))


def upward_arrows(src=SRC):
    """(file, include, why) for every include of a higher layer, and every folder the table lacks."""
    found = []
    for path in sources(src):
        folder = path.relative_to(src).parts[0]
        if folder not in LEVEL:
            found.append((path, "", f"host/src/{folder}/ has no layer in LAYERS"))
            continue
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            to = target.split("/")[0]
            if to in LEVEL and LEVEL[to] > LEVEL[folder]:
                found.append((path, target, f"{folder} (layer {LEVEL[folder]}) includes {to} (layer {LEVEL[to]})"))
    return found


def test_sources_are_there():
    assert SRC.is_dir(), f"{SRC} is missing (the test's data: //host:sources)"
    assert len(sources()) > 50


def test_no_include_points_up():
    arrows = upward_arrows()
    if arrows:
        listing = "\n".join(f"  host/src/{p.relative_to(SRC)}: #include \"{t}\": {why}" for p, t, why in arrows)
        pytest.fail(f"{len(arrows)} include(s) point up the layers:\n{listing}", pytrace=False)


@pytest.mark.parametrize("folder", sorted(LEVEL))
def test_every_layer_exists(folder):
    # A folder renamed or removed must leave the table too, or the table stops meaning anything.
    assert (SRC / folder).is_dir(), f"LAYERS names host/src/{folder}/, which does not exist"


def test_finds_an_upward_include(tmp_path):
    # The checker itself: a proxy file that includes the communicator is caught.
    (tmp_path / "proxy").mkdir()
    (tmp_path / "comm").mkdir()
    (tmp_path / "proxy" / "x.cc").write_text('#include "proxy/x.h"\n#include "comm/communicator.h"\n')
    (tmp_path / "comm" / "y.cc").write_text('#include "proxy/x.h"\n')
    arrows = upward_arrows(tmp_path)
    assert [(p.name, t) for p, t, _ in arrows] == [("x.cc", "comm/communicator.h")]
