#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the type stubs of cco.ir.triton.cco from the ABI table, so that an IDE (and a
reader) can follow `cco.Gda.put` to its arguments: that module makes its builtins while it is
imported, one per DSL name of abi/cco_abi_table.json, and has no source to jump to.

  python3 tools/abi/gen_stubs.py           # writes bindings/python/cco/ir/triton/cco.pyi
  python3 tools/abi/gen_stubs.py --check   # exit 1 when the committed stubs are not what the table gives

Each function gets the call forms the binding takes (cco.device.call_form): the guide's form
(the handle first, ctx and defaulted arguments by name, axes by name with their defaults) and,
where it differs, the ABI's order (every argument by position). tools/abi/update_table.sh runs
this after regenerating the table; //tests/python:stubs_test fails when they disagree.
"""

import argparse
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
from cco.device import ENUMS, call_form  # noqa: E402
from cco.device.abi_table import ABI_VERSION, functions_by_dsl_name, load_abi_table, optional_axes  # noqa: E402

STUBS = os.path.join(ROOT, "bindings", "python", "cco", "ir", "triton", "cco.pyi")
_AXES = load_abi_table()["axes"]
_RETURNS = {"int32": "Int32", "uint64": "UInt64"}


def _axis_constant(axis, spelled):
    """The enum constant an axis value spelled as the table spells it ("block") is written as."""
    return f"{_AXES[axis]['enum']}.{spelled.upper()}"


def _parameter(name, annotation, default=None):
    return f"{name}: {annotation}" + ("" if default is None else f" = {default}")


def _keywords(dsl, names, axis_names, optional):
    """The keyword-only parameters both forms share: the axes, team= and aggregate=."""
    params = []
    for axis in axis_names:
        default = call_form.axis_default(dsl, axis, every_thread_calls=True)
        kind = "Axis | bool" if axis == "signal" else "Axis"
        if default is not None:
            params.append(_parameter(axis, kind, _axis_constant(axis, default)))
        elif axis in optional:
            params.append(_parameter(axis, f"{kind} | None", "None"))
        else:
            params.append(_parameter(axis, kind))
    if call_form.takes_team(dsl, names):
        params.append(_parameter("team", "Axis", "Team.WORLD"))
    if "flags" in names:
        params.append(_parameter("aggregate", "bool | None", "None"))
    return params


def _guide_forms(dsl, names, axis_names, optional):
    """The guide's form, as call_form.bind takes it: positions fill the arguments without a
    default (and bits / qid where no ctx comes first), in the table's order; the others go by
    name. Where a defaulted position comes before one without (Sdma.wait_signal's qid before
    least), Python spells it as two forms: every position given, or that one by name and the
    ones after it too."""
    shifts = "ctx" in names
    positional, keyword = [], []  # (name, default or None)
    for name in names:
        has, value = call_form._default(dsl, name)  # the binding's own rule, not a copy of it
        slot = (call_form.guide_name(dsl, name), repr(value) if has else None)
        if name != "ctx" and (not has or (name in call_form.POSITIONAL_DEFAULTS and not shifts)):
            positional.append(slot)
        else:
            keyword.append(slot)
    axes = _keywords(dsl, names, axis_names, optional)

    def form(by_position, by_name):
        tail = [_parameter(n, "Value", d) for n, d in by_name] + axes
        return [_parameter(n, "Value", d) for n, d in by_position] + (["*"] + tail if tail else [])

    last_required = max((i for i, (_, d) in enumerate(positional) if d is None), default=-1)
    early = [i for i, (_, d) in enumerate(positional) if d is not None and i < last_required]
    if not early:
        return [form(positional, keyword)]
    every = [(n, None) if i <= last_required else (n, d) for i, (n, d) in enumerate(positional)]
    return [form(every, keyword), form(positional[:early[0]], positional[early[0]:] + keyword)]


def _abi_form(dsl, names, axis_names, optional):
    """The ABI's order: every argument by position, the table's names."""
    params = [_parameter(name, "Value") for name in names] + (["/"] if names else [])
    tail = _keywords(dsl, names, axis_names, optional)
    return params + (["*"] + tail if tail else [])


def _def(name, params, returns, doc, indent, overload):
    pad = " " * indent
    lines = ([f"{pad}@overload"] if overload else []) + ([f"{pad}@staticmethod"] if indent else [])
    if params:
        lines.append(f"{pad}def {name}(")
        lines += [f"{pad}    {p}," for p in params]
        lines.append(f"{pad}) -> {returns}:")
    else:
        lines.append(f"{pad}def {name}() -> {returns}:")
    lines.append(f'{pad}    """{doc}"""')
    return lines


def _function(name, dsl, entries, indent):
    names = entries[0]["arg_names"]
    axis_names = sorted({a for e in entries for a in e["axes"]})
    optional = optional_axes(entries)
    returns = _RETURNS[entries[0]["ret"]]
    symbols = sorted(e["symbol"] for e in entries)
    doc = (call_form.signature(dsl, names, axis_names, optional, every_thread_calls=True) +
           f"; or in the ABI's order: cco.{dsl}({', '.join(names)}, ...axes). Returns {entries[0]['ret']}; " +
           (f"calls {symbols[0]}" if len(symbols) == 1 else f"calls one of {len(symbols)} symbols ({symbols[0]}, ...)"))
    forms = _guide_forms(dsl, names, axis_names, optional)
    abi = _abi_form(dsl, names, axis_names, optional)
    if forms == [abi] or not names:
        return _def(name, abi, returns, doc, indent, overload=False)
    lines = []
    for form in forms:
        lines += _def(name, form, returns, doc, indent, overload=True)
    return lines + _def(name, abi, returns, "The ABI's order: every argument by position.", indent, overload=True)


def render():
    groups = functions_by_dsl_name()
    lines = [
        f"# Generated by tools/abi/gen_stubs.py from abi/cco_abi_table.json (ABI version {ABI_VERSION}): do not edit.",
        '"""Type stubs of cco.ir.triton.cco: the CCO device API inside Triton kernels, one builtin per',
        "DSL name of the ABI table. Arguments are Triton values (or Python ints); axes (coop, order,",
        "signal_op, ...) are compile-time constants that pick the symbol while the kernel is traced.",
        '"""',
        "",
        "from typing import Any, TypeAlias, overload",
        "",
        "from triton.language import core",
        "",
        "Value: TypeAlias = core.tensor | int",
        "Axis: TypeAlias = int | core.constexpr",
        "Int32: TypeAlias = core.tensor",
        "UInt64: TypeAlias = core.tensor",
        "",
        "LIB_NAME: str",
        "",
        "def get_extern_libs(target: Any = None, nic: str | None = None) -> dict[str, str]:",
        '    """The extern_libs dict for a Triton launch or compile: {"cco": bitcode path}."""',
    ]
    for enum, members in ENUMS.items():
        lines += ["", f"class {enum}:"] + [f"    {member} = {value}" for member, value in members.items()]
    spaces = {}
    for dsl, entries in groups.items():
        if "." in dsl:
            space, name = dsl.split(".", 1)
            spaces.setdefault(space, {})[name] = (dsl, entries)
        else:
            lines += [""] + _function(dsl, dsl, entries, indent=0)
    for space, members in spaces.items():
        lines += ["", f"class {space}:"]
        if space == "Team":  # the team kinds beside the team functions: cco.Team.GDA
            lines += [f"    {member} = {value}" for member, value in ENUMS["TeamKind"].items()]
        for name, (dsl, entries) in call_form.with_aliases(members).items():
            lines += _function(name, dsl, entries, indent=4)
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed stubs instead of writing")
    opts = ap.parse_args(argv)
    text = render()
    if opts.check:
        with open(STUBS, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{STUBS} is not what the ABI table gives: run tools/abi/gen_stubs.py", file=sys.stderr)
                return 1
        return 0
    with open(STUBS, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{os.path.relpath(STUBS, ROOT)} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
