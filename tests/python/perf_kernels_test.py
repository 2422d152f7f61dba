# SPDX-License-Identifier: MIT
"""The benchmark's Triton kernels (cco_tools.perf.kernels) and the examples' compiled ahead of
time (no GPU) for every target CCO ships: no call survives the link, and the kernels launched
with programmatic dependent launch touch no memory before they wait for the kernel before."""

import importlib.util
import os
import re
import sys

import pytest

triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TARGETS = [GPUTarget("cuda", 90, 32), GPUTarget("cuda", 100, 32), GPUTarget("hip", "gfx942", 64),
           GPUTarget("hip", "gfx950", 64)]


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join("examples", "triton", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels_to_compile():
    from cco_tools.perf.kernels import gda as G
    from cco_tools.perf.kernels import lsa as K
    from cco_tools.perf.kernels import lsa_push as P
    from cco_tools.perf.kernels import sdma as S

    copy_sig = {"win": "u64", "peer": "i32", "src_offset": "u64", "dst_offset": "u64", "n_words": "i64",
                "BLOCK": "constexpr"}
    return [
        ("lsa_copy", load_example("lsa_copy").lsa_copy, {"dev_comm": "u64", "win": "u64", "peer": "constexpr",
                                                         "N": "constexpr"}, {"peer": 1, "N": 256}),
        ("gda_modes", load_example("gda_modes").gda_modes, {"dc": "u64", "win": "u64", "status": "*i32", "peer": "i32",
                                                            "THREADS": "constexpr", "WARPS": "constexpr",
                                                            "CHUNK": "constexpr"},
         {"THREADS": 128, "WARPS": 4, "CHUNK": 4096}),
        ("sdma_put", load_example("sdma_put").sdma_exchange, {"dc": "u64", "win": "u64", "status": "*i32",
                                                              "right": "i32", "left": "i32", "QUEUES": "constexpr",
                                                              "CHUNK": "constexpr"}, {"QUEUES": 2, "CHUNK": 1 << 20}),
        ("sdma_put_pointers", load_example("sdma_put").sdma_exchange,
         {"dc": "u64", "win": "u64", "status": "*i32", "right": "i32", "left": "i32", "QUEUES": "constexpr",
          "CHUNK": "constexpr", "POINTERS": "constexpr"}, {"QUEUES": 2, "CHUNK": 1 << 20, "POINTERS": True}),
        ("gda_pingpong", G.pingpong, {"dc": "u64", "win": "u64", "status": "*i32", "peer": "i32", "rounds": "i32",
                                      "nbytes": "i64", "KIND": "constexpr", "FIRST": "constexpr"},
         {"KIND": 2, "FIRST": True}),
        ("gda_put_flush", G.put_flush, {"dc": "u64", "win": "u64", "status": "*i32", "peer": "i32", "count": "i32",
                                        "src": "i64", "dst": "i64", "nbytes": "i64", "EACH": "constexpr",
                                        "COOP": "constexpr"},
         {"EACH": True, "COOP": 1}),  # a warp's copy
        ("sdma_pingpong", S.pingpong, {"dc": "u64", "win": "u64", "status": "*i32", "peer": "i32", "rounds": "i32",
                                       "nbytes": "i64", "queue": "i32", "FIRST": "constexpr"}, {"FIRST": False}),
        ("sdma_put_quiet", S.put_quiet, {"dc": "u64", "win": "u64", "status": "*i32", "peer": "i32", "count": "i32",
                                         "src": "i64", "dst": "i64", "nbytes": "i64", "queue": "i32",
                                         "slots": "i32", "EACH": "constexpr"}, {"EACH": False}),
        ("lsa_put", K.lsa_put, copy_sig, {"BLOCK": 2048}),
        ("lsa_get", K.lsa_get, copy_sig, {"BLOCK": 2048}),
        ("barrier_loop", K.barrier_loop, {"dc": "u64", "rounds": "i32", "status": "*i32", "COOP": "constexpr",
                                          "ORDER": "constexpr"}, {"COOP": 2, "ORDER": -1}),
        ("barrier_loop_relaxed", K.barrier_loop, {"dc": "u64", "rounds": "i32", "status": "*i32", "COOP": "constexpr",
                                                  "ORDER": "constexpr"}, {"COOP": 2, "ORDER": 0}),
        ("barrier_timeout", K.barrier_timeout, {"dc": "u64", "timeout_ns": "u64", "status": "*i32",
                                                "COOP": "constexpr"}, {"COOP": 2}),
        ("flag_pingpong", K.flag_pingpong, {"my_flag": "*i32", "peer_flag": "*i32", "rounds": "i32",
                                            "failed": "*i32", "FIRST": "constexpr"}, {"FIRST": True}),
        ("oneshot_allreduce", K.oneshot_allreduce, {"dc": "u64", "win": "u64", "out": "*fp32", "n": "i32",
                                                    "iters": "i32", "NRANKS": "constexpr", "BLOCK": "constexpr"},
         {"NRANKS": 4, "BLOCK": 1024}),
        ("twoshot_allreduce", K.twoshot_allreduce, {"dc": "u64", "win": "u64", "out": "*fp32", "n": "i32",
                                                    "result_offset": "i64", "iters": "i32", "NRANKS": "constexpr",
                                                    "BLOCK": "constexpr"},
         {"NRANKS": 4, "BLOCK": 1024}),
        ("push_allreduce", P.push_allreduce, {"dc": "u64", "win": "u64", "out": "*fp32", "n": "i32",
                                              "buffers_offset": "i64", "slot_bytes": "i64", "counters_offset": "i64",
                                              "status_offset": "i64", "NRANKS": "constexpr", "BLOCK": "constexpr"},
         {"NRANKS": 4, "BLOCK": 1024}),
        ("push_prepare", P._prepare, {"dc": "u64", "win": "u64", "buffers_offset": "i64", "buffers_bytes": "i64",
                                      "counters_offset": "i64", "status_offset": "i64", "BLOCK": "constexpr"},
         {"BLOCK": 1024}),
        ("push_ready", P._ready, {"dc": "u64"}, {}),
    ]


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"{t.backend}-{t.arch}")
def test_example_and_perf_kernels_compile_for_every_target(target):
    from cco.ir.triton import cco

    libs = tuple(cco.get_extern_libs(target).items())
    for name, fn, signature, constexprs in kernels_to_compile():
        compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs), target=target,
                                  options={"extern_libs": libs})
        asm = compiled.asm["ptx" if target.backend == "cuda" else "amdgcn"]
        assert not re.search(r"^\s*(call(\.uni)?|s_swappc_b64)\b", asm, re.M), f"{name}: a call survived"


# The PDL kernels and the parameters that are descriptors (dc, win): all a kernel may read
# before its griddepcontrol.wait.
PDL_KERNELS = {"lsa_put": (0,), "lsa_get": (0,), "oneshot_allreduce": (0, 1), "twoshot_allreduce": (0, 1),
               "push_allreduce": (0, 1)}


def memory_touched_before_wait(ptx, descriptor_params):
    """The instructions before griddepcontrol.wait that touch memory other than a descriptor:
    any store, atomic or non-plain load, and any global or generic load whose address is not a
    descriptor parameter plus a constant (followed through cvta, mov and add of an immediate)."""
    descriptors, touching = set(), []
    for line in (raw.strip() for raw in ptx[:ptx.find("griddepcontrol.wait")].splitlines()):
        param = re.match(r"ld\.param\.\w+\s+(%\w+), \[\w+_param_(\d+)\];", line)
        if param:
            if int(param.group(2)) in descriptor_params:
                descriptors.add(param.group(1))
            continue
        moved = re.match(r"(?:cvta\.to\.global\.u64|mov\.b64|mov\.u64|add\.s64)\s+(%\w+), (%\w+)(?:, -?\d+)?;$", line)
        if moved and moved.group(2) in descriptors:
            descriptors.add(moved.group(1))
            continue
        # (a generic load through a descriptor register reads the descriptor too)
        load = re.match(r"(?:@%p\d+\s+)?ld(?:\.global)?(?:\.(?!param|shared|local|const)\w+)*\s+[^\[]*\[\s*(%\w+)\s*"
                        r"(?:\+\s*-?\d+\s*)?\]", line)
        if load:
            if load.group(1) not in descriptors:
                touching.append(line)
            continue
        if re.match(r"(?:@%p\d+\s+)?(?:st\.(?!param)|atom|red|ld\.(?!param))", line):
            touching.append(line)
    return touching


@pytest.mark.parametrize("target", [t for t in TARGETS if t.backend == "cuda"], ids=lambda t: f"cuda-{t.arch}")
def test_pdl_kernels_wait_for_the_kernel_before_touching_memory(target):
    """With PDL=True a kernel may run beside the one before it: it may read only its
    descriptors before griddepcontrol.wait, and it lets the next kernel start."""
    from cco.ir.triton import cco

    libs = tuple(cco.get_extern_libs(target).items())
    checked = []
    for name, fn, signature, constexprs in kernels_to_compile():
        if name not in PDL_KERNELS:
            continue
        compiled = triton.compile(ASTSource(fn=fn, signature=dict(signature, PDL="constexpr"),
                                            constexprs=dict(constexprs, PDL=True)), target=target,
                                  options={"extern_libs": libs, "launch_pdl": True})
        ptx = compiled.asm["ptx"]
        assert "griddepcontrol.wait" in ptx and "griddepcontrol.launch_dependents" in ptx, name
        assert ptx.find("griddepcontrol.launch_dependents") > ptx.find("griddepcontrol.wait"), name
        touching = memory_touched_before_wait(ptx, PDL_KERNELS[name])
        assert not touching, f"{name}: {touching}"
        checked.append(name)
    assert sorted(checked) == sorted(PDL_KERNELS)


@pytest.mark.parametrize("hip, capability", [(None, (8, 0)), ("6.2", (9, 4))], ids=["sm_80", "rocm"])
def test_pdl_is_refused_where_the_gpu_cannot_do_it(monkeypatch, hip, capability):
    """pdl=True on a GPU without programmatic dependent launch: a clear error when the
    all-reduce is built, before it touches the GPU (here a stand-in torch says what GPU)."""
    import types

    from cco_tools.perf.kernels import lsa as K
    from cco_tools.perf.kernels import lsa_push as P

    fake = types.ModuleType("torch")
    fake.version = types.SimpleNamespace(hip=hip)
    fake.cuda = types.SimpleNamespace(get_device_capability=lambda device=None: capability)
    monkeypatch.setitem(sys.modules, "torch", fake)
    text = "compute capability 9.0" if hip is None else "not ROCm's"
    for make in (K.OneShotAllReduce, K.TwoShotAllReduce, P.PushAllReduce):
        with pytest.raises(ValueError, match=text):
            make(types.SimpleNamespace(ptr=0), types.SimpleNamespace(size=1 << 30, handle=0), None, 1024, 2, 1, (),
                 pdl=True)


def test_the_pdl_check_sees_a_data_load_before_the_wait():
    """The check above catches a plain load of data (not a descriptor) moved before the wait."""
    ptx = """
        ld.param.b64 %rd13, [k_param_0];
        ld.param.b64 %rd14, [k_param_1];
        cvta.to.global.u64 %rd3, %rd14;
        ld.global.b64 %rd15, [%rd3+8];
        add.s64 %rd18, %rd15, 256;
        ld.global.b32 %r21, [%rd18];
        ld.global.b32 { %r22 }, [ %rd3 + 4 ];
        griddepcontrol.wait;
    """
    assert memory_touched_before_wait(ptx, (0, 1)) == ["ld.global.b32 %r21, [%rd18];"]
    assert memory_touched_before_wait(ptx.replace("ld.global.b32 %r21, [%rd18];", ""), (0, 1)) == []
    assert memory_touched_before_wait(ptx, (0,)) == ["ld.global.b64 %rd15, [%rd3+8];", "ld.global.b32 %r21, [%rd18];",
                                                      "ld.global.b32 { %r22 }, [ %rd3 + 4 ];"]
