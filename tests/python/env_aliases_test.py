# SPDX-License-Identifier: MIT
"""The guide's MORI_* spellings of CCO's variables: one alias table in the library and the
package, and each alias honoured (the CCO_ name wins where both are set)."""

import pathlib
import re
import subprocess
import sys

import pytest

from cco import _env



def repo_file(relative):
    """A file of the tree: in Bazel's runfiles (the cwd), else in the checkout."""
    for root in (pathlib.Path.cwd(), pathlib.Path(__file__).resolve().parents[2]):
        if (root / relative).exists():
            return root / relative
    pytest.fail(f"{relative} not found")


def library_aliases():
    """The host library's table (host/src/common/env.cc): CCO name -> MORI name."""
    source = repo_file("host/src/common/env.cc").read_text()
    table = source[source.index("kAliases[] = {"):]
    table = table[:table.index("};")]
    return dict(re.findall(r'\{"(CCO_\w+)", "(MORI_\w+)"\}', table))


def test_the_library_and_the_package_alias_the_same_names():
    aliases = library_aliases()
    assert len(aliases) >= 9
    assert aliases == _env.ALIASES


@pytest.mark.parametrize("name", sorted(_env.ALIASES))
def test_each_alias_is_read_and_the_cco_name_wins(monkeypatch, name):
    monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(_env.ALIASES[name], "from-mori")
    assert _env.get(name) == "from-mori"
    monkeypatch.setenv(name, "from-cco")
    assert _env.get(name) == "from-cco"


def test_the_library_reads_an_alias():
    """MORI_SOCKET_IFNAME steers the host library's bootstrap interface as CCO_SOCKET_IFNAME
    would: an interface that does not exist is named in the error."""
    code = ("import cco\n"
            "try:\n    cco.Communicator.get_unique_id()\nexcept cco.CCOError as e:\n    print(e)\n")
    env = {"PATH": "/usr/bin:/bin", "CCO_PLATFORM": "cpu", "MORI_SOCKET_IFNAME": "=cco-no-such-if0",
           "PYTHONPATH": str(repo_file("bindings/python/cco").parent)}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "cco-no-such-if0" in r.stdout, (r.stdout, r.stderr)
