# SPDX-License-Identifier: MIT
"""Triton kernels that call the CCO device API, shared by the AOT tests (CPU) and the
GPU tests. `every_function` calls every function of the ABI table once; `get_then_flush` and
`matrix_cell` are the GPU GDA tests' (tests/gpu/test_gda_gpu.py), compiled in CI here."""

import triton
import triton.language as tl

from cco.ir.triton import cco


@triton.jit
def globaltimer_ns():
    """The GPU's global timer, in ns (NVIDIA's %globaltimer; GPU tests only)."""
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def every_function(dc, win, out, peer: tl.constexpr):
    """out[0..7]: abi version, rank, world size, lsa rank, lsa size, and three values
    written through peer pointers; out[8] = 1 after the system fence; out[9] = 1 when the
    world-rank and local pointers agree; out[10] = the abort flag; out[11..13] = LSA team
    size, world-team rank, world rank of LSA member 0; out[14] = 0 (the trace's clock and
    ranges where the device communicator does not trace)."""
    tl.store(out + 0, cco.abi_version())
    tl.store(out + 1, cco.DevComm.rank(dc))
    tl.store(out + 2, cco.DevComm.world_size(dc))
    tl.store(out + 3, cco.DevComm.lsa_rank(dc))
    tl.store(out + 4, cco.DevComm.lsa_size(dc))
    me = cco.DevComm.lsa_rank(dc)
    mine = cco.Window.lsa_ptr(win, me, 0).to(tl.pointer_type(tl.uint32), bitcast=True)
    theirs = cco.Window.lsa_ptr(win, peer, 64).to(tl.pointer_type(tl.uint32), bitcast=True)
    tl.store(mine, 0xC0FFEE)
    tl.store(theirs, 0xBEEF00 + me)
    nowhere = cco.Window.lsa_ptr(win, -1, 0)  # not an LSA rank: 0
    tl.store(out + 5, tl.load(mine))
    tl.store(out + 6, tl.load(theirs))
    tl.store(out + 7, nowhere.to(tl.int32))
    cco.system_fence(1)
    tl.store(out + 8, 1)
    world = cco.Window.lsa_ptr_world(win, cco.DevComm.rank(dc), 0)
    local = cco.Window.local_ptr(win, 0)
    tl.store(out + 9, (world == local).to(tl.int32))
    tl.store(out + 10, cco.DevComm.aborted(dc))
    tl.store(out + 11, cco.Team.size(dc, cco.TeamKind.LSA))
    tl.store(out + 12, cco.Team.rank(dc, cco.TeamKind.WORLD))
    tl.store(out + 13, cco.Team.world_rank(dc, cco.TeamKind.LSA, 0))
    # This device communicator does not trace: the clock reads 0 and a range records nothing.
    begin = cco.Trace.clock(dc)
    status = cco.Trace.range(dc, cco.TraceTag.USER, 1, begin, coop=cco.CoopScope.THREAD)
    status |= cco.Trace.range(dc, cco.TraceTag.USER, 2, begin, coop=cco.CoopScope.WARP)
    status |= cco.Trace.range(dc, cco.TraceTag.USER, 3, begin, coop=cco.CoopScope.BLOCK)
    tl.store(out + 14, begin.to(tl.int32) | status)


@triton.jit
def bad_handles(dc, win, out):
    """The device communicator and window functions on handles that name none (null, a
    deregistered window's zeroed descriptor, a device communicator of another ABI): out[0..6]
    the getters (-1 each), out[7] aborted (0), out[8..10] the three LSA pointers (0 each),
    out[11..13] barrier arrive, wait, sync with coop BLOCK (INVALID_ARGUMENT each)."""
    tl.store(out + 0, cco.DevComm.rank(dc))
    tl.store(out + 1, cco.DevComm.world_size(dc))
    tl.store(out + 2, cco.DevComm.lsa_rank(dc))
    tl.store(out + 3, cco.DevComm.lsa_size(dc))
    tl.store(out + 4, cco.Team.size(dc, cco.TeamKind.LSA))
    tl.store(out + 5, cco.Team.rank(dc, cco.TeamKind.WORLD))
    tl.store(out + 6, cco.Team.world_rank(dc, cco.TeamKind.LSA, 0))
    tl.store(out + 7, cco.DevComm.aborted(dc))
    tl.store(out + 8, (cco.Window.lsa_ptr(win, 0, 0) != 0).to(tl.int32))
    tl.store(out + 9, (cco.Window.lsa_ptr_world(win, 0, 0) != 0).to(tl.int32))
    tl.store(out + 10, (cco.Window.local_ptr(win, 0) != 0).to(tl.int32))
    tl.store(out + 11, cco.LsaBarrier.arrive(dc, 0, coop=cco.CoopScope.BLOCK))
    tl.store(out + 12, cco.LsaBarrier.wait(dc, 0, coop=cco.CoopScope.BLOCK))
    tl.store(out + 13, cco.LsaBarrier.sync(dc, 0, coop=cco.CoopScope.BLOCK))


BAD_HANDLES_EXPECTED = [-1] * 7 + [0] * 4 + [3] * 3


def refusal_of(f):
    """What an ABI function of the GDA or SDMA family returns for a device communicator that
    names none: a getter -1, a read or a queue count 0, anything else INVALID_ARGUMENT (3)."""
    name = f["dsl"].split(".")[1]
    if name in ("team_size", "team_peer"):
        return -1
    if name.startswith("read_") or name == "queue_count":
        return 0
    return 3


def family_functions(family):
    """The functions _family_kernel_source calls, in its order."""
    from cco.device import CCO_DEVICE_FUNCTIONS
    return [f for f in CCO_DEVICE_FUNCTIONS if f["family"] == family]


@triton.jit
def every_barrier(dc, out):
    """Every LSA barrier symbol Triton can call correctly (coop WARP in a one-warp program,
    and BLOCK; THREAD is refused: every thread would arrive); out[i] = the status of call i."""
    tl.store(out + 0, cco.LsaBarrier.arrive(dc, 0, coop=cco.CoopScope.WARP))
    tl.store(out + 1, cco.LsaBarrier.wait(dc, 0, coop=cco.CoopScope.WARP))
    tl.store(out + 2, cco.LsaBarrier.arrive(dc, 0, coop=cco.CoopScope.BLOCK))
    tl.store(out + 3, cco.LsaBarrier.wait(dc, 0, coop=cco.CoopScope.BLOCK))
    tl.store(out + 4, cco.LsaBarrier.sync(dc, 0, coop=cco.CoopScope.WARP))
    tl.store(out + 5, cco.LsaBarrier.sync(dc, 0, coop=cco.CoopScope.BLOCK))
    t = 1000000
    tl.store(out + 6, cco.LsaBarrier.wait_timeout(dc, 0, t, coop=cco.CoopScope.WARP))
    tl.store(out + 7, cco.LsaBarrier.wait_timeout(dc, 0, t, coop=cco.CoopScope.BLOCK))
    tl.store(out + 8, cco.LsaBarrier.sync_timeout(dc, 0, t, coop=cco.CoopScope.WARP))
    tl.store(out + 9, cco.LsaBarrier.sync_timeout(dc, 0, t, coop=cco.CoopScope.BLOCK))


def _family_kernel_source(family, name, keep=lambda f: True):
    """A kernel `name` that calls every function of `family` (gda, sdma) in the ABI table
    once, through its DSL name and axis keywords (so every symbol is reachable from Triton):
    out[i] = what call i returned. Window arguments get `win`, peers and ids small numbers;
    in GDA every other call that names a peer names it as a GDA-team index (team=cco.Team.GDA)."""
    from cco.device import CCO_DEVICE_FUNCTIONS, ENUMS
    from cco.device.abi_table import load_abi_table

    axes = load_abi_table()["axes"]
    lines = ["import triton", "import triton.language as tl", "from cco.ir.triton import cco", "",
             "@triton.jit", f"def {name}(dc, win, out):"]
    k = 0
    for f in CCO_DEVICE_FUNCTIONS:
        if f["family"] != family or not keep(f):
            continue
        args = []
        for name, kind in zip(f["arg_names"], f["args"]):
            args.append("dc" if name == "dc" else "win" if name.endswith("Win") else "1" if kind == "int32" else "8")
        keywords = []
        for axis, value in sorted(f["axes"].items()):
            enum = axes[axis]["enum"]
            assert value.upper() in ENUMS[enum]
            keywords.append(f"{axis}=cco.{enum}.{value.upper()}")
        if family == "gda" and "peer" in f["arg_names"] and k % 2:
            keywords.append("team=cco.Team.GDA")  # half the peers as GDA-team indices
        call = f"cco.{f['dsl']}({', '.join(args + keywords)})"
        lines.append(f"    tl.store(out + {k}, ({call}).to(tl.int32))")
        k += 1
    return "\n".join(lines) + "\n", k


def _load_family_kernel(family, name=None, keep=lambda f: True):
    import importlib.util
    import os
    import tempfile

    name = name or f"every_{family}"
    source, count = _family_kernel_source(family, name, keep)
    path = os.path.join(tempfile.mkdtemp(prefix=f"cco-{family}-kernel-"), f"{name}_kernel.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(f"{name}_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name), count


every_gda, EVERY_GDA_CALLS = _load_family_kernel("gda")
# The same calls in GDA_PARTS kernels (every GDA_PARTS-th function each), for ahead-of-time compiles:
# the AMD backend's time grows faster than a kernel's size (gfx950 on the 2-core machine, all the
# parts: 60 s in 4 kernels, 34 s in 8, 24 s in 16; sm_90 19, 15 and 14 s).
GDA_PARTS = 16


def _gda_part(index):
    symbols = {f["symbol"] for f in family_functions("gda")[index::GDA_PARTS]}
    return _load_family_kernel("gda", f"every_gda_part{index}", keep=lambda f: f["symbol"] in symbols)


every_gda_parts = [_gda_part(i)[0] for i in range(GDA_PARTS)]
every_sdma, EVERY_SDMA_CALLS = _load_family_kernel("sdma")
# The LSA barriers with an order= (coop WARP and BLOCK; compile with one warp).
every_ordered_barrier, EVERY_ORDERED_BARRIER_CALLS = _load_family_kernel(
    "barrier", "every_ordered_barrier", keep=lambda f: "order" in f["axes"] and f["axes"]["coop"] != "thread")


@triton.jit(do_not_specialize=["peer", "src", "dst", "nbytes"])
def get_then_flush(dc, win, status, peer, src, dst, nbytes, COOP: tl.constexpr, THREADS: tl.constexpr):
    """Gets `nbytes` at `src` of `peer`'s window into this rank's at `dst`, flushes; status[t] =
    thread t's failed calls (a scalar store would keep thread 0's alone). nbytes == 0: only
    loads the kernel."""
    bad = 0
    if nbytes != 0:
        bad += cco.Gda.get(dc, 0, peer, win, src, win, dst, nbytes, coop=COOP, thread_mode=cco.ThreadMode.INDEPENDENT)
        bad += cco.Gda.flush(dc, 0, coop=COOP)
    tl.store(status + tl.arange(0, THREADS), tl.zeros([THREADS], dtype=tl.int32) + bad)


@triton.jit(do_not_specialize=["dc", "win", "peer", "word", "theirs", "their_word", "active"])
def matrix_cell(dc, win, mine, status, peer, word, theirs, their_word, active, OP: tl.constexpr, COOP: tl.constexpr,
                TM: tl.constexpr, SIG: tl.constexpr, MODE: tl.constexpr, ADD: tl.constexpr, LEAST: tl.constexpr,
                DST: tl.constexpr, NBYTES: tl.constexpr, THREADS: tl.constexpr):
    """One cell of the GDA matrix, both ranks at once towards each other: this rank's op to
    `peer` (OP 0 put of NBYTES from offset 0 to DST, 1 put_value of `word` there, 2 get of the
    peer's first NBYTES into DST, 3 signal) through a handle of MODE
    (0 Immediate, 1 Deferred, 2 CallerOrdered), adding to signal 0 (SIG; ADD per post for
    SignalOp.ADD); the mode's flush (which releases Deferred and CallerOrdered posts); where
    the op signals, a wait for the exact total the peer's posts add (LEAST), after which the
    peer's data must be here already (a signal is never visible before its payload: the first
    and last words of a put, `theirs` + i, or the put_value's `their_word`, read from `mine`,
    this rank's window); then signal 0 read back, which must be consumed to 0. status[t] =
    thread t's failed calls, wrong words and what is left. active == 0: only loads the kernel."""
    BLOCK: tl.constexpr = cco.CoopScope.BLOCK
    bad = 0
    if active != 0:
        if MODE == 0:
            if OP == 0:
                bad += cco.Gda.put(dc, 0, peer, win, DST, win, 0, NBYTES, 0, ADD, coop=COOP, thread_mode=TM,
                                   signal_op=SIG)
            elif OP == 1:
                bad += cco.Gda.put_value(dc, 0, peer, win, DST, word, 0, ADD, coop=COOP, thread_mode=TM, signal_op=SIG)
            elif OP == 2:
                bad += cco.Gda.get(dc, 0, peer, win, 0, win, DST, NBYTES, coop=COOP, thread_mode=TM)
            else:
                bad += cco.Gda.signal(dc, 0, peer, 0, ADD, coop=COOP, signal_op=SIG)
            bad += cco.Gda.flush(dc, 0, coop=BLOCK)
        elif MODE == 1:
            if OP == 0:
                bad += cco.GdaDeferred.put(dc, 0, peer, win, DST, win, 0, NBYTES, 0, ADD, coop=COOP, thread_mode=TM,
                                           signal_op=SIG)
            elif OP == 1:
                bad += cco.GdaDeferred.put_value(dc, 0, peer, win, DST, word, 0, ADD, coop=COOP, thread_mode=TM,
                                                 signal_op=SIG)
            elif OP == 2:
                bad += cco.GdaDeferred.get(dc, 0, peer, win, 0, win, DST, NBYTES, coop=COOP, thread_mode=TM)
            else:
                bad += cco.GdaDeferred.signal(dc, 0, peer, 0, ADD, coop=COOP, signal_op=SIG)
            bad += cco.GdaDeferred.flush(dc, 0, coop=BLOCK)
        else:
            if OP == 0:
                bad += cco.GdaCallerOrdered.put(dc, 0, peer, win, DST, win, 0, NBYTES, 0, ADD, coop=COOP,
                                                thread_mode=TM, signal_op=SIG)
            elif OP == 1:
                bad += cco.GdaCallerOrdered.put_value(dc, 0, peer, win, DST, word, 0, ADD, coop=COOP, thread_mode=TM,
                                                      signal_op=SIG)
            else:
                bad += cco.GdaCallerOrdered.get(dc, 0, peer, win, 0, win, DST, NBYTES, coop=COOP, thread_mode=TM)
            bad += cco.GdaCallerOrdered.flush(dc, 0, coop=BLOCK)
        if LEAST != 0:
            bad += cco.Gda.wait_signal(dc, 0, 0, LEAST, 64, coop=BLOCK)
            if OP == 0:
                bad += (tl.load(mine + DST // 4, volatile=True) != theirs).to(tl.int32)
                last = tl.load(mine + DST // 4 + NBYTES // 4 - 1, volatile=True)
                bad += (last != theirs + NBYTES // 4 - 1).to(tl.int32)
            elif OP == 1:
                landed = tl.load((mine + DST // 4).to(tl.pointer_type(tl.int64)), volatile=True)
                bad += (landed != their_word).to(tl.int32)
        bad += cco.Gda.read_signal(dc, 0, 0, 64).to(tl.int32)
    tl.store(status + tl.arange(0, THREADS), tl.zeros([THREADS], dtype=tl.int32) + bad)


def matrix_cells():
    """(op, coop, thread mode, signal op, doorbell mode): every op with every coop and thread
    mode and signal action on an Immediate handle, and with every signal action on Deferred and
    CallerOrdered handles from a block (CallerOrdered has no signal op; a get signals nothing)."""
    C, T, S = cco.CoopScope, cco.ThreadMode, cco.SignalOp
    groups = [(C.THREAD, T.INDEPENDENT), (C.THREAD, T.AGGREGATE), (C.WARP, T.INDEPENDENT), (C.BLOCK, T.INDEPENDENT)]
    cells = []
    for op in range(4):
        signals = [S.NONE] if op == 2 else [S.INC, S.ADD] if op == 3 else [S.NONE, S.INC, S.ADD]
        for mode in range(3):
            if mode == 2 and op == 3:
                continue
            for coop, tm in groups if mode == 0 else groups[-1:]:
                cells += [(op, coop, tm, sig, mode) for sig in signals]
    return cells


MATRIX_DST = 8192  # where the matrix's puts and gets land, after the source bytes
MATRIX_BYTES = 4096
MATRIX_ADD = 3  # what an ADD signal adds per post


def matrix_constexprs(cell, warps, lanes=32):
    """The constexprs of `cell`'s kernel in a program of `warps` warps of `lanes` threads: what
    the GPU matrix launches and the AOT test compiles. LEAST is the total the peer's posts add
    to signal 0 (every thread posts with coop THREAD, one per warp with WARP, one with BLOCK)."""
    op, coop, tm, sig, mode = cell
    posts = {cco.CoopScope.THREAD: lanes * warps, cco.CoopScope.WARP: warps, cco.CoopScope.BLOCK: 1}
    least = 0 if sig == cco.SignalOp.NONE else posts[coop] * (MATRIX_ADD if sig == cco.SignalOp.ADD else 1)
    return dict(OP=op, COOP=coop, TM=tm, SIG=sig, MODE=mode, ADD=MATRIX_ADD, LEAST=least, DST=MATRIX_DST,
                NBYTES=MATRIX_BYTES, THREADS=lanes * warps)
