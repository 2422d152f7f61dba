# SPDX-License-Identifier: MIT
"""The CCO device API inside Triton kernels, generated from the ABI table.

    from cco.ir.triton import cco

    @triton.jit
    def kernel(dc, win, ...):
        me = cco.DevComm.lsa_rank(dc)
        ptr = cco.Window.lsa_ptr(win, peer, 0).to(tl.pointer_type(tl.uint32), bitcast=True)
        cco.LsaBarrier.sync(dc, 0, coop=cco.CoopScope.BLOCK)
        cco.Gda.put(dc, peer, win, 0, win, 0, 4096, signal_op=cco.SignalOp.INC, signal_id=1,
                    coop=cco.CoopScope.BLOCK)

    kernel[grid](dc.ptr, win.handle, ..., extern_libs=cco.get_extern_libs())

Every function of the table is a Triton builtin in the namespace its "dsl" field names.
Functions that differ only by template axes (coop, thread mode, signal op, doorbell mode)
share one name; the axis is a keyword argument that must be a compile-time constant, and
it picks the symbol while the kernel is traced, so the kernel makes one direct call.
Arguments go in the ABI's order (all of them, the GDA context second) or in the guide's
form (the handle first, ctx and defaulted arguments by name, GDA/SDMA axes defaulted):
cco.device.call_form says which.

GDA operations that name a peer take it as a world rank, or as a GDA-team index with
team=cco.Team.GDA (the guide's spelling; the index goes through Gda.team_peer first).
cco.Team also carries the team kinds: Team.WORLD, Team.LSA, Team.CROSSNODE, Team.RAIL, Team.GDA.
"""

import types

from triton.language import core

from cco.device import ENUMS, find_cco_bitcode
from cco.device import call_form
from cco.device.abi_table import functions_by_dsl_name, optional_axes

LIB_NAME = "cco"

_DTYPES = {"int32": core.int32, "uint64": core.uint64}

# Enums as namespaces of ints: cco.CoopScope.BLOCK, cco.SignalOp.INC, ...
for _enum, _members in ENUMS.items():
    globals()[_enum] = types.SimpleNamespace(**_members)


def _constant(value):
    return value.value if isinstance(value, core.constexpr) else value


# Barriers count one arrival per rank. In Triton every thread of a program runs a scalar
# call, so a barrier's coop must cover the whole program: BLOCK, or WARP in a one-warp
# program. Anything else would arrive once per thread or per warp, racing on the epoch.
def _check_barrier_coop(dsl, coop, semantic):
    if coop is None or not dsl.startswith(call_form.BARRIERS):
        return
    warps = getattr(getattr(semantic.builder, "options", None), "num_warps", None)
    if coop == "thread":
        raise ValueError(f"cco.{dsl}: coop=THREAD would make every thread of the program arrive, but the barrier "
                         f"counts one arrival per rank: use coop=BLOCK (or WARP with num_warps=1)")
    if coop == "warp" and warps != 1:
        raise ValueError(f"cco.{dsl}: coop=WARP with num_warps={warps} would make each warp arrive on its own, but "
                         f"the barrier counts one arrival per rank: use coop=BLOCK, or launch with num_warps=1")


def _make_builtin(dsl, entries):
    """One Triton builtin for every symbol that shares the DSL name `dsl`."""
    by_axes = {tuple(sorted(e["axes"].items())): e for e in entries}
    axis_names = sorted({a for e in entries for a in e["axes"]})
    optional = optional_axes(entries)
    arg_names = entries[0]["arg_names"]

    def call(*args, _semantic=None, **kwargs):
        values, axes, team = call_form.prepare(dsl, arg_names, axis_names, optional, args, kwargs,
                                               every_thread_calls=True, constant=_constant)
        key = tuple(sorted(axes.items()))
        _check_barrier_coop(dsl, axes.get("coop"), _semantic)
        entry = by_axes.get(key)
        if entry is None:
            have = [", ".join(f"{k}={v}" for k, v in k_) for k_ in by_axes]
            raise ValueError(f"cco.{dsl}: no variant for {axes}; available: {have}")
        dtypes = [_DTYPES[t] for t in entry["args"]]
        values = [_semantic.to_tensor(a).to(d, _semantic=_semantic) for a, d in zip(values, dtypes)]
        if team == ENUMS["TeamKind"]["GDA"]:
            dc, peer = arg_names.index("dc"), arg_names.index("peer")
            values[peer] = core.extern_elementwise(LIB_NAME, "", [values[dc], values[peer]],
                                                   {(core.uint64, core.int32): (call_form.team_peer_symbol(),
                                                                                core.int32)},
                                                   is_pure=True, _semantic=_semantic)
        ret = _DTYPES[entry["ret"]]
        return core.extern_elementwise(LIB_NAME, "", values, {tuple(dtypes): (entry["symbol"], ret)},
                                       is_pure=entry["pure"], _semantic=_semantic)

    call.__name__ = dsl.rsplit(".", 1)[-1]
    call.__qualname__ = dsl
    call.__doc__ = (call_form.signature(dsl, arg_names, axis_names, optional, every_thread_calls=True) +
                    f"; or in the ABI's order: cco.{dsl}({', '.join(arg_names)}, ...axes)")
    return core.extern(call)


def _build_namespaces():
    groups = functions_by_dsl_name()
    namespaces = {}
    for dsl, entries in groups.items():
        builtin = _make_builtin(dsl, entries)
        if "." in dsl:
            space, name = dsl.split(".", 1)
            namespaces.setdefault(space, {})[name] = builtin
        else:
            globals()[dsl] = builtin
    for space, members in namespaces.items():
        attributes = {k: staticmethod(v) for k, v in call_form.with_aliases(members).items()}
        if space == "Team":  # the team kinds beside the team functions: cco.Team.GDA
            attributes.update(ENUMS["TeamKind"])
        globals()[space] = type(space, (), attributes)


_build_namespaces()


def get_extern_libs(target=None, nic=None):
    """The extern_libs dict for a Triton launch or compile: {"cco": bitcode path}.
    target: a triton GPUTarget (AOT) or None for the current GPU."""
    return {LIB_NAME: find_cco_bitcode(target, nic=nic)}
