# SPDX-License-Identifier: MIT
"""The CCO device API inside FlyDSL kernels (AMD, code-object version 6), generated from the
ABI table: the guide's `mori.cco.device.flydsl`.

    import flydsl.compiler as flyc
    import flydsl.expr as fx
    import cco.device.flydsl as cco

    @flyc.kernel
    def put_kernel(dev_comm: fx.Int64, send_win: fx.Int64, recv_win: fx.Int64, nbytes: fx.Int64):
        gda = cco.DevComm(dev_comm).gda(0)          # a handle: its calls bind dev_comm and the context
        gda.put(1, recv_win, 0, send_win, 0, nbytes, signal_op=cco.SignalOp.INC, signal_id=0,
                coop=cco.CoopScope.THREAD)
        gda.flush(coop=cco.CoopScope.BLOCK)

Every function of the table is reachable two ways: through its namespace (cco.Gda.put(dev_comm,
peer, ...), as in the Triton binding), or through a handle that binds the leading arguments
(DevComm(dc), Window(win), DevComm(dc).gda(ctx) / .gda_deferred(ctx) / .gda_caller_ordered(ctx),
DevComm(dc).sdma()). Arguments go in the ABI's order (all of them) or in the guide's form (ctx
and defaulted arguments by name, in the table's spelling, snake_case or the guide's names):
cco.device.call_form says which, and what defaults (GDA/SDMA coop THREAD, flushes WARP,
signal_op NONE, signal ids 0). The template axes (coop, thread_mode, signal_op, signal) are
keywords that must be compile-time constants: they pick the symbol while the kernel is traced,
so the kernel makes one direct call, which FlyDSL inlines. GDA operations naming a peer take
team=Team.GDA (the peer is then a GDA-team index, mapped through Gda.team_peer).

The bitcode is the code-object-v6 variant for the kernel's chip (ARCH, else the GPU's), found
by find_cco_bitcode. FlyDSL is imported when a kernel first calls CCO, not before.
"""

import functools
import re
import types

from cco.device import CCO_DEVICE_FUNCTIONS, ENUMS, find_cco_bitcode
from cco.device import call_form
from cco.device.abi_table import functions_by_dsl_name, optional_axes

CODE_OBJECT_VERSION = 6  # FlyDSL links code-object v6 modules

# Enums as namespaces of ints: cco.CoopScope.BLOCK, cco.SignalOp.INC, ...
for _enum, _members in ENUMS.items():
    globals()[_enum] = types.SimpleNamespace(**_members)

_TEAM_PEER = call_form.team_peer_symbol()


class CcoFlyDslError(TypeError):
    pass


def _constant_arg(value):
    return isinstance(value, (int, bool))


def target_arch():
    """The chip FlyDSL compiles for: its ARCH setting, else the GPU's."""
    from flydsl.compiler.backends.rocm import RocmBackend

    return RocmBackend.detect_target().arch


@functools.lru_cache(maxsize=None)
def bitcode_path(arch):
    from cco.device.bitcode import bitcode_variant

    path = find_cco_bitcode(("hip", arch), cov=CODE_OBJECT_VERSION)
    variant = bitcode_variant(path)
    if not variant.endswith(f"-cov{CODE_OBJECT_VERSION}"):  # CCO_DEVICE_BC may name any variant
        raise CcoFlyDslError(f"cco: FlyDSL links code-object-v{CODE_OBJECT_VERSION} modules, but {path} is the "
                             f"{variant} variant")
    if re.search(r"[\s,{}'\"]", path):  # FlyDSL passes the path through an MLIR attribute list
        raise CcoFlyDslError(f"cco: FlyDSL cannot link {path!r}: its path holds a space, comma, brace or quote")
    return path


LINKED = set()  # the symbols kernels traced in this process called


@functools.lru_cache(maxsize=None)
def _extern(symbol, arch):
    from flydsl.compiler.extern_link import link_extern
    from flydsl.expr.extern import ffi

    entry = next(e for e in CCO_DEVICE_FUNCTIONS if e["symbol"] == symbol)
    LINKED.add(symbol)
    return link_extern(ffi(symbol, list(entry["args"]), entry["ret"], is_pure=entry["pure"]),
                       bitcode_path=bitcode_path(arch))


def _make_function(dsl, entries):
    """One Python callable for every symbol that shares the DSL name `dsl`."""
    by_axes = {tuple(sorted(e["axes"].items())): e for e in entries}
    axis_names = sorted({a for e in entries for a in e["axes"]})
    optional = optional_axes(entries)
    names = entries[0]["arg_names"]

    def call(*args, _lead=(), **kwargs):
        try:
            values, axes, team = call_form.prepare(dsl, names, axis_names, optional, args, kwargs, lead=_lead)
        except call_form.CallFormError as e:
            raise CcoFlyDslError(str(e)) from None
        entry = by_axes.get(tuple(sorted(axes.items())))
        if entry is None:
            raise CcoFlyDslError(f"cco.{dsl}: no variant for {axes}; available: {sorted(by_axes)}")
        arch = target_arch()
        if team == ENUMS["TeamKind"]["GDA"]:  # a GDA-team index: mapped to its world rank first
            dc, peer = names.index("dc"), names.index("peer")
            values[peer] = _extern(_TEAM_PEER, arch)(values[dc], values[peer])
        return _extern(entry["symbol"], arch)(*values)

    call.__name__ = dsl.rsplit(".", 1)[-1]
    call.__qualname__ = dsl
    call.__doc__ = call_form.signature(dsl, names, axis_names, optional)
    call.arg_names = names
    return call


class _Namespace(type):
    """cco.Gda.put: the function, every argument explicit."""

    def __getattr__(cls, name):
        try:
            return cls._functions[name]
        except KeyError:
            raise AttributeError(f"cco.{cls.__name__} has no {name!r}; it has {sorted(cls._functions)}") from None


class _Handle(metaclass=_Namespace):
    """A handle binds the leading arguments its namespace's functions take (by name)."""

    _functions = {}
    _binds = ()

    def __init__(self, *values):
        if len(values) != len(self._binds):
            raise CcoFlyDslError(f"cco.{type(self).__name__}({', '.join(self._binds)})")
        self._bound = dict(zip(self._binds, values))

    # FlyDSL's value protocol: a handle that lives across the kernel's control flow (an `if`
    # or a loop FlyDSL turns into IR) travels as the IR values it binds; Python constants it
    # binds (a context number) stay constants.
    def __extract_to_ir_values__(self):
        from flydsl.compiler.protocol import extract_to_ir_values

        return [v for value in self._bound.values() if not _constant_arg(value) for v in extract_to_ir_values(value)]

    @classmethod
    def __construct_from_ir_values__(cls, values, exemplar):
        from flydsl.compiler.protocol import construct_from_ir_values, extract_to_ir_values

        rebuilt, cursor = [], 0
        for value in exemplar._bound.values():
            if _constant_arg(value):
                rebuilt.append(value)
                continue
            n = len(extract_to_ir_values(value))
            rebuilt.append(construct_from_ir_values(type(value), value, values[cursor:cursor + n]))
            cursor += n
        return cls(*rebuilt)

    def __getattr__(self, name):
        if name.startswith("__"):  # protocol probes (hasattr) must not find kernel functions
            raise AttributeError(name)
        fn = type(self)._functions.get(name)
        if fn is None:
            raise AttributeError(f"cco.{type(self).__name__} has no {name!r}")
        lead = []
        for arg in fn.arg_names:
            if arg not in self._bound:
                break
            lead.append(self._bound[arg])
        return functools.partial(fn, _lead=tuple(lead))


def _namespace(name, binds, extra=None):
    functions = {dsl.split(".", 1)[1]: entries for dsl, entries in functions_by_dsl_name().items()
                 if dsl.startswith(name + ".")}
    made = {k: _make_function(f"{name}.{k}", v) for k, v in functions.items()}
    attrs = {"_functions": call_form.with_aliases(made), "_binds": binds}
    attrs.update(extra or {})
    cls = _Namespace(name, (_Handle,), attrs)
    globals()[name] = cls
    return cls


def _dev_comm_extras():
    return {
        "gda": lambda self, ctx=0: Gda(self._bound["dc"], ctx),  # noqa: F821 (defined below)
        "gda_deferred": lambda self, ctx=0: GdaDeferred(self._bound["dc"], ctx),  # noqa: F821
        "gda_caller_ordered": lambda self, ctx=0: GdaCallerOrdered(self._bound["dc"], ctx),  # noqa: F821
        "sdma": lambda self: Sdma(self._bound["dc"]),  # noqa: F821
        "lsa_barrier": lambda self: LsaBarrier(self._bound["dc"]),  # noqa: F821
        "team": lambda self: Team(self._bound["dc"]),  # noqa: F821
    }


_namespace("DevComm", ("dc",), _dev_comm_extras())
_namespace("Window", ("window",))
_namespace("Gda", ("dc", "ctx"))
_namespace("GdaDeferred", ("dc", "ctx"))
_namespace("GdaCallerOrdered", ("dc", "ctx"))
_namespace("Sdma", ("dc",))
_namespace("LsaBarrier", ("dc",))
_namespace("Team", ("dc",))
_namespace("Trace", ("dc",))
for _entry in CCO_DEVICE_FUNCTIONS:  # abi_version, system_fence
    if "." not in _entry["dsl"]:
        globals()[_entry["dsl"]] = _make_function(_entry["dsl"], [e for e in CCO_DEVICE_FUNCTIONS
                                                                    if e["dsl"] == _entry["dsl"]])
for _kind, _value in ENUMS["TeamKind"].items():  # cco.Team.GDA beside the team functions
    setattr(Team, _kind, _value)  # noqa: F821

NAMESPACES = ("DevComm", "Window", "Gda", "GdaDeferred", "GdaCallerOrdered", "Sdma", "LsaBarrier", "Team", "Trace")
