# SPDX-License-Identifier: MIT
"""The committed ABI table, loaded once."""

import functools
import json

from cco import _resources


@functools.lru_cache(maxsize=None)
def load_abi_table():
    path = _resources.abi_table_path()
    if path is None:
        raise FileNotFoundError("cco: the ABI table (cco_abi_table.json) is neither in the package nor in the checkout")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


_TABLE = load_abi_table()
ABI_VERSION = _TABLE["abi_version"]
ENUMS = _TABLE["enums"]
TARGETS = _TABLE["targets"]
CCO_DEVICE_FUNCTIONS = [
    {
        "symbol": f["symbol"],
        "family": f["family"],
        "args": [a["type"] for a in f["args"]],
        "arg_names": [a["name"] for a in f["args"]],
        "ret": f["ret"],
        "pure": f["pure"],
        "tag": f["tag"],
        "axes": dict(f["axes"]),
        "dsl": f["dsl"],
    }
    for f in _TABLE["functions"]
]


def axis_spelling(axis, value):
    """A template-axis value (an enum number like CoopScope.BLOCK, or a name like "block") as
    the table spells it ("block"), or None when `value` is neither: the DSL bindings share it."""
    members = ENUMS[_TABLE["axes"][axis]["enum"]]
    if isinstance(value, str) and value.upper() in members:
        return value.lower()
    if isinstance(value, int) and not isinstance(value, bool):
        for member, number in members.items():
            if number == value:
                return member.lower()
    return None


def optional_axes(entries):
    """The axes that some of the functions sharing one DSL name lack: a call that omits one
    means the function without it (LsaBarrier.sync without order= is the ACQ_REL form)."""
    every = set.intersection(*(set(e["axes"]) for e in entries))
    return {a for e in entries for a in e["axes"]} - every


# Gda calls that post nothing (they read, wait on or reset this rank's own signal and counter
# words, or translate a GDA-team index): one symbol serves a handle of any doorbell mode, so
# the Deferred and CallerOrdered namespaces carry them too (the guide: "cco.GdaDeferred is the
# same"; CallerOrdered differs only in having no signal).
MODE_INDEPENDENT_GDA = ("wait_signal", "read_signal", "reset_signal", "wait_counter", "read_counter",
                        "reset_counter", "team_size", "team_peer")
GDA_MODE_NAMESPACES = ("GdaDeferred", "GdaCallerOrdered")


def functions_by_dsl_name(functions=None):
    """{DSL name: [table entries]}, every DSL binding's namespaces: the table's own names, and
    Gda's mode-independent calls under each other doorbell mode's namespace (same symbols)."""
    groups = {}
    for entry in CCO_DEVICE_FUNCTIONS if functions is None else functions:
        groups.setdefault(entry["dsl"], []).append(entry)
    for space in GDA_MODE_NAMESPACES:
        for name in MODE_INDEPENDENT_GDA:
            shared = groups.get(f"Gda.{name}")
            if shared and f"{space}.{name}" not in groups:
                groups[f"{space}.{name}"] = [dict(e, dsl=f"{space}.{name}") for e in shared]
    return groups
