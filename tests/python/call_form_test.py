# SPDX-License-Identifier: MIT
"""The guide's call form beside the ABI's order (cco.device.call_form): which argument each
value lands in, the defaults, the names, and the calls that must be refused rather than
shifted. Both DSL bindings bind through it; tests/triton checks the kernels they produce."""

import pytest

from cco.device import CCO_DEVICE_FUNCTIONS, call_form
from cco.device.call_form import CallFormError, axis_default, axis_value, bind, prepare


def names(dsl):
    return next(e["arg_names"] for e in CCO_DEVICE_FUNCTIONS if e["dsl"] == dsl)


PUT = names("Gda.put")  # dc, ctx, peer, dstWin, dstOff, srcWin, srcOff, bytes, signalId, signalValue


def test_every_argument_by_position_is_the_abis_order():
    args = tuple(range(10, 20))
    assert bind("Gda.put", PUT, args, {}) == list(args)
    assert bind("Gda.read_signal", names("Gda.read_signal"), (7, 1, 2, 32), {}) == [7, 1, 2, 32]


def test_the_guides_form_puts_each_value_in_its_argument():
    kwargs = {"signal_id": 4, "signal_val": 9, "ctx": 2}
    got = bind("Gda.put", PUT, ("dc", "peer", "dw", "do", "sw", "so", "n"), kwargs)
    assert got == ["dc", 2, "peer", "dw", "do", "sw", "so", "n", 4, 9]
    assert kwargs == {}  # argument keywords are taken, the caller's (axes) stay
    assert bind("Gda.put", PUT, ("dc", 1, "dw", "do", "sw", "so", "n"), {}) == ["dc", 0, 1, "dw", "do", "sw", "so",
                                                                                  "n", 0, 0]


def test_every_spelling_names_an_argument():
    for spelling in ({"dev_comm": "dc"}, {"dc": "dc"}):
        got = bind("Gda.put", PUT, (), dict(spelling, peer=1, dst_win="dw", dstOff="do", src_win="sw", src_off="so",
                                            nbytes="n", signalId=3, signal_value=5))
        assert got == ["dc", 0, 1, "dw", "do", "sw", "so", "n", 3, 5]
    # Gda.signal's amount is the table's `value`, the guide's signal_val; INC may leave it out.
    assert bind("Gda.signal", names("Gda.signal"), ("dc", 1), {"signal_val": 6, "signal_id": 2}) == ["dc", 0, 1, 2, 6]
    assert bind("Gda.signal", names("Gda.signal"), ("dc", 1), {}) == ["dc", 0, 1, 0, 0]


def test_bits_and_qid_may_follow_by_position_where_nothing_can_shift():
    # A handle binds the context: bits may follow by position.
    assert bind("Gda.read_signal", names("Gda.read_signal"), (3, 32), {}, lead=("dc", 0)) == ["dc", 0, 3, 32]
    assert bind("Gda.wait_signal", names("Gda.wait_signal"), ("dc", 3, 8), {}) == ["dc", 0, 3, 8, 64]
    assert bind("Gda.read_signal", names("Gda.read_signal"), ("dc", 3), {"bits": 32}) == ["dc", 0, 3, 32]
    sdma = names("Sdma.put")  # dc, peer, dstWin, dstOff, srcWin, srcOff, bytes, qid, flags
    assert bind("Sdma.put", sdma, ("dc", 1, "dw", "do", "sw", "so", "n", 2), {}) == ["dc", 1, "dw", "do", "sw", "so",
                                                                                      "n", 2, 0]


def test_a_wait_or_read_names_its_signal():
    with pytest.raises(CallFormError, match="missing argument signal_id"):
        bind("Gda.read_signal", names("Gda.read_signal"), ("dc",), {})


def test_an_abi_order_call_missing_its_tail_is_refused_not_shifted():
    # (dc, ctx, peer, ...) without signalId/signalValue would read ctx as the peer.
    with pytest.raises(CallFormError, match=r"8 positional arguments: the ABI's order takes all 10"):
        bind("Gda.put", PUT, tuple(range(8)), {})
    # (dc, ctx, signalId, least) without bits would read ctx as the signal; (dc, ctx, signalId)
    # likewise: bits goes by name where the call gives the context.
    with pytest.raises(CallFormError, match=r"4 positional arguments: the ABI's order takes all 5"):
        bind("Gda.wait_signal", names("Gda.wait_signal"), ("dc", 0, 3, 1), {})
    with pytest.raises(CallFormError, match=r"3 positional arguments: the ABI's order takes all 4"):
        bind("Gda.read_signal", names("Gda.read_signal"), ("dc", 0, 3), {})


def test_twice_missing_and_handles():
    with pytest.raises(CallFormError, match="peer given twice"):
        bind("Gda.put", PUT, ("dc", 1, "dw", "do", "sw", "so", "n"), {"peer": 2})
    with pytest.raises(CallFormError, match="signal_val given twice"):
        bind("Gda.put", PUT, ("dc", 1, "dw", "do", "sw", "so", "n"), {"signal_val": 1, "signalValue": 1})
    with pytest.raises(CallFormError, match="missing argument nbytes"):
        bind("Gda.put", PUT, ("dc", 1, "dw", "do", "sw", "so"), {})
    # A handle binds dc and ctx; its calls take the rest either way.
    assert bind("Gda.put", PUT, (1, "dw", "do", "sw", "so", "n", 3, 4), {}, lead=("dc", 5)) == [
        "dc", 5, 1, "dw", "do", "sw", "so", "n", 3, 4]
    assert bind("Gda.put", PUT, (1, "dw", "do", "sw", "so", "n"), {"signal_id": 3}, lead=("dc", 5)) == [
        "dc", 5, 1, "dw", "do", "sw", "so", "n", 3, 0]


def test_axis_defaults_are_the_guides():
    # Where every thread runs each call (Triton), coop defaults to BLOCK: one post per program.
    assert axis_default("Gda.put", "coop", every_thread_calls=True) == "block"
    assert axis_default("Gda.flush", "coop", every_thread_calls=True) == "block"
    assert axis_default("LsaBarrier.sync", "coop", every_thread_calls=True) is None
    assert [axis_default("Gda.put", a) for a in ("coop", "thread_mode", "signal_op")] == ["thread", "independent",
                                                                                           "none"]
    assert axis_default("Gda.signal", "signal_op") == "inc"
    assert axis_default("GdaDeferred.flush", "coop") == "warp"
    assert axis_default("Sdma.put", "signal") == "on"
    # Who arrives at a barrier must be said.
    assert axis_default("LsaBarrier.sync", "coop") is None
    assert axis_default("Gda.barrier_sync", "coop") is None
    assert (axis_value("Sdma.put", "signal", False), axis_value("Sdma.put", "signal", True)) == ("off", "on")


def _prepare(dsl, args, kwargs):
    entries = [e for e in CCO_DEVICE_FUNCTIONS if e["dsl"] == dsl]
    axes = sorted({a for e in entries for a in e["axes"]})
    return prepare(dsl, entries[0]["arg_names"], axes, (), args, kwargs)


def test_aggregate_is_the_flag():
    sdma = ("dc", 1, "dw", "do", "sw", "so", "n")
    assert _prepare("Sdma.put", sdma, {"aggregate": True})[0][-1] == 1
    assert _prepare("Sdma.put", sdma, {"aggregate": False})[0][-1] == 0
    assert _prepare("Sdma.put", sdma, {})[0][-1] == 0
    values, axes, _ = _prepare("Sdma.get", sdma, {"signal": False, "coop": 2})
    assert axes == {"coop": "block", "signal": "off"}
    # Never one silently over the other: flags by name or by position beside aggregate=.
    with pytest.raises(CallFormError, match="aggregate= and flags both given"):
        _prepare("Sdma.put", sdma, {"aggregate": True, "flags": 2})
    with pytest.raises(CallFormError, match="aggregate= and flags both given"):
        _prepare("Sdma.put", sdma + (0, 2), {"aggregate": True})
    with pytest.raises(CallFormError, match="unknown keyword"):
        _prepare("Gda.put", ("dc", 1, "dw", "do", "sw", "so", "n"), {"aggregate": True})


def test_add_needs_its_amount_and_axes_are_checked():
    put = ("dc", 1, "dw", "do", "sw", "so", "n")
    with pytest.raises(CallFormError, match="signal_op=ADD needs signal_val="):
        _prepare("Gda.put", put, {"signal_op": "add", "signal_id": 1})
    with pytest.raises(CallFormError, match="signal_op=ADD needs signal_val="):
        _prepare("Gda.signal", ("dc", 1), {"signal_op": 2})
    values, axes, _ = _prepare("Gda.signal", ("dc", 1), {"signal_op": 2, "signal_val": 7})
    assert values == ["dc", 0, 1, 0, 7] and axes == {"coop": "thread", "signal_op": "add"}
    with pytest.raises(CallFormError, match=r"coop=7 is not a compile-time CoopScope"):
        _prepare("Gda.flush", ("dc",), {"coop": 7})
    with pytest.raises(CallFormError, match="coop must be a compile-time CoopScope constant"):
        _prepare("Gda.flush", ("dc",), {"coop": object()})


def test_the_guides_wait_is_flush_wait():
    from cco.ir.triton import cco as triton_cco

    assert triton_cco.Gda.wait is triton_cco.Gda.flush_wait
    assert triton_cco.GdaCallerOrdered.wait is triton_cco.GdaCallerOrdered.flush_wait
    assert not hasattr(triton_cco.Sdma, "wait")
    import cco.device.flydsl as flydsl_cco

    assert flydsl_cco.Gda.wait is flydsl_cco.Gda.flush_wait


def test_the_doorbell_modes_namespaces_have_the_calls_that_post_nothing():
    """The guide: "cco.GdaDeferred is the same" as cco.Gda; cco.GdaCallerOrdered differs only in
    having no signal. Gda's calls that post nothing are in both, in both DSL bindings, and
    what posts stays each mode's own."""
    from cco.device.abi_table import MODE_INDEPENDENT_GDA, functions_by_dsl_name
    from cco.ir.triton import cco as triton_cco
    import cco.device.flydsl as flydsl_cco

    groups = functions_by_dsl_name()
    assert len(MODE_INDEPENDENT_GDA) == 8
    for space in ("GdaDeferred", "GdaCallerOrdered"):
        for name in MODE_INDEPENDENT_GDA:
            assert [e["symbol"] for e in groups[f"{space}.{name}"]] == [e["symbol"] for e in groups[f"Gda.{name}"]]
            assert hasattr(getattr(triton_cco, space), name), (space, name)
            assert name in getattr(flydsl_cco, space)._functions, (space, name)
        for posts in ("counter", "barrier_sync"):  # a marker or a barrier goes through Gda's own rings
            assert not hasattr(getattr(triton_cco, space), posts)
    assert not hasattr(triton_cco.GdaCallerOrdered, "signal") and hasattr(triton_cco.GdaDeferred, "signal")
    assert groups["GdaDeferred.put"][0]["symbol"].startswith("cco_gda_deferred_put")


def test_every_docstring_form_binds_as_it_reads():
    """The guide's form a docstring shows (call_form.signature) is what bind takes: its
    positional names fill those arguments, in that order (Sdma.wait_signal's qid before least)."""
    for entry in CCO_DEVICE_FUNCTIONS:
        dsl, table_names = entry["dsl"], entry["arg_names"]
        shown = call_form.signature(dsl, table_names, [])
        inside = shown[shown.index("(") + 1:-1]
        positional = [p for p in inside.split(", ") if p and "=" not in p]
        args = [100 + i for i in range(len(positional))]
        given = set()
        values = call_form.bind(dsl, table_names, args, {}, given=given)
        by_name = dict(zip(table_names, values))
        for i, shown_name in enumerate(positional):
            (name,) = [n for n in table_names if call_form.guide_name(dsl, n) == shown_name]
            assert by_name[name] == 100 + i, (shown, name)
