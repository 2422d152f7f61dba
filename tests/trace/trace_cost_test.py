# SPDX-License-Identifier: MIT
"""What the device-side trace costs where it is off, against the same code built without it
(-DCCO_DEVICE_TRACE=0):

  - executed instructions on the host arch, counted exactly by callgrind inside one workload
    (trace_cost_probe.cc: three ring posts, a wait, a kernel's range per iteration), at two
    iteration counts so that fixed costs cancel: the trace points, off, must add only the
    tests of the field per call (a bound per trace point below), and, on, record every call;
  - the code llc makes of the shipped bitcode for nvptx (sm_90) and amdgcn (gfx942): still no
    call and no local memory (every trace point inlined), the trace field read where a call
    begins, nothing of the trace left in the build without it, and how much larger each function
    is (the table is written to TEST_UNDECLARED_OUTPUTS_DIR/trace_cost.json).

What this cannot say is the time on a GPU: tests/gpu/test_trace_gpu.py measures that where one
is lent."""

import json
import os
import re
import shutil
import subprocess

import pytest

TRACE_POINTS_PER_ITERATION = 6  # put, put_value, signal, wait_signal, ccoTraceClock, ccoTraceRange
# Instructions a trace point may add, off, on x86-64: a test and a branch, and what the
# compiler's register choices move around them.
OFF_BOUND_PER_POINT = 8
# Functions whose size the table shows (and whose trace points the checks look at).
SHOWN = ["cco_gda_put__it__none", "cco_gda_put__ib__inc", "cco_gda_put__at__none", "cco_gda_signal__thread__inc",
         "cco_gda_wait_signal__block", "cco_gda_flush__thread", "cco_gda_barrier_sync__block", "cco_sdma_put__thread",
         "cco_sdma_quiet__block", "cco_lsa_barrier_sync__block", "cco_trace_clock", "cco_trace_range__block",
         "cco_lsa_ptr"]
TIMER = {"nvptx": "%globaltimer", "amdgcn": "s_memrealtime"}


def function_bodies(asm, target):
    """{name: body} of every exported cco_* function in llc's assembly."""
    if target == "nvptx":
        pattern = r"\.func\s+(?:\([^)]*\)\s*)?(cco_\w+)\((.*?)^}"
    else:
        pattern = r"^(cco_\w+):[^\n]*\n(.*?)^\.Lfunc_end\d+:"
    return {m.group(1): m.group(2) for m in re.finditer(pattern, asm, re.S | re.M)}


def instructions(body, target):
    comment = r"//.*" if target == "nvptx" else r";.*"
    lines = []
    for line in body.splitlines():
        line = re.sub(comment, "", line).strip()
        if line and not line.startswith(".") and not line.endswith(":") and line not in ("{", "}"):
            lines.append(line)
    return lines


@pytest.fixture(scope="module")
def asm(request):
    out = {}
    for spec in request.config.getoption("asm"):
        target, which, path = spec.split(":", 2)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        out[(target, which)] = {name: instructions(body, target)
                                for name, body in function_bodies(text, target).items()}
    assert {t for t, _ in out} == {"nvptx", "amdgcn"}
    return out


def targets(asm):
    return sorted({t for t, _ in asm})


def test_both_builds_have_every_function(asm):
    for target in targets(asm):
        traced, untraced = asm[(target, "traced")], asm[(target, "untraced")]
        assert len(traced) > 200 and set(traced) == set(untraced), target
        assert {"cco_trace_clock", "cco_trace_range__block"} <= set(traced)


def test_every_trace_point_is_inlined(asm):
    # A lambda or a trace point left as a call would keep the handle in local memory on nvptx and
    # leave calls in consumers that do not inline (FlyDSL).
    call = {"nvptx": re.compile(r"^call(\.uni)?\b"), "amdgcn": re.compile(r"^s_swappc_b64\b")}
    for (target, which), functions in asm.items():
        for name, body in functions.items():
            calls = [i for i in body if call[target].search(i)]
            assert not calls, f"{target} {which} {name}: {calls[:2]}"
            assert not any("__local_depot" in i for i in body), f"{target} {which} {name} uses local memory"


def test_the_build_without_it_has_no_trace_points(asm):
    for target in targets(asm):
        untraced, traced = asm[(target, "untraced")], asm[(target, "traced")]
        for name in ("cco_trace_clock", "cco_trace_range__block"):
            assert not any(TIMER[target] in i for i in untraced[name]), (target, name)
            assert len(untraced[name]) <= 12, (target, name, untraced[name])
        assert any(TIMER[target] in i for i in traced["cco_trace_clock"]), target


def test_traced_calls_read_the_field_once(asm):
    # ccoDevComm.trace is at byte 304 (abi/devcomm.h): a GDA handle reads it with the rest of the
    # device communicator, once, when the call makes its handle.
    functions = asm[("nvptx", "traced")]
    for name in ("cco_gda_put__it__none", "cco_gda_signal__thread__inc", "cco_gda_wait_signal__block",
                 "cco_sdma_put__thread", "cco_trace_clock"):
        reads = [i for i in functions[name] if re.match(r"ld\.", i) and "+304]" in i]
        assert len(reads) == 1, (name, reads)
    for name in ("cco_gda_put__it__none", "cco_lsa_ptr"):
        assert not any("+304]" in i for i in asm[("nvptx", "untraced")][name]), name


def test_code_size_table(asm):
    table = {}
    for target in targets(asm):
        traced, untraced = asm[(target, "traced")], asm[(target, "untraced")]
        total = (sum(map(len, traced.values())), sum(map(len, untraced.values())))
        table[target] = {"all functions": total,
                         **{name: (len(traced[name]), len(untraced[name])) for name in SHOWN}}
        # Functions without a trace point are the same code.
        assert len(traced["cco_lsa_ptr"]) == len(untraced["cco_lsa_ptr"])
        assert total[0] < 2 * total[1], (target, total)  # the posts' code is there twice, no more
    lines = [f"{'function':34s} " + " ".join(f"{t + ' traced':>14s} {t + ' without':>14s}" for t in table)]
    for name in ["all functions"] + SHOWN:
        lines.append(f"{name:34s} " + " ".join(f"{table[t][name][0]:14d} {table[t][name][1]:14d}" for t in table))
    print("\n".join(lines))
    folder = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
    if folder:
        with open(os.path.join(folder, "trace_cost.json"), "w", encoding="utf-8") as f:
            json.dump({"llc_instructions": table}, f, indent=1)


def _collected(probe, iterations, mode):
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                        "--toggle-collect=cco_trace_cost_workload", probe, str(iterations), mode],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["failed"] == 0
    counted = re.search(r"Collected : (\d+)", r.stderr)
    assert counted, r.stderr
    return int(counted.group(1)), report


def _per_iteration(probe, mode):
    small, _ = _collected(probe, 200, mode)
    large, report = _collected(probe, 1200, mode)
    return (large - small) / 1000, report


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind (callgrind) is not installed")
def test_executed_instructions_when_off(request):
    traced, untraced = request.config.getoption("probe"), request.config.getoption("probe_untraced")
    off, report = _per_iteration(traced, "off")
    assert report["compiled"] and report["recorded"] == 0
    without, report = _per_iteration(untraced, "off")
    assert not report["compiled"]
    on, report = _per_iteration(traced, "on")
    assert report["recorded"] == 5 * 1200  # three posts, the wait, the range: every call
    added = off - without
    print(f"instructions per iteration: without trace points {without:.1f}, compiled in and off {off:.1f} "
          f"(+{added:.1f}: {added / TRACE_POINTS_PER_ITERATION:.1f} per trace point), on {on:.1f}")
    assert added <= OFF_BOUND_PER_POINT * TRACE_POINTS_PER_ITERATION
    folder = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
    if folder:
        with open(os.path.join(folder, "trace_cost_host.json"), "w", encoding="utf-8") as f:
            json.dump({"per_iteration": {"without": without, "off": off, "on": on},
                       "trace_points_per_iteration": TRACE_POINTS_PER_ITERATION}, f, indent=1)
