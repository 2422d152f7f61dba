# SPDX-License-Identifier: MIT
"""The type stubs of cco.ir.triton.cco (cco.pyi) are what tools/abi/gen_stubs.py makes of the
committed ABI table, and they name every builtin and constant the module makes at import."""

import ast
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.getcwd(), "tools", "abi"))
import gen_stubs  # noqa: E402


def test_the_committed_stubs_are_what_the_table_gives():
    with open(gen_stubs.STUBS, encoding="utf-8") as f:
        committed = f.read()
    assert committed == gen_stubs.render(), "run tools/abi/gen_stubs.py (tools/abi/update_table.sh does)"


def _stubbed():
    """{name: members} of the stubs' classes, and the module-level names."""
    tree = ast.parse(gen_stubs.render())
    classes = {}
    top = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {n.name if isinstance(n, ast.FunctionDef) else n.targets[0].id for n in node.body}
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            top.add((node.targets[0] if isinstance(node, ast.Assign) else node.target).id)
    return classes, top


def test_the_stubs_name_everything_the_module_makes():
    pytest.importorskip("triton")
    import types

    from cco.ir.triton import cco

    classes, top = _stubbed()
    for name, value in vars(cco).items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        if isinstance(value, type):  # a namespace: Gda, Sdma, Team, ...
            members = {m for m in vars(value) if not m.startswith("_")}
            assert members == classes.get(name), name
        elif isinstance(value, types.SimpleNamespace):  # an enum: CoopScope, ...
            assert set(vars(value)) == classes.get(name), name
        elif name in ("ENUMS", "call_form", "core", "find_cco_bitcode", "functions_by_dsl_name", "optional_axes"):
            continue  # the module's own imports
        else:
            assert name in top, name


def test_each_call_form_matches_one_overload():
    """Gda.put in the guide's form and in the ABI's order each bind to an overload of the
    stubs, and a call the binding refuses (the ABI's order short of its tail) binds to none."""
    import inspect
    import types

    overloads = []  # every overload, as written
    source = gen_stubs.render().replace("from typing import Any, TypeAlias, overload",
                                        "from typing import Any, TypeAlias")
    namespace = {"core": types.SimpleNamespace(tensor=int, constexpr=int),
                 "overload": lambda f: overloads.append(getattr(f, "__func__", f)) or f}
    exec(compile(source.replace("from triton.language import core", ""), "cco.pyi", "exec"), namespace)
    forms = [inspect.signature(f) for f in overloads if f.__qualname__ == "Gda.put"]
    assert len(forms) == 2

    def binds(*args, **kwargs):
        matched = 0
        for form in forms:
            try:
                form.bind(*args, **kwargs)
                matched += 1
            except TypeError:
                pass
        return matched

    assert binds(0, 0, 1, 0, 64, 0, 0, 4096, 1, 1, coop=2) == 1  # the ABI's order
    assert binds(0, 1, 0, 64, 0, 0, 4096, signal_op=1, signal_id=3, coop=2) == 1  # the guide's form
    assert binds(0, 0, 1, 0, 64, 0, 0, 4096, coop=2) == 0  # short of signalId, signalValue: refused
