"""`cco perf` on the cpu platform, CCO's launcher, and the example and perf kernels
compiled ahead of time (no GPU) for every target CCO ships."""

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

ENV = dict(os.environ, CCO_PLATFORM="cpu", CCO_TIMEOUT_MS="20000")


def run_cco(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "cco.cli", *args], env=ENV, capture_output=True, text=True,
                          timeout=timeout)


def test_perf_on_the_cpu_platform_with_two_ranks():
    r = run_cco("perf", "--ranks", "2", "--quick", "--host-ranks", "2", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    suites = {s["suite"].split(" (")[0].split(",")[0]: s for s in report["suites"]}
    barrier = suites["host barrier"]["rows"][0]
    assert barrier["ranks"] == 2 and 0 < barrier["us/barrier"] < 1e5
    put = suites["put through peer pointers"]["rows"]
    assert [row["size"] for row in put][:3] == ["4KiB", "16KiB", "64KiB"]
    assert all(row["put GB/s"] > 0 and row["memmove GB/s"] > 0 for row in put)
    host = {row["step"]: row for row in suites["host control plane"]["rows"]}
    assert host["ccoCommCreate (first)"]["max ms"] > 0 and "ccoWindowRegister 64MiB" in host


def test_a_live_report_prints_each_row_as_it_is_appended():
    import io

    from cco.cli.report import Report

    out = io.StringIO()
    report = Report("cco perf: test", live=out)
    rows = report.suite("sizes", ["size", "GB/s"], note="a note")
    assert out.getvalue() == "cco perf: test\n\n# sizes  (a note)\n" + "size".ljust(24) + "  " + "GB/s".rjust(12) + "\n"
    rows.append(["a label longer than the label column", 1.5])
    assert out.getvalue().endswith("\na label longer than the label column  " + "1.500".rjust(12) + "\n")
    # The whole table printed afterwards is the same text, line for line.
    whole = io.StringIO()
    report.print_table(whole)
    assert whole.getvalue() == out.getvalue()
    # A report that another process wrote, made live afterwards, prints only what comes next.
    later = Report.from_dict(json.loads(report.to_json()))
    later.go_live(out)
    before = out.getvalue()
    later.suite("next", ["step", "ms"]).append(["x", 2.0])
    assert out.getvalue()[len(before):] == "\n# next\n" + "step".ljust(24) + "  " + "ms".rjust(12) + "\n" + \
        "x".ljust(24) + "  " + "2.000".rjust(12) + "\n"
    assert [s["rows"] for s in later.suites][0] == [["a label longer than the label column", 1.5]]


def test_perf_table_and_bad_suite():
    r = run_cco("perf", "--quick", "--suites", "barrier")
    assert r.returncode == 0 and "# host barrier (ccoBarrierAll)" in r.stdout, r.stderr
    r = run_cco("perf", "--suites", "warp-drive")
    assert r.returncode == 2 and "unknown suite" in r.stderr


def test_info_lists_every_target():
    r = run_cco("info", "--json")
    assert r.returncode == 0, r.stderr
    facts = json.loads(r.stdout)
    assert facts["host_abi_version"] == facts["abi_version"]
    assert set(facts["targets"]) >= {"nvptx-sm_90-proxy", "amdgcn-gfx942-proxy-cov5"}
    assert facts["gda_network"].startswith(("tcp", "verbs"))


def doctor(**env):
    r = subprocess.run([sys.executable, "-m", "cco.cli", "doctor", "--json"], env=dict(ENV, **env),
                       capture_output=True, text=True, timeout=120)
    return r.returncode, {f["check"]: f for f in json.loads(r.stdout)}, r.stderr


def test_doctor_passes_a_working_machine():
    code, found, err = doctor()
    assert code == 0, (found, err)
    assert found["host library"]["status"] == "ok"
    assert found["one-rank job"]["status"] == "ok" and "platform cpu" in found["one-rank job"]["found"]
    assert found["bitcode"]["status"] == "skip"  # no GPU here


def test_doctor_names_what_is_wrong():
    code, found, _ = doctor(CCO_PLATFORM="bogus", CCO_DEVICE_BC="/no/such.bc", CCO_TIMEOUTMS="5")
    assert code == 1
    assert found["one-rank job"]["status"] == "FAIL" and "CCO_PLATFORM=bogus" in found["one-rank job"]["found"]
    assert found["bitcode"]["status"] == "FAIL" and "/no/such.bc does not exist" in found["bitcode"]["found"]
    env = found["environment"]
    assert env["status"] == "warn" and "CCO_TIMEOUTMS (did you mean CCO_TIMEOUT_MS?)" in env["found"]
    # A bitcode of another ABI version is refused too (a file that is not CCO's at all here).
    code, found, _ = doctor(CCO_DEVICE_BC=sys.executable)
    assert code == 1 and "is not a CCO device bitcode" in found["bitcode"]["found"]


def test_info_names_the_network_backend(tmp_path):
    from cco.cli.info import network_backend

    os.environ.pop("CCO_NET", None)
    os.environ.pop("MORI_NET", None)
    assert network_backend(str(tmp_path / "absent")) == "tcp (no RDMA device here)"
    (tmp_path / "mlx5_0").mkdir()
    assert "RDMA devices here: mlx5_0" in network_backend(str(tmp_path))
    os.environ["MORI_NET"] = "tcp"
    try:
        assert network_backend(str(tmp_path)) == "tcp (CCO_NET=tcp)"
        os.environ["MORI_NET"] = "verbs"
        assert "none: GDA across hosts will fail" in network_backend(str(tmp_path / "absent"))
        os.environ["MORI_NET"] = "ib"
        assert "invalid" in network_backend(str(tmp_path))
    finally:
        os.environ.pop("MORI_NET")


def test_launcher_runs_ranks_and_reports_failure(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        from cco import Communicator
        rank, world = int(os.environ["CCO_RANK"]), int(os.environ["CCO_WORLD_SIZE"])
        uid = bytes.fromhex(os.environ["CCO_UNIQUE_ID"])
        with Communicator.init(world, rank, uid, per_rank_vmm=1 << 24) as comm:
            comm.barrier()
            print(f"rank {comm.rank} of {comm.world_size}")
        sys.exit(int(os.environ.get("FAIL_RANK", "-1")) == rank)
    """))
    r = subprocess.run([sys.executable, "-m", "cco.launch", "-n", "3", str(script)], env=ENV, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(re.findall(r"rank (\d) of 3", r.stdout)) == ["0", "1", "2"]
    r = subprocess.run([sys.executable, "-m", "cco.launch", "-n", "2", str(script)],
                       env=dict(ENV, FAIL_RANK="1"), capture_output=True, text=True, timeout=120)
    assert r.returncode == 1


def test_launch_stops_the_others_when_a_later_rank_fails(tmp_path):
    """Rank 1 fails at once while rank 0 would run for a minute: the launcher stops rank 0
    and returns rank 1's status within seconds (it polled only up to the first running rank,
    so it waited for rank 0)."""
    script = tmp_path / "late_failure.py"
    script.write_text("import os, sys, time\n"
                      "if os.environ['CCO_RANK'] == '1':\n    sys.exit(3)\n"
                      "time.sleep(60)\n")
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "cco.launch", "-n", "2", str(script)], env=ENV, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert time.monotonic() - start < 20



def perf_suites(report):
    return {s["suite"].split(" (")[0].split(",")[0]: s for s in report["suites"]}


def test_perf_starts_one_process_per_rank():
    r = run_cco("perf", "--launch", "processes", "-n", "3", "--quick", "--suites", "barrier,put,host",
                "--host-ranks", "2", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)  # one document: rank 0's, merged with the host suite run here
    assert "3 ranks as launched processes" in report["header"]
    suites = perf_suites(report)
    assert suites["host barrier"]["rows"][0]["ranks"] == 3
    assert all(row["put GB/s"] > 0 for row in suites["put through peer pointers"]["rows"])
    assert "ccoCommCreate (first)" in {row["step"] for row in suites["host control plane"]["rows"]}


def test_perf_joins_an_external_launcher():
    r = subprocess.run([sys.executable, "-m", "cco.launch", "-n", "2", "-m", "cco.cli", "perf", "--quick", "--json"],
                       env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)  # only rank 0 prints
    assert "2 ranks as launched processes" in report["header"]
    assert set(perf_suites(report)) == {"host barrier", "put through peer pointers"}
    assert "the host suite runs only when cco perf starts the ranks itself" in r.stderr


def test_launched_ranks_agree_on_the_slowest_figure(tmp_path):
    script = tmp_path / "slowest.py"
    script.write_text(textwrap.dedent("""
        from cco import runtime
        from cco.cli.perf_cpu import CpuRank
        from cco.cli.ranks import Ranks
        rank, world, uid = runtime.launched()
        group = Ranks(world, lambda r, u: CpuRank(r, world, u, 1 << 16), (rank, uid))
        first = group.slowest(1.5 * rank)
        second = group.slowest(10.0 - rank)  # a new round: nobody reads the old values
        assert (first, second) == (1.5 * (world - 1), 10.0), (rank, first, second)
        assert list(group.local) == [rank]
        group.close()
        print("agreed", rank)
    """))
    r = subprocess.run([sys.executable, "-m", "cco.launch", "-n", "3", str(script)], env=ENV, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(re.findall(r"agreed (\d)", r.stdout)) == ["0", "1", "2"]



def test_perf_worlds_of_one_rank():
    r = run_cco("perf", "--launch", "processes", "-n", "1", "--quick", "--suites", "barrier", "--json")
    assert r.returncode == 0, r.stderr  # one process per rank, and at least two ranks
    assert "2 ranks as launched processes" in json.loads(r.stdout)["header"]
    r = subprocess.run([sys.executable, "-m", "cco.launch", "-n", "1", "-m", "cco.cli", "perf", "--quick"],
                       env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "the launcher started 1 rank; the suites need 2 or more" in r.stderr


def test_perf_min_size_above_the_quick_cap():
    r = run_cco("perf", "--quick", "--suites", "put", "--min-size", "4M", "--json")
    assert r.returncode == 0, r.stderr
    assert [row["size"] for row in perf_suites(json.loads(r.stdout))["put through peer pointers"]["rows"]] == ["1MiB"]


def test_a_failing_launched_rank_frees_the_others(tmp_path):
    # Rank 1 fails inside its group: it aborts and leaves, and rank 0's next host barrier
    # names it at once instead of waiting out CCO_TIMEOUT_MS.
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from cco import runtime
        from cco.cli.perf_cpu import CpuRank
        from cco.cli.ranks import Ranks
        rank, world, uid = runtime.launched()
        try:
            with Ranks(world, lambda r, u: CpuRank(r, world, u, 1 << 16), (rank, uid)) as group:
                group.slowest(1.0)
                if rank == 1:
                    raise RuntimeError("rank 1 gives up")
                t0 = time.monotonic()
                try:
                    group.slowest(2.0)
                except Exception as e:
                    print(f"rank 0 heard: {e} after {time.monotonic() - t0:.1f}s", flush=True)
                    raise
        except Exception:
            if rank == 1:
                time.sleep(5)  # its communicator is gone already; rank 0 speaks first
            sys.exit(3)
    """))
    r = subprocess.run([sys.executable, "-m", "cco.launch", "-n", "2", str(script)],
                       env=dict(ENV, CCO_TIMEOUT_MS="60000"), capture_output=True, text=True, timeout=50)
    assert r.returncode == 3, r.stderr
    # Rank 1 tore down locally (no collective teardown that rank 0 would mistake for a
    # mismatched call): rank 0 learns that it left.
    assert re.search(r"rank 0 heard: .*rank 1 left", r.stdout), r.stdout + r.stderr


def test_report_survives_json():
    from cco.cli.report import Report

    report = Report("header")
    report.suite("a", ["size", "GB/s"], note="n").extend([["4KiB", 1.5], ["8KiB", 2.5]])
    report.suite("empty", ["x"])
    again = Report.from_dict(json.loads(report.to_json()))
    assert again.to_json() == report.to_json()


# --- ahead-of-time compilation of the kernels (no GPU) --------------------------------
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
    from cco.kernels import gda as G
    from cco.kernels import lsa as K
    from cco.kernels import lsa_push as P
    from cco.kernels import sdma as S

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
                                         "EACH": "constexpr"}, {"EACH": False}),
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

    from cco.kernels import lsa as K
    from cco.kernels import lsa_push as P

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


def test_perf_plots_every_sweep_with_its_anchors(tmp_path):
    """`cco perf --plot`: the figure is written; plot() draws one panel per sweep and unit,
    every figure column (CCO's and its anchors'), never ratios or suites without sizes."""
    out = tmp_path / "perf.png"
    r = run_cco("perf", "--quick", "--suites", "put", "--plot", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000

    from cco.cli.plot import _sweeps, plot
    from cco.cli.report import Report

    report = Report("synthetic")
    report.suite("bandwidth", ["size", "put GB/s", "memcpy GB/s", "put/memcpy %"]).extend(
        [["4KiB", 1.0, 2.0, 50.0], ["1MiB", 3.0, 4.0, 75.0]])
    report.suite("latency", ["size", "put+flush us", "put GB/s"]).extend([["4KiB", 20.0, 0.2], ["16KiB", 21.0, 0.8]])
    report.suite("round trip", ["payload", "cco us/rt"]).extend([["signal only", 17.0]])
    drawn = [(s["suite"], unit, sorted(series)) for s, unit, _, series in _sweeps(report)]
    assert drawn == [("bandwidth", "GB/s", ["memcpy GB/s", "put GB/s"]), ("latency", "us", ["put+flush us"]),
                     ("latency", "GB/s", ["put GB/s"])]
    assert plot(report, str(tmp_path / "synthetic.png")) == ["bandwidth [GB/s]", "latency [us]", "latency [GB/s]"]


def test_perf_tcp_suite_measures_the_backend_beside_its_anchors():
    """`cco perf --suites tcp`: two processes as two hosts over loopback, the GDA round trips
    and put bandwidth through the tcp backend beside a bare TCP ping-pong and stream and the
    local backend's round trip, all measured in this run."""
    r = run_cco("perf", "--platform", "cpu", "--quick", "--suites", "tcp", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    suites = {s["suite"].split(" (")[0]: s for s in json.loads(r.stdout)["suites"]}
    trips = suites["GDA over tcp round trip"]["rows"]
    assert [row["payload"] for row in trips] == ["put+signal 8B", "signal"]
    for row in trips:
        assert row["tcp us/rt"] > 0 and row["bare tcp us/rt"] > 0 and row["local us/rt"] > 0
        assert row["target us/rt"] == row["bare tcp us/rt"] + row["local us/rt"]
    bandwidth = suites["GDA over tcp put bandwidth"]["rows"]
    assert [row["size"] for row in bandwidth][0] == "4KiB" and all(row["tcp GB/s"] > 0 for row in bandwidth)
