"""How a DSL call names its arguments, shared by the Triton and FlyDSL bindings.

The ABI passes every argument by position, a GDA operation's context second:

    cco_gda_put__it__inc(dc, ctx, peer, dstWin, dstOff, srcWin, srcOff, bytes, signalId, signalValue)

The guide's system calls with the handle first and the context as a keyword, names arguments as
it likes and leaves out those with defaults:

    cco.Gda.put(dev_comm, peer, dst_win, dst_off, src_win, src_off, nbytes,
                signal_op=cco.SignalOp.INC, signal_id=3)

Both forms are taken. A call giving every argument by position is in the ABI's order. Any
other call is in the guide's: positions fill the arguments without a default, in the table's
order with `ctx` left out (`bits` and `qid` may follow by position, as in the guide's system);
every argument may be named, in the table's spelling (signalId), snake_case (signal_id) or the
guide's name (dev_comm, nbytes, signal_val); what is left out takes its default. Defaulted
arguments other than `bits` and `qid` go by name only, so an ABI-order call that leaves out its
trailing arguments is an error, never a call with its arguments shifted.

The axes of GDA and SDMA calls default as in the guide's system: coop THREAD (WARP for the
flushes), thread_mode INDEPENDENT, signal_op NONE (INC for signal), SDMA signal on. Barriers have
no default coop: who arrives must be said. SDMA calls also take the guide's `signal=True/False`
and `aggregate=True/False` (the AGGREGATE flag).
"""

import re

from cco.device.abi_table import ENUMS, axis_spelling

ARG_DEFAULTS = {"ctx": 0, "signalId": 0, "signalValue": 0, "bits": 64, "qid": 0, "flags": 0}
POSITIONAL_DEFAULTS = ("bits", "qid")
ARG_ALIASES = {"dc": ("dev_comm",), "bytes": ("nbytes",), "signalValue": ("signal_val",)}
_SIGNALLING_OPS = ("put", "put_value", "signal")  # their signal_id/signal_val default to 0
# Gda.signal's amount is the table's `value`; the guide names it signal_val and lets INC omit it.
_SIGNAL_AMOUNT = {"value": (("signal_value", "signal_val"), 0)}

AXIS_DEFAULTS = {"coop": "thread", "thread_mode": "independent", "signal_op": "none", "signal": "on"}
_OP_AXIS_DEFAULTS = {"signal": {"signal_op": "inc"}, "flush": {"coop": "warp"}, "flush_peer": {"coop": "warp"},
                     "flush_async": {"coop": "warp"}, "flush_wait": {"coop": "warp"}}
_DEFAULTED_SPACES = ("Gda.", "GdaDeferred.", "GdaCallerOrdered.", "Sdma.")
BARRIERS = ("LsaBarrier.", "Gda.barrier_sync")

SDMA_FLAG_AGGREGATE = 1  # abi/sdma.h CCO_SDMA_FLAG_AGGREGATE


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


def axis_default(dsl, axis):
    """The axis value a `dsl` call that leaves `axis` out gets, or None (it must be given)."""
    if not dsl.startswith(_DEFAULTED_SPACES) or dsl.startswith(BARRIERS):
        return None
    return _OP_AXIS_DEFAULTS.get(_op(dsl), {}).get(axis, AXIS_DEFAULTS.get(axis))


def axis_value(dsl, axis, value):
    """An axis keyword's value as the table spells it, or None when it is not one; SDMA's
    signal= takes the guide's True/False too."""
    if axis == "signal" and isinstance(value, bool):
        return "on" if value else "off"
    return axis_spelling(axis, value)


def bind(dsl, names, args, kwargs, lead=()):
    """The values of `names` (the table's arguments, in order) for a call of `dsl` with
    positional `args` and the argument keywords of `kwargs` (popped; axes and other keywords
    are the caller's and stay). `lead` are values a handle already binds to the first names."""
    free = names[len(lead):]
    if len(args) == len(free) and not any(s in kwargs for n in free for s in _spellings(dsl, n)):
        return list(lead) + list(args)  # the ABI's order
    slots = [n for n in free if n != "ctx" and (not _default(dsl, n)[0] or n in POSITIONAL_DEFAULTS)]
    if len(args) > len(slots):
        abi = ", ".join(free)
        guide = ", ".join(guide_name(dsl, n) for n in slots)
        raise CallFormError(f"cco.{dsl}: {len(args)} positional arguments: the ABI's order takes all {len(free)} "
                            f"({abi}); the guide's form takes {len(slots)} ({guide}) and the rest by name")
    given = dict(zip(slots, args))
    values = list(lead)
    for name in free:
        named = [s for s in _spellings(dsl, name) if s in kwargs]
        if len(named) > 1 or (named and name in given):
            raise CallFormError(f"cco.{dsl}: {guide_name(dsl, name)} given twice")
        if named:
            values.append(kwargs.pop(named[0]))
        elif name in given:
            values.append(given[name])
        else:
            has, value = _default(dsl, name)
            if not has:
                raise CallFormError(f"cco.{dsl}: missing argument {guide_name(dsl, name)}")
            values.append(value)
    return values


def take_aggregate(dsl, names, kwargs):
    """SDMA's aggregate=True/False keyword as the flags argument (popped), or None if not given."""
    if "aggregate" not in kwargs:
        return None
    value = kwargs.pop("aggregate")
    if "flags" not in names:
        raise CallFormError(f"cco.{dsl}: unknown keyword(s) ['aggregate']")
    if "flags" in kwargs:
        raise CallFormError(f"cco.{dsl}: aggregate= and flags= both given; aggregate=True is flags=1")
    if not isinstance(value, (bool, int)):
        raise CallFormError(f"cco.{dsl}: aggregate= must be a compile-time True or False, not {value!r}")
    return SDMA_FLAG_AGGREGATE if value else 0


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


def signature(dsl, names, axis_names, optional_axes=()):
    """The guide's form of a `dsl` call, for docstrings."""
    parts = [guide_name(dsl, n) for n in names if not _default(dsl, n)[0]]
    parts += [f"{guide_name(dsl, n)}={_default(dsl, n)[1]}" for n in names if _default(dsl, n)[0]]
    for axis in axis_names:
        default = axis_default(dsl, axis)
        parts.append(f"{axis}={default.upper()}" if default else f"[{axis}=]" if axis in optional_axes else f"{axis}=")
    if takes_team(dsl, names):
        parts.append("team=Team.WORLD")
    return f"cco.{dsl}({', '.join(parts)})"
