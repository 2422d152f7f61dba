# SPDX-License-Identifier: MIT
"""How a DSL call names its arguments, shared by the Triton and FlyDSL bindings.

The ABI passes every argument by position, a GDA operation's context second:

    cco_gda_put__it__inc(dc, ctx, peer, dstWin, dstOff, srcWin, srcOff, bytes, signalId, signalValue)

The guide's system calls with the handle first and the context as a keyword, names arguments as
it likes and leaves out those with defaults:

    cco.Gda.put(dev_comm, peer, dst_win, dst_off, src_win, src_off, nbytes,
                signal_op=cco.SignalOp.INC, signal_id=3)

Both forms are taken. A call giving every argument by position is in the ABI's order. Any
other call is in the guide's: positions fill the arguments without a default, in the table's
order with `ctx` left out (SDMA's `qid`, and `bits` where a handle binds the context, may follow
by position, as in the guide's system); every argument may be named, in the table's spelling
(signalId), snake_case (signal_id) or the guide's name (dev_comm, nbytes, signal_val); what is
left out takes its default. Other defaulted arguments go by name only, so an ABI-order call
that leaves out its trailing arguments is an error, never a call with its arguments shifted.

The axes of GDA and SDMA calls default as in the guide's system: coop THREAD (WARP for the
flushes), thread_mode INDEPENDENT, signal_op NONE (INC for signal), SDMA signal on. In Triton,
where every thread of a program runs each call, a left-out coop is BLOCK instead. Barriers have
no default coop: who arrives must be said. signal_op=ADD needs its amount (signal_val). SDMA
calls also take the guide's `signal=True/False` and `aggregate=True/False` (the AGGREGATE flag,
not beside `flags`).
"""

import re

from cco.device.abi_table import CCO_DEVICE_FUNCTIONS, ENUMS, axis_spelling, load_abi_table

_AXES = load_abi_table()["axes"]

ARG_DEFAULTS = {"ctx": 0, "signalId": 0, "signalValue": 0, "bits": 64, "qid": 0, "flags": 0}
POSITIONAL_DEFAULTS = ("bits", "qid")
ARG_ALIASES = {"dc": ("dev_comm",), "bytes": ("nbytes",), "signalValue": ("signal_val",)}
_SIGNALLING_OPS = ("put", "put_value", "signal")  # their signal_id/signal_val default to 0
# Gda.signal's amount is the table's `value`; the guide names it signal_val and lets INC omit it.
_SIGNAL_AMOUNT = {"value": (("signal_value", "signal_val"), 0)}  # (with signal_op=ADD it must be given)

AXIS_DEFAULTS = {"coop": "thread", "thread_mode": "independent", "signal_op": "none", "signal": "on"}
_OP_AXIS_DEFAULTS = {"signal": {"signal_op": "inc"}, "flush": {"coop": "warp"}, "flush_peer": {"coop": "warp"},
                     "flush_async": {"coop": "warp"}, "flush_wait": {"coop": "warp"}}
_DEFAULTED_SPACES = ("Gda.", "GdaDeferred.", "GdaCallerOrdered.", "Sdma.")
BARRIERS = ("LsaBarrier.", "Gda.barrier_sync")

SDMA_FLAG_AGGREGATE = 1  # abi/sdma.h CCO_SDMA_FLAG_AGGREGATE


# The guide's names for functions the table spells otherwise ("flush_async and wait").
ALIASES = {"wait": "flush_wait"}


def with_aliases(functions):
    """A namespace's functions ({name: fn}) with the guide's other names beside them."""
    return dict(functions, **{alias: functions[name] for alias, name in ALIASES.items() if name in functions})


class CallFormError(TypeError):
    pass


def snake(name):
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _op(dsl):
    return dsl.rsplit(".", 1)[-1]


def _spellings(dsl, name):
    extra = _SIGNAL_AMOUNT[name][0] if _op(dsl) == "signal" and name in _SIGNAL_AMOUNT else ARG_ALIASES.get(name, ())
    return tuple(dict.fromkeys((name, snake(name)) + tuple(extra)))


def guide_name(dsl, name):
    """The guide's name for a table argument (dev_comm, nbytes, signal_val, signal_id)."""
    return _spellings(dsl, name)[-1]


def _default(dsl, name):
    """(True, value) where `name` may be left out of a `dsl` call."""
    if _op(dsl) == "signal" and name in _SIGNAL_AMOUNT:
        return True, _SIGNAL_AMOUNT[name][1]
    if name in ("signalId", "signalValue") and _op(dsl) not in _SIGNALLING_OPS:
        return False, None  # a wait or read of a signal names the signal
    return (name in ARG_DEFAULTS), ARG_DEFAULTS.get(name)


def axis_default(dsl, axis, every_thread_calls=False):
    """The axis value a `dsl` call that leaves `axis` out gets, or None (it must be given).
    Where every thread of a program runs each call (Triton), a left-out coop is BLOCK: one
    post, or one wait, per program, where THREAD would post once per thread and race the
    threads' waits on one consume shadow."""
    if not dsl.startswith(_DEFAULTED_SPACES) or dsl.startswith(BARRIERS):
        return None
    if axis == "coop" and every_thread_calls:
        return "block"
    return _OP_AXIS_DEFAULTS.get(_op(dsl), {}).get(axis, AXIS_DEFAULTS.get(axis))


def axis_value(dsl, axis, value):
    """An axis keyword's value as the table spells it; SDMA's signal= takes the guide's
    True/False too. Anything else is a CallFormError that says what the axis takes."""
    if axis == "signal" and isinstance(value, bool):
        return "on" if value else "off"
    spelled = axis_spelling(axis, value)
    if spelled is not None:
        return spelled
    enum = _AXES[axis]["enum"]
    if isinstance(value, (int, str)):
        raise CallFormError(f"cco.{dsl}: {axis}={value!r} is not a compile-time {enum} ({', '.join(ENUMS[enum])})")
    raise CallFormError(f"cco.{dsl}: {axis} must be a compile-time {enum} constant (a Python int or cco.{enum}.X), "
                        f"not a run-time value {value!r}: it picks the symbol while tracing")


def _guide_slots(dsl, free):
    """The arguments of `free` a guide-form call fills by position, in the table's order: those
    without a default, and qid or bits (POSITIONAL_DEFAULTS). Where the context is the call's
    to give, an ABI-order call short of its tail would shift into defaulted slots: those go
    by name only then."""
    shifts = "ctx" in free
    return [n for n in free if n != "ctx" and (not _default(dsl, n)[0] or (n in POSITIONAL_DEFAULTS and not shifts))]


def bind(dsl, names, args, kwargs, lead=(), given=None):
    """The values of `names` (the table's arguments, in order) for a call of `dsl` with
    positional `args` and the argument keywords of `kwargs` (popped; axes and other keywords
    are the caller's and stay). `lead` are values a handle already binds to the first names;
    `given`, a set, receives the names the call gave (by position or by name)."""
    given = set() if given is None else given
    free = names[len(lead):]
    if len(args) == len(free) and not any(s in kwargs for n in free for s in _spellings(dsl, n)):
        given.update(free)
        return list(lead) + list(args)  # the ABI's order
    slots = _guide_slots(dsl, free)
    if len(args) > len(slots):
        abi = ", ".join(free)
        guide = ", ".join(guide_name(dsl, n) for n in slots)
        raise CallFormError(f"cco.{dsl}: {len(args)} positional arguments: the ABI's order takes all {len(free)} "
                            f"({abi}); the guide's form takes {len(slots)} ({guide}) and the rest by name")
    positional = dict(zip(slots, args))
    values = list(lead)
    for name in free:
        named = [s for s in _spellings(dsl, name) if s in kwargs]
        if len(named) > 1 or (named and name in positional):
            raise CallFormError(f"cco.{dsl}: {guide_name(dsl, name)} given twice")
        if named:
            values.append(kwargs.pop(named[0]))
            given.add(name)
        elif name in positional:
            values.append(positional[name])
            given.add(name)
        else:
            has, value = _default(dsl, name)
            if not has:
                raise CallFormError(f"cco.{dsl}: missing argument {guide_name(dsl, name)}")
            values.append(value)
    return values


def team_kind(dsl, value):
    """The team= keyword of a GDA operation: WORLD (peers are world ranks) or GDA."""
    teams = ENUMS["TeamKind"]
    if isinstance(value, str) and value.upper() in ("WORLD", "GDA"):
        return teams[value.upper()]
    if value in (teams["WORLD"], teams["GDA"]) and not isinstance(value, bool):
        return value
    raise ValueError(f"cco.{dsl}: team={value!r}: peers are world ranks (Team.WORLD) or GDA-team indices "
                     f"(Team.GDA), a compile-time constant")


def takes_team(dsl, names):
    return dsl.startswith("Gda") and "peer" in names and "dc" in names


def team_peer_symbol():
    """The symbol that maps a GDA-team index to its world rank (team=Team.GDA calls it first)."""
    return next(e["symbol"] for e in CCO_DEVICE_FUNCTIONS if e["dsl"] == "Gda.team_peer")


def prepare(dsl, names, axis_names, optional_axes, args, kwargs, lead=(), every_thread_calls=False,
            constant=lambda v: v):
    """Everything a DSL call settles while it is traced: (the argument values in the table's
    order, the axes as the table spells them, the team kind). `constant` unwraps a DSL's
    compile-time value (Triton's constexpr). Raises CallFormError (or ValueError for a team)
    naming what is wrong; nothing is guessed."""
    kwargs = dict(kwargs)
    team = ENUMS["TeamKind"]["WORLD"]
    if takes_team(dsl, names) and "team" in kwargs:
        team = team_kind(dsl, constant(kwargs.pop("team")))
    aggregate = constant(kwargs.pop("aggregate")) if "aggregate" in kwargs else None
    axes = {}
    for axis in axis_names:
        default = axis_default(dsl, axis, every_thread_calls)
        if axis in kwargs:
            axes[axis] = axis_value(dsl, axis, constant(kwargs.pop(axis)))
        elif default is not None:
            axes[axis] = default
        elif axis not in optional_axes:
            raise CallFormError(f"cco.{dsl}: needs {axis}= (a compile-time constant)")
    given = set()
    values = bind(dsl, names, args, kwargs, lead, given)
    if kwargs:
        raise CallFormError(f"cco.{dsl}: unknown keyword(s) {sorted(kwargs)}; arguments: "
                            f"{', '.join(guide_name(dsl, n) for n in names)}; axes: {', '.join(axis_names) or 'none'}")
    if aggregate is not None:
        if "flags" not in names:
            raise CallFormError(f"cco.{dsl}: unknown keyword(s) ['aggregate']")
        if "flags" in given:
            raise CallFormError(f"cco.{dsl}: aggregate= and flags both given; aggregate=True is flags=1")
        if not isinstance(aggregate, (bool, int)):
            raise CallFormError(f"cco.{dsl}: aggregate= must be a compile-time True or False, not {aggregate!r}")
        values[names.index("flags")] = SDMA_FLAG_AGGREGATE if aggregate else 0
    amount = "value" if _op(dsl) == "signal" else "signalValue"
    if axes.get("signal_op") == "add" and amount in names and amount not in given:
        raise CallFormError(f"cco.{dsl}: signal_op=ADD needs signal_val= (the amount to add)")
    return values, axes, team


def signature(dsl, names, axis_names, optional_axes=(), every_thread_calls=False):
    """The guide's form of a `dsl` call, for docstrings: the arguments `bind` fills by position
    in its order (SDMA's qid among them), then those that go by name with their defaults."""
    slots = _guide_slots(dsl, names)
    parts = [guide_name(dsl, n) for n in slots]
    parts += [f"{guide_name(dsl, n)}={_default(dsl, n)[1]}" for n in names if n not in slots and _default(dsl, n)[0]]
    for axis in axis_names:
        default = axis_default(dsl, axis, every_thread_calls)
        parts.append(f"{axis}={default.upper()}" if default else f"[{axis}=]" if axis in optional_axes else f"{axis}=")
    if takes_team(dsl, names):
        parts.append("team=Team.WORLD")
    return f"cco.{dsl}({', '.join(parts)})"
