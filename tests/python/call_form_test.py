"""The guide's call form beside the ABI's order (cco.device.call_form): which argument each
value lands in, the defaults, the names, and the calls that must be refused rather than
shifted. Both DSL bindings bind through it; tests/triton checks the kernels they produce."""

import pytest

from cco.device import CCO_DEVICE_FUNCTIONS
from cco.device.call_form import CallFormError, axis_default, axis_value, bind, take_aggregate


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


def test_bits_and_qid_may_follow_by_position():
    assert bind("Gda.read_signal", names("Gda.read_signal"), ("dc", 3, 32), {}) == ["dc", 0, 3, 32]
    assert bind("Gda.wait_signal", names("Gda.wait_signal"), ("dc", 3, 8), {}) == ["dc", 0, 3, 8, 64]
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
    assert [axis_default("Gda.put", a) for a in ("coop", "thread_mode", "signal_op")] == ["thread", "independent",
                                                                                           "none"]
    assert axis_default("Gda.signal", "signal_op") == "inc"
    assert axis_default("GdaDeferred.flush", "coop") == "warp"
    assert axis_default("Sdma.put", "signal") == "on"
    # Who arrives at a barrier must be said.
    assert axis_default("LsaBarrier.sync", "coop") is None
    assert axis_default("Gda.barrier_sync", "coop") is None
    assert (axis_value("Sdma.put", "signal", False), axis_value("Sdma.put", "signal", True)) == ("off", "on")


def test_aggregate_is_the_flag():
    sdma = names("Sdma.put")
    assert take_aggregate("Sdma.put", sdma, {"aggregate": True}) == 1
    assert take_aggregate("Sdma.put", sdma, {"aggregate": False}) == 0
    assert take_aggregate("Sdma.put", sdma, {}) is None
    with pytest.raises(CallFormError, match="aggregate= and flags= both given"):
        take_aggregate("Sdma.put", sdma, {"aggregate": True, "flags": 1})
    with pytest.raises(CallFormError, match="unknown keyword"):
        take_aggregate("Gda.put", PUT, {"aggregate": True})
