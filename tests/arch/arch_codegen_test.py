# SPDX-License-Identifier: MIT
"""The code each target generates for the arch layer (tests/arch/arch_probe.cc).

Every (operation, order, scope, width) probe function is found by name in the assembly
llc emitted for each arch, and its body must hold the instructions that operation needs
there: the PTX memory-model instruction on nvptx (assembled by ptxas when available), the
cache controls of the AMDGPU memory model on gfx942 / gfx950.
"""

import itertools
import os
import re
import shutil
import subprocess

import pytest

SCOPES = ["block", "device", "system"]
RMW_ORDERS = ["relaxed", "acquire", "release", "acq_rel"]
RMW_OPS = ["fetch_add", "exchange", "fetch_max", "compare_exchange"]
WIDTHS = ["u32", "u64"]


def _probes(config):
    out = []
    for spec in config.getoption("probe"):
        target, arch, path = spec.split(":", 2)
        out.append((target, arch, path))
    return out


def pytest_generate_tests(metafunc):
    probes = _probes(metafunc.config)
    if "probe" in metafunc.fixturenames:
        metafunc.parametrize("probe", probes, ids=[f"{t}-{a}" for t, a, _ in probes])
    if "nvptx_probe" in metafunc.fixturenames:
        nv = [p for p in probes if p[0] == "nvptx"]
        metafunc.parametrize("nvptx_probe", nv, ids=[a for _, a, _ in nv])


def function_bodies(asm, target):
    """{name: body text} for every probe_* function in the assembly."""
    bodies = {}
    if target == "nvptx":
        # .visible .func (...) probe_x(...)  { ... }
        for m in re.finditer(r"\.func\s+(?:\([^)]*\)\s*)?(probe_\w+)\((.*?)^}", asm, re.S | re.M):
            bodies[m.group(1)] = m.group(2)
    else:
        for m in re.finditer(r"^(probe_\w+):(.*?)s_setpc_b64", asm, re.S | re.M):
            bodies[m.group(1)] = m.group(2)
    return bodies


def instructions(body, target):
    """Instruction lines only (comments and directives dropped). PTX comments start with
    '//' (';' ends an instruction there); AMDGCN comments with ';'."""
    comment = r"//.*" if target == "nvptx" else r";.*"
    lines = []
    for line in body.splitlines():
        line = re.sub(comment, "", line).strip()
        if line and not line.startswith(".") and not line.endswith(":"):
            lines.append(line)
    return "\n".join(lines)


@pytest.fixture
def bodies(probe):
    target, _, path = probe
    with open(path, encoding="utf-8") as f:
        found = function_bodies(f.read(), target)
    assert len(found) >= 137, f"{path}: only {len(found)} probe functions found"
    return {name: instructions(body, target) for name, body in found.items()}


# --- nvptx ------------------------------------------------------------------------------
PTX_SCOPE = {"block": "cta", "device": "gpu", "system": "sys"}
PTX_RMW = {"fetch_add": "add.u", "exchange": "exch.b", "fetch_max": "max.u", "compare_exchange": "cas.b"}


def nvptx_expectations():
    bits = {"u32": "32", "u64": "64"}
    for order, scope, w in itertools.product(["relaxed", "acquire"], SCOPES, WIDTHS):
        yield f"probe_load_{order}_{scope}_{w}", rf"\bld\.{order}\.{PTX_SCOPE[scope]}\.u{bits[w]}\b"
    for order, scope, w in itertools.product(["relaxed", "release"], SCOPES, WIDTHS):
        yield f"probe_store_{order}_{scope}_{w}", rf"\bst\.{order}\.{PTX_SCOPE[scope]}\.u{bits[w]}\b"
    for op, order, scope, w in itertools.product(RMW_OPS, RMW_ORDERS, SCOPES, WIDTHS):
        yield (f"probe_{op}_{order}_{scope}_{w}",
               rf"\batom\.{order}\.{PTX_SCOPE[scope]}\.{re.escape(PTX_RMW[op])}{bits[w]}\b")
    for order, scope, w in itertools.product(["relaxed", "release"], SCOPES, WIDTHS):
        yield f"probe_add_{order}_{scope}_{w}", rf"\bred\.{order}\.{PTX_SCOPE[scope]}\.add\.u{bits[w]}\b"
    for scope in SCOPES:
        yield f"probe_fence_{scope}", rf"\bfence\.acq_rel\.{PTX_SCOPE[scope]};"
    yield "probe_lane_id", r"%laneid"
    yield "probe_thread_id", r"%tid\.x"
    yield "probe_block_size", r"%ntid\.x"
    yield "probe_block_id", r"%ctaid\.x"
    yield "probe_grid_size", r"%nctaid\.x"
    yield "probe_active_mask", r"\bactivemask\.b32\b"
    yield "probe_ballot", r"\bvote\.sync\.ballot\.b32\b"
    yield "probe_warp_sync", r"\bbar\.warp\.sync\b"
    yield "probe_warp_sync_all", r"\bbar\.warp\.sync -1;"
    yield "probe_block_sync", r"\bbarrier\.sync 0;"
    yield "probe_block_sync_or", r"\bbarrier\.red\.or\.pred\b"
    yield "probe_nanosleep", r"\bnanosleep\.u32\b"
    yield "probe_cycles", r"%clock64"
    yield "probe_timer_ns", r"%globaltimer"


# --- amdgcn (gfx94x/gfx950 memory model, AMDGPUUsage "Memory Model GFX942") ----------------
AMD_SCOPE_BITS = {"block": "sc0", "device": "sc1", "system": "sc0 sc1"}


def _amd_release(scope):
    """Write-back before a release: L2 for the device, everything for the system."""
    return {"block": None, "device": r"buffer_wbl2 sc1$", "system": r"buffer_wbl2 sc0 sc1$"}[scope]


def _amd_acquire(scope):
    return {"block": None, "device": r"buffer_inv sc1$", "system": r"buffer_inv sc0 sc1$"}[scope]


def amdgcn_expectations():
    """(function, required patterns, forbidden patterns)."""
    for order, scope, w in itertools.product(["relaxed", "acquire"], SCOPES, WIDTHS):
        need = [rf"^flat_load_dword\w* .* {AMD_SCOPE_BITS[scope]}$"]
        if order == "acquire" and _amd_acquire(scope):
            need.append(_amd_acquire(scope))
        forbid = [r"buffer_inv"] if order == "relaxed" or scope == "block" else []
        yield f"probe_load_{order}_{scope}_{w}", need, forbid
    for order, scope, w in itertools.product(["relaxed", "release"], SCOPES, WIDTHS):
        need = [rf"^flat_store_dword\w* .* {AMD_SCOPE_BITS[scope]}$"]
        if order == "release" and _amd_release(scope):
            need.append(_amd_release(scope))
        forbid = [r"buffer_wbl2"] if order == "relaxed" or scope == "block" else []
        yield f"probe_store_{order}_{scope}_{w}", need, forbid
    amd_op = {"fetch_add": "add", "exchange": "swap", "fetch_max": "umax", "compare_exchange": "cmpswap"}
    for op, order, scope, w in itertools.product(RMW_OPS, RMW_ORDERS, SCOPES, WIDTHS):
        suffix = "_x2" if w == "u64" else ""
        # System scope marks the atomic itself (sc1); device and block scope do not.
        sys_bit = r" sc0 sc1$" if scope == "system" else r" sc0$"
        inst = amd_op[op]
        if op == "fetch_max" and scope == "system":
            # LLVM expands system-scope max to a compare-and-swap loop: the atomic max of
            # the memory side may not reach fine-grained (host / peer) memory.
            inst = "(umax|cmpswap)"
        need = [rf"^flat_atomic_{inst}{suffix} .*{sys_bit}"]
        forbid = []
        releases = order in ("release", "acq_rel")
        acquires = order in ("acquire", "acq_rel")
        if releases and _amd_release(scope):
            need.append(_amd_release(scope))
        else:
            forbid.append(r"buffer_wbl2")
        if acquires and _amd_acquire(scope):
            need.append(_amd_acquire(scope))
        else:
            forbid.append(r"buffer_inv")
        yield f"probe_{op}_{order}_{scope}_{w}", need, forbid
    yield "probe_fence_block", [], [r"buffer_wbl2", r"buffer_inv"]
    yield "probe_fence_device", [r"buffer_wbl2 sc1$", r"buffer_inv sc1$"], []
    yield "probe_fence_system", [r"buffer_wbl2 sc0 sc1$", r"buffer_inv sc0 sc1$"], []
    yield "probe_lane_id", [r"v_mbcnt_lo_u32_b32", r"v_mbcnt_hi_u32_b32"], []
    yield "probe_warp_size", [r"v_mov_b32\w* v0, 64$"], []
    yield "probe_block_sync", [r"^s_barrier$"], []
    yield "probe_block_sync_or", [r"^s_barrier$"], []
    for order, scope, w in itertools.product(["relaxed", "release"], SCOPES, WIDTHS):
        # No old value: the no-return form of the atomic.
        suffix = "_x2" if w == "u64" else ""
        need = [rf"^flat_atomic_add{suffix} v\[\d+:\d+\], v"]
        if order == "release" and _amd_release(scope):
            need.append(_amd_release(scope))
        yield f"probe_add_{order}_{scope}_{w}", need, [r"buffer_inv"]
    yield "probe_nanosleep", [r"s_sleep 1$", r"s_memrealtime"], []
    yield "probe_timer_ns", [r"s_memrealtime"], []
    yield "probe_cycles", [r"s_memtime"], []
    yield "probe_active_mask", [r"exec"], []


def test_probe_instructions(probe, bodies):
    target, arch, _ = probe
    failures = []
    if target == "nvptx":
        for name, pattern in nvptx_expectations():
            if name not in bodies:
                failures.append(f"{name}: missing")
            elif not re.search(pattern, bodies[name], re.M):
                failures.append(f"{name}: no /{pattern}/ in:\n{bodies[name]}")
    else:
        for name, need, forbid in amdgcn_expectations():
            if name not in bodies:
                failures.append(f"{name}: missing")
                continue
            for pattern in need:
                if not re.search(pattern, bodies[name], re.M):
                    failures.append(f"{name}: no /{pattern}/ in:\n{bodies[name]}")
            for pattern in forbid:
                if re.search(pattern, bodies[name], re.M):
                    failures.append(f"{name}: unexpected /{pattern}/ in:\n{bodies[name]}")
    assert not failures, f"{arch}: " + "\n".join(failures[:10])


def _ptxas():
    try:
        import triton  # the PTX assembler Triton ships
    except ImportError:
        return shutil.which("ptxas")
    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    return path if os.path.exists(path) else shutil.which("ptxas")


def test_ptx_assembles(nvptx_probe, tmp_path):
    """ptxas accepts every instruction (llc passes inline PTX through unchecked)."""
    _, arch, path = nvptx_probe
    ptxas = _ptxas()
    assert ptxas, "no ptxas: install triton (tools/setup) or the CUDA toolkit"
    result = subprocess.run([ptxas, f"-arch={arch}", "-c", path, "-o", str(tmp_path / "probe.o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
