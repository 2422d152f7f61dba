# SPDX-License-Identifier: MIT
"""Triton (PyPI, no GPU) compiles kernels calling the CCO device API for every target we
ship, linking that target's bitcode variant; the bitcode is fully inlined (no call left)
and its memory-model instructions appear in the kernel's code."""

import os
import re

import pytest
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from cco.device import CCO_DEVICE_FUNCTIONS
from cco.ir.triton import cco

import kernels

# These checks read the PTX and need ptxas only to accept it and make a binary: its optimiser, two
# thirds of a compile here, changes nothing they look at.
os.environ.setdefault("DISABLE_PTXAS_OPT", "1")

TARGETS = {
    "cuda-sm_90": GPUTarget("cuda", 90, 32),
    "cuda-sm_100": GPUTarget("cuda", 100, 32),
    "hip-gfx942": GPUTarget("hip", "gfx942", 64),
    "hip-gfx950": GPUTarget("hip", "gfx950", 64),
}

# What each kernel's memory-model operations look like per target, by kernel: a system-scope fence
# (every_function), release stores and acquire loads at system scope (every_barrier, the GDA
# kernels, every_sdma). The GDA patterns are looked for in the GDA parts' code together.
MEMORY_MODEL = {
    ("cuda", "every_function"): [r"fence\.acq_rel\.sys"],
    ("cuda", "every_barrier"): [r"st\.release\.sys\.u32", r"ld\.acquire\.sys\.u32"],
    # the GDA calls also reserve ring slots by a device-scope compare-and-swap on the head
    ("cuda", "gda"): [r"st\.release\.sys\.u64", r"ld\.acquire\.sys\.u64", r"atom\.\w*\.?gpu\.cas\.b64|atom\.cas\.b64"],
    ("hip", "every_function"): [r"buffer_wbl2 sc0 sc1"],
    ("hip", "every_barrier"): [r"buffer_wbl2 sc0 sc1", r"buffer_inv sc0 sc1"],
    ("hip", "gda"): [r"buffer_wbl2 sc0 sc1", r"buffer_inv sc0 sc1"],
    ("cuda", "every_sdma"): [r"st\.release\.sys\.u64", r"ld\.acquire\.sys\.u64"],
    ("hip", "every_sdma"): [r"buffer_wbl2 sc0 sc1", r"buffer_inv sc0 sc1"],
    # the ordered barriers: relaxed forms beside release / acquire ones
    ("cuda", "every_ordered_barrier"): [r"st\.relaxed\.sys\.u32", r"ld\.relaxed\.sys\.u32",
                                        r"st\.release\.sys\.u32", r"ld\.acquire\.sys\.u32"],
    ("hip", "every_ordered_barrier"): [r"buffer_wbl2 sc0 sc1", r"buffer_inv sc0 sc1"],
}
CALL = {"cuda": r"^\s*call(\.uni)?\b", "hip": r"^\s*s_swappc_b64\b"}


def compile_for(kernel, signature, constexprs, target, num_warps=4):
    src = ASTSource(fn=kernel, signature=signature, constexprs=constexprs)
    return triton.compile(src, target=target, options={"extern_libs": tuple(cco.get_extern_libs(target).items()),
                                                       "num_warps": num_warps})


# Symbols Triton refuses to call (a barrier with coop=THREAD: every thread would arrive);
# FlyDSL and C++ callers, which choose the calling thread, use them.
REFUSED_IN_TRITON = {f["symbol"] for f in CCO_DEVICE_FUNCTIONS
                     if f["dsl"].startswith("LsaBarrier.") and f["axes"].get("coop") == "thread"}


@pytest.fixture(scope="module", params=sorted(TARGETS))
def compiled(request):
    """The kernels that together call every exported function, compiled for one target:
    {name: compiled kernel}."""
    target = TARGETS[request.param]
    io = {"dc": "u64", "win": "u64", "out": "*i32"}
    kernels_ = {
        "every_function": compile_for(kernels.every_function, {**io, "peer": "constexpr"}, {"peer": 1}, target),
        # One warp: the barriers' coop WARP covers the whole program there.
        "every_barrier": compile_for(kernels.every_barrier, {"dc": "u64", "out": "*i32"}, {}, target, num_warps=1),
        **{f"gda{i}": compile_for(part, io, {}, target, num_warps=1) for i, part in enumerate(kernels.every_gda_parts)},
        "every_sdma": compile_for(kernels.every_sdma, io, {}, target),
        "every_ordered_barrier": compile_for(kernels.every_ordered_barrier, io, {}, target, num_warps=1),
        # Handles that name nothing (the GPU test runs it): no memory-model pattern of its own.
        "bad_handles": compile_for(kernels.bad_handles, io, {}, target),
    }
    return target, kernels_


def _code(target, c):
    return c.asm["ptx"] if target.backend == "cuda" else c.asm["amdgcn"]


def test_links_the_targets_variant(compiled):
    target, _ = compiled
    path = cco.get_extern_libs(target)["cco"]
    arch = f"sm_{target.arch}" if target.backend == "cuda" else target.arch
    assert f"-{arch}-" in path
    if target.backend == "hip":
        assert path.endswith("-cov5.bc")  # Triton's AMD backend links code-object v5


def test_every_exported_function_is_called(compiled):
    _, ks = compiled
    called = set()
    for c in ks.values():
        called |= set(re.findall(r'symbol = "(cco_\w+)"', c.asm["ttir"]))
    assert called == {f["symbol"] for f in CCO_DEVICE_FUNCTIONS} - REFUSED_IN_TRITON
    # arrive, wait, sync, wait_timeout, sync_timeout; and by order: arrive and wait x2, sync x4,
    # wait_timeout x2, sync_timeout x4
    assert len(REFUSED_IN_TRITON) == 5 + 14


def test_fully_inlined(compiled):
    target, ks = compiled
    for name, c in ks.items():
        asm = _code(target, c)
        calls = re.findall(CALL[target.backend], asm, re.M)
        assert calls == [], f"{name}: the bitcode was not inlined"
        comment = "//" if target.backend == "cuda" else ";"
        code = "\n".join(line.split(comment, 1)[0] for line in asm.splitlines())
        assert "cco_" not in code, f"{name}: a cco_ function survives in the kernel's code"
    gda = "\n".join(_code(target, c) for name, c in ks.items() if name.startswith("gda"))
    for (backend, name), patterns in MEMORY_MODEL.items():
        if backend != target.backend:
            continue
        asm = gda if name == "gda" else _code(target, ks[name])
        for pattern in patterns:
            assert re.search(pattern, asm), f"{name}: no /{pattern}/ in the {target.arch} code"


def test_binary_produced(compiled):
    target, ks = compiled
    for c in ks.values():
        assert c.asm["cubin" if target.backend == "cuda" else "hsaco"]


def test_bad_axis_value_is_a_compile_error():
    @triton.jit
    def bad(dc):
        cco.LsaBarrier.sync(dc, 0, coop=7)

    @triton.jit
    def missing(dc):
        cco.LsaBarrier.sync(dc, 0)

    @triton.jit
    def arrive_acquire(dc):  # an arrive only releases or not
        cco.LsaBarrier.arrive(dc, 0, coop=cco.CoopScope.BLOCK, order=cco.MemoryOrder.ACQUIRE)

    @triton.jit
    def bad_order(dc):
        cco.LsaBarrier.sync(dc, 0, coop=cco.CoopScope.BLOCK, order=9)

    for kernel, text in ((bad, "coop=7 is not a compile-time CoopScope"), (missing, "needs coop="),
                         (arrive_acquire, "no variant for {'coop': 'block', 'order': 'acquire'}"),
                         (bad_order, "order=9 is not a compile-time MemoryOrder")):
        with pytest.raises(triton.compiler.errors.CompilationError, match=re.escape(text)):
            compile_for(kernel, {"dc": "u64"}, {}, TARGETS["cuda-sm_90"])


def test_barriers_that_would_race_are_refused_at_trace_time():
    """In Triton every thread runs a scalar call: a barrier with coop=THREAD, or WARP in a
    program of several warps, would arrive more than once per rank. Refused, with the fix."""

    @triton.jit
    def thread(dc):
        cco.LsaBarrier.sync(dc, 0, coop=cco.CoopScope.THREAD)

    @triton.jit
    def warp(dc):
        cco.LsaBarrier.arrive(dc, 0, coop=cco.CoopScope.WARP)

    @triton.jit
    def gda_warp(dc):
        cco.Gda.barrier_sync(dc, 0, 0, coop=cco.CoopScope.WARP)

    cases = ((thread, 1, "coop=THREAD would make every thread of the program arrive"),
             (warp, 4, "coop=WARP with num_warps=4 would make each warp arrive on its own"),
             (gda_warp, 2, "coop=WARP with num_warps=2"))
    for kernel, warps, text in cases:
        with pytest.raises(triton.compiler.errors.CompilationError, match=re.escape(text)):
            compile_for(kernel, {"dc": "u64"}, {}, TARGETS["cuda-sm_90"], num_warps=warps)
    # The same calls where they are right: WARP in a one-warp program, BLOCK anywhere.
    assert compile_for(warp, {"dc": "u64"}, {}, TARGETS["hip-gfx942"], num_warps=1).asm["amdgcn"]
    assert compile_for(gda_warp, {"dc": "u64"}, {}, TARGETS["cuda-sm_90"], num_warps=1).asm["ptx"]


def test_team_keyword():
    """team=Team.GDA maps the peer through Gda.team_peer before the call; a team that GDA
    peers cannot be named in, or a team on an operation without a peer, is a compile error."""
    import triton.language as tl

    @triton.jit
    def by_team(dc, win, out):
        tl.store(out, cco.Gda.signal(dc, 0, 1, 0, 1, coop=cco.CoopScope.THREAD, signal_op=cco.SignalOp.INC,
                                     team=cco.Team.GDA))

    @triton.jit
    def lsa_team(dc, win, out):
        tl.store(out, cco.Gda.signal(dc, 0, 1, 0, 1, coop=cco.CoopScope.THREAD, signal_op=cco.SignalOp.INC,
                                     team=cco.Team.LSA))

    @triton.jit
    def no_peer(dc, win, out):
        tl.store(out, cco.Gda.flush(dc, 0, coop=cco.CoopScope.THREAD, team=cco.Team.GDA))

    assert (cco.Team.WORLD, cco.Team.LSA, cco.Team.GDA) == (0, 1, 4)
    signature = {"dc": "u64", "win": "u64", "out": "*i32"}
    ttir = compile_for(by_team, signature, {}, TARGETS["cuda-sm_90"]).asm["ttir"]
    assert "cco_gda_team_peer" in ttir and "cco_gda_signal" in ttir
    for kernel, text in ((lsa_team, "team=1: peers are world ranks"), (no_peer, "unknown keyword(s) ['team']")):
        with pytest.raises(triton.compiler.errors.CompilationError, match=re.escape(text)):
            compile_for(kernel, signature, {}, TARGETS["cuda-sm_90"])


def test_the_doorbell_modes_namespaces_call_gdas_symbols_for_what_posts_nothing():
    """cco.GdaDeferred and cco.GdaCallerOrdered carry Gda's calls that post nothing (signal and
    counter words read, waited on, reset; the GDA team), as the guide's "the same" promises:
    each compiles to Gda's own symbol."""
    import triton.language as tl

    @triton.jit
    def both(dc, win, out):
        bad = cco.GdaDeferred.wait_signal(dc, 0, 3, 1, 64, coop=cco.CoopScope.BLOCK)
        bad += cco.GdaCallerOrdered.wait_counter(dc, 0, 1, 1, coop=cco.CoopScope.WARP)
        bad += cco.GdaDeferred.reset_signal(dc, 0, 3) + cco.GdaCallerOrdered.reset_counter(dc, 0, 1)
        seen = cco.GdaCallerOrdered.read_signal(dc, 0, 3, 64) + cco.GdaDeferred.read_counter(dc, 0, 1)
        peer = cco.GdaDeferred.team_peer(dc, cco.GdaCallerOrdered.team_size(dc) - 1)
        tl.store(out, bad + seen.to(tl.int32) + peer)

    ttir = _body(both, TARGETS["cuda-sm_90"])
    for symbol in ("cco_gda_wait_signal__block", "cco_gda_wait_counter__warp", "cco_gda_reset_signal",
                   "cco_gda_reset_counter", "cco_gda_read_signal", "cco_gda_read_counter", "cco_gda_team_peer",
                   "cco_gda_team_size"):
        assert symbol in ttir, symbol


def _body(kernel, target):
    """A compiled kernel's TTIR without its name and source locations."""
    signature = {"dc": "u64", "win": "u64", "out": "*i32"}
    text = compile_for(kernel, signature, {}, target).asm["ttir"]
    text = re.sub(r"\s*loc\([^)]*\)", "", text)
    return "\n".join(line for line in text.splitlines() if not line.startswith("#loc")).replace(kernel.__name__, "K")


def test_the_guides_call_form_makes_the_abi_orders_calls():
    """cco.Gda.put(dev_comm, peer, ..., signal_op=, signal_id=) and its kin (ctx and defaults by
    name, the axis defaults (coop BLOCK in Triton), SDMA's signal=/aggregate=) compile to exactly
    the calls the ABI's order spells out, argument for argument."""
    import triton.language as tl

    @triton.jit
    def guide(dc, win, out):
        bad = cco.Gda.put(dc, 1, win, 8, win, 64, 64, signal_op=cco.SignalOp.INC, signal_id=2, coop=cco.CoopScope.BLOCK)
        bad += cco.Gda.put_value(dc, 1, win, 16, 77, ctx=1, signal_op=cco.SignalOp.ADD, signal_val=3)
        bad += cco.Gda.signal(dc, 1, signal_op=cco.SignalOp.ADD, signal_val=5, ctx=1)
        bad += cco.Gda.signal(dc, 1, signal_id=4)
        bad += cco.Gda.wait_signal(dc, 3, 1, coop=cco.CoopScope.BLOCK)
        bad += cco.Gda.flush(dc)
        bad += cco.Sdma.put(dc, 1, win, 0, win, 0, 64, 3, signal=False, aggregate=True)
        bad += cco.Sdma.get(dc, 1, win, 0, win, 0, 64)
        tl.store(out, bad + cco.Gda.read_signal(dc, 3, bits=32).to(tl.int32))

    @triton.jit
    def abi(dc, win, out):
        BLOCK: tl.constexpr = cco.CoopScope.BLOCK  # Triton's default coop: one call per program
        INDEPENDENT: tl.constexpr = cco.ThreadMode.INDEPENDENT
        bad = cco.Gda.put(dc, 0, 1, win, 8, win, 64, 64, 2, 0, signal_op=cco.SignalOp.INC, coop=cco.CoopScope.BLOCK,
                          thread_mode=INDEPENDENT)
        bad += cco.Gda.put_value(dc, 1, 1, win, 16, 77, 0, 3, signal_op=cco.SignalOp.ADD, coop=BLOCK,
                                 thread_mode=INDEPENDENT)
        bad += cco.Gda.signal(dc, 1, 1, 0, 5, signal_op=cco.SignalOp.ADD, coop=BLOCK)
        bad += cco.Gda.signal(dc, 0, 1, 4, 0, signal_op=cco.SignalOp.INC, coop=BLOCK)
        bad += cco.Gda.wait_signal(dc, 0, 3, 1, 64, coop=cco.CoopScope.BLOCK)
        bad += cco.Gda.flush(dc, 0, coop=BLOCK)
        bad += cco.Sdma.put(dc, 1, win, 0, win, 0, 64, 3, 1, signal=cco.SdmaSignal.OFF, coop=BLOCK)
        bad += cco.Sdma.get(dc, 1, win, 0, win, 0, 64, 0, 0, signal=cco.SdmaSignal.ON, coop=BLOCK)
        tl.store(out, bad + cco.Gda.read_signal(dc, 0, 3, 32).to(tl.int32))

    target = TARGETS["cuda-sm_90"]
    guide_body = _body(guide, target)
    assert guide_body == _body(abi, target)
    assert guide_body.count("tt.extern_elementwise") == 9


def test_an_abi_order_call_missing_arguments_is_refused():
    @triton.jit
    def shifted(dc, win, out):  # (dc, ctx, peer, ...) without the signal id and value
        cco.Gda.put(dc, 0, 1, win, 0, win, 0, 64, coop=cco.CoopScope.BLOCK)

    with pytest.raises(triton.compiler.errors.CompilationError, match="the ABI's order takes all 10"):
        compile_for(shifted, {"dc": "u64", "win": "u64", "out": "*i32"}, {}, TARGETS["cuda-sm_90"])


def test_barrier_rounds_load_the_device_communicator_once():
    """The bitcode reads the device communicator with invariant loads (nothing writes it while
    a kernel runs), so a kernel that loops over barrier rounds loads its fields once, ahead of
    the loop: a round is the epoch load, the release store and the acquire polls, not three
    dependent memory trips behind the previous round's acquire."""
    from cco_tools.perf.kernels import lsa as K

    signature = {"dc": "u64", "rounds": "i32", "status": "*i32"}
    ptx = compile_for(K.barrier_loop, signature, {"COOP": cco.CoopScope.BLOCK, "ORDER": -1},
                      TARGETS["cuda-sm_90"]).asm["ptx"]
    loop = ptx.index("Loop Header")
    before, inside = ptx[:loop], ptx[loop:]
    assert len(re.findall(r"ld\.global\.nc\.", before)) >= 5, before
    assert not re.search(r"ld\.global\.nc\.", inside), "a device communicator field is loaded in the loop"
    assert not re.search(r"ld\.global\.(b|u)\d+", inside), "a plain global load is left in the round"
    assert re.search(r"st\.release\.sys", inside) and re.search(r"ld\.acquire\.sys", inside)


MATRIX_SIGNATURE = {"dc": "i64", "win": "i64", "mine": "*i32", "status": "*i32", "peer": "i32", "word": "i64",
                    "theirs": "i32", "their_word": "i64", "active": "i32"}


def _some_cells():
    """A cell of every (op, doorbell mode) and (op, signal action), and every coop and thread
    mode once: the calls the GPU matrix makes (its in-kernel ordering check among them), in
    fewer compiles than its 52 cells (tests/gpu/test_gda_gpu.py)."""
    picked, seen = [], set()
    for cell in kernels.matrix_cells():
        op, coop, tm, sig, mode = cell
        keys = {("op-mode", op, mode), ("op-signal", op, sig), ("group", coop, tm)}
        if not keys <= seen:
            picked.append(cell)
            seen |= keys
    return picked


@pytest.mark.parametrize("target", ["cuda-sm_90", "hip-gfx942"])
def test_the_gpu_tests_gda_kernels_compile(target):
    """The GDA kernels only the GPU tests launch (which CI never runs) compile and link here:
    a get per coop, and the matrix's cells (each op through each doorbell mode's handle)."""
    for coop in (cco.CoopScope.THREAD, cco.CoopScope.WARP, cco.CoopScope.BLOCK):
        signature = {"dc": "i64", "win": "i64", "status": "*i32", "peer": "i32", "src": "i64", "dst": "i64",
                     "nbytes": "i64", "COOP": "constexpr", "THREADS": "constexpr"}
        assert compile_for(kernels.get_then_flush, signature, {"COOP": coop, "THREADS": 128}, TARGETS[target]).asm
    cells = _some_cells()
    assert {c[0] for c in cells} == {0, 1, 2, 3} and {c[4] for c in cells} == {0, 1, 2}
    for cell in cells:
        constexprs = kernels.matrix_constexprs(cell, warps=2, lanes=TARGETS[target].warp_size)
        signature = dict(MATRIX_SIGNATURE, **{name: "constexpr" for name in constexprs})
        assert compile_for(kernels.matrix_cell, signature, constexprs, TARGETS[target], num_warps=2).asm
