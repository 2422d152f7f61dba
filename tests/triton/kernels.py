"""Triton kernels that call the CCO device API, shared by the AOT tests (CPU) and the
GPU tests. `every_function` calls every function of the ABI table once."""

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
    size, world-team rank, world rank of LSA member 0."""
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
every_sdma, EVERY_SDMA_CALLS = _load_family_kernel("sdma")
# The LSA barriers with an order= (coop WARP and BLOCK; compile with one warp).
every_ordered_barrier, EVERY_ORDERED_BARRIER_CALLS = _load_family_kernel(
    "barrier", "every_ordered_barrier", keep=lambda f: "order" in f["axes"] and f["axes"]["coop"] != "thread")
