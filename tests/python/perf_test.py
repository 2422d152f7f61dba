# SPDX-License-Identifier: MIT
"""`cco perf` (cco_tools.perf) on the cpu platform: its tables and JSON, ranks as threads, as
its own processes and under a launcher, the plot, the targets, and every suite module (the GPU
ones imported and their options parsed: no GPU here)."""

import importlib
import inspect
import io
import json
import os
import re
import subprocess
import sys
import types

import pytest

ENV = dict(os.environ, CCO_PLATFORM="cpu", CCO_TIMEOUT_MS="20000")


def run_cco(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "cco_tools", *args], env=ENV, capture_output=True, text=True,
                          timeout=timeout)


def launch(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "cco_tools", "launch", *args], env=ENV, capture_output=True,
                          text=True, timeout=timeout)


def perf_suites(report):
    return {s["suite"].split(" (")[0].split(",")[0]: s for s in report["suites"]}


def test_perf_on_the_cpu_platform_with_two_ranks():
    r = run_cco("perf", "--ranks", "2", "--quick", "--host-ranks", "2", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["schema"] == 1 and report["meta"]["trials"] == 3
    suites = perf_suites(report)
    barrier = suites["host barrier"]["rows"][0]
    assert barrier["ranks"] == 2 and 0 < barrier["time us"] < 1e5
    put = suites["put through peer pointers"]["rows"]
    assert [row["size"] for row in put][:3] == [4096, 16384, 65536]  # bytes, as numbers
    assert all(row["put GB/s"] > 0 and row["memmove GB/s"] > 0 for row in put)
    assert all(row["spread %"] is None or row["spread %"] >= 0 for row in put)
    host = {row["step"]: row for row in suites["host control plane"]["rows"]}
    assert host["ccoCommCreate (first)"]["max ms"] > 0 and "ccoWindowRegister 64MiB" in host
    columns = {c["key"]: c for c in suites["put through peer pointers"]["columns"]}
    assert columns["size"]["unit"] == "B" and columns["put GB/s"]["name"] == "put"


def test_a_live_report_prints_each_row_as_it_is_appended():
    from cco_tools.perf import report as R
    from cco_tools.perf.report import Report

    out = io.StringIO()
    report = Report("cco perf: test", live=out, legend="a legend")
    rows = report.suite("sizes", [R.size(), R.figure("put", "GB/s"), R.spread()], note="a note")
    heading = ("\n# sizes\n#   a note\n" +  # sizes 12 wide, figures 10, the spread 7, two spaces apart
               "# " + "size".rjust(12) + "  " + "put".rjust(10) + "  " + "spread".rjust(7) + "\n" +
               "# " + "(B)".rjust(12) + "  " + "(GB/s)".rjust(10) + "  " + "(%)".rjust(7) + "\n")
    assert out.getvalue() == "cco perf: test\n# a legend\n" + heading
    rows.append([4096, 1.5, None])
    row = "  " + "4096".rjust(12) + "  " + "1.500".rjust(10) + "  " + "-".rjust(7) + "\n"  # n/a reads -
    assert out.getvalue().endswith(heading + row)
    # Every row is as wide as the heading above it: the columns stay aligned.
    rows.append([1 << 30, 12345.678, 2.25])
    lines = out.getvalue().splitlines()
    assert len({len(line) for line in lines[-4:]}) == 1, lines[-4:]
    # The whole table printed afterwards is the same text, line for line.
    whole = io.StringIO()
    report.print_table(whole)
    assert whole.getvalue() == out.getvalue()
    # A report that another process wrote, made live afterwards, prints only what comes next.
    later = Report.from_dict(json.loads(report.to_json()))
    later.go_live(out)
    before = out.getvalue()
    later.suite("next", [R.text("step", 12), R.figure("median", "ms")]).append(["x", 2.0])
    assert out.getvalue()[len(before):] == ("\n# next\n" + "# " + "step".ljust(12) + "  " + "median".rjust(10) + "\n" +
                                           "# " + " " * 12 + "  " + "(ms)".rjust(10) + "\n" +
                                           "  " + "x".ljust(12) + "  " + "2.000".rjust(10) + "\n")
    assert [s["rows"] for s in later.suites][0] == [[4096, 1.5, None], [1 << 30, 12345.678, 2.25]]


def test_text_columns_are_left_aligned_and_numbers_right_aligned():
    from cco_tools.perf import report as R

    line = R.format_row(["signal", 8, 17.25], [R.text("payload", 10), R.size(), R.figure("cco", "us/rt")])
    assert line == "  signal                 8      17.250"


def test_report_survives_json():
    from cco_tools.perf import report as R
    from cco_tools.perf.report import Report

    report = Report("header")
    report.suite("a", [R.size(), R.figure("x", "GB/s")], note="n").extend([[4096, 1.5], [8192, float("nan")]])
    report.suite("empty", [R.text("x")])
    again = Report.from_dict(json.loads(report.to_json()))
    assert again.to_json() == report.to_json()
    assert json.loads(report.to_json())["suites"][0]["rows"][1] == {"size": 8192, "x GB/s": None}  # no NaN in JSON


def test_a_timing_is_the_median_of_its_trials_with_their_spread():
    from cco_tools.perf.measure import Timing, spread_of

    t = Timing([2.0, 1.0, 4.0])
    assert t == 2.0 and t * 2 == 4.0 and t.spread == 150.0 and spread_of(t) == 150.0
    assert Timing([3.0]).spread is None and spread_of(3.0) is None
    assert Timing.of([Timing([1.0, 3.0]), 5.0]).trials == (1.0, 3.0, 5.0)


def test_perf_table_and_bad_suite():
    r = run_cco("perf", "--quick", "--suites", "barrier")
    assert r.returncode == 0 and "# host barrier (ccoBarrierAll)" in r.stdout, r.stderr
    assert re.search(r"^cco perf: 1 tables in [0-9.]+ s$", r.stdout, re.M), r.stdout
    r = run_cco("perf", "--suites", "warp-drive")
    assert r.returncode == 2 and "unknown suite" in r.stderr


def test_perf_starts_one_process_per_rank(tmp_path):
    path = tmp_path / "report.json"
    r = run_cco("perf", "--launch", "processes", "-n", "3", "--quick", "--suites", "barrier,put,host",
                "--host-ranks", "2", "--json", str(path))
    assert r.returncode == 0, r.stderr
    report = json.loads(path.read_text())  # one document: rank 0's, merged with the host suite run here
    assert "3 ranks as launched processes" in report["header"]
    suites = perf_suites(report)
    assert suites["host barrier"]["rows"][0]["ranks"] == 3
    assert all(row["put GB/s"] > 0 for row in suites["put through peer pointers"]["rows"])
    assert "ccoCommCreate (first)" in {row["step"] for row in suites["host control plane"]["rows"]}
    # The tables printed once each, rank 0's as it measured them, and the closing line once.
    assert r.stdout.count("# host barrier") == 1 and r.stdout.count("# host control plane") == 1
    assert re.search(r"^cco perf: 3 tables in [0-9.]+ s$", r.stdout, re.M) and r.stdout.count("cco perf: 3 tables") == 1
    assert "--report-to" not in " ".join(report["meta"]["command"])  # the parent's argument, not the user's
    r = run_cco("perf", "--launch", "processes", "-n", "2", "--quick", "--suites", "barrier", "--json")
    assert r.returncode == 0 and "2 ranks as launched processes" in json.loads(r.stdout)["header"], r.stderr


def test_perf_joins_an_external_launcher():
    r = launch("-n", "2", "-m", "cco_tools", "perf", "--quick", "--json")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(line.startswith("[rank 0] ") for line in lines), lines[:3]  # only rank 0 prints
    report = json.loads("\n".join(line[len("[rank 0] "):] for line in lines))
    assert "2 ranks as launched processes" in report["header"]
    assert set(perf_suites(report)) == {"host barrier", "put through peer pointers"}
    assert "the host suite runs only when cco perf starts the ranks itself" in r.stderr


def test_launched_ranks_agree_on_the_slowest_figure(tmp_path):
    script = tmp_path / "slowest.py"
    script.write_text(inspect.cleandoc("""
        from cco import runtime
        from cco_tools.perf.measure import Timing
        from cco_tools.perf.ranks import CpuRank, Ranks
        rank, world, uid = runtime.launched()
        group = Ranks(world, lambda r, u: CpuRank(r, world, u, 1 << 16), (rank, uid))
        first = group.slowest(1.5 * rank)
        second = group.slowest(10.0 - rank)  # a new round: nobody reads the old values
        assert (first, second) == (1.5 * (world - 1), 10.0), (rank, first, second)
        trials = group.slowest(Timing([rank, 5.0 - rank]))  # trial by trial
        assert trials.trials == (world - 1, 5.0), (rank, trials.trials)
        assert list(group.local) == [rank]
        group.close()
        print("agreed", rank)
    """))
    r = launch("-n", "3", str(script), timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(re.findall(r"agreed (\d)", r.stdout)) == ["0", "1", "2"]


def test_perf_worlds_of_one_rank():
    """-n 1 is one rank, never two: the suites that pair ranks say they need two."""
    r = run_cco("perf", "--launch", "processes", "-n", "1", "--quick", "--suites", "barrier", "--json")
    assert r.returncode == 2 and "--ranks 1: the suites barrier need 2 ranks or more" in r.stderr
    r = run_cco("perf", "-n", "1", "--quick", "--suites", "host", "--host-ranks", "2")  # its own processes
    assert r.returncode == 0 and "# host control plane, 2 ranks" in r.stdout, r.stderr
    r = launch("-n", "1", "-m", "cco_tools", "perf", "--quick", timeout=120)
    assert r.returncode != 0 and "the launcher started 1 rank; the suites need 2 or more" in r.stderr


def test_perf_min_size_above_the_quick_cap():
    r = run_cco("perf", "--quick", "--suites", "put", "--min-size", "4M", "--json")
    assert r.returncode == 0, r.stderr
    assert [row["size"] for row in perf_suites(json.loads(r.stdout))["put through peer pointers"]["rows"]] == [1 << 20]


def test_a_failing_launched_rank_frees_the_others(tmp_path):
    # Rank 1 fails inside its group: it aborts and leaves, and rank 0's next host barrier
    # names it at once instead of waiting out CCO_TIMEOUT_MS.
    script = tmp_path / "fail.py"
    script.write_text(inspect.cleandoc("""
        import sys, time
        from cco import runtime
        from cco_tools.perf.ranks import CpuRank, Ranks
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


def test_perf_plots_every_table_with_its_anchors(tmp_path):
    """`cco perf --plot`: the figure is written; plot() draws one panel per table and unit,
    every figure column (CCO's and its anchors'), never ratios or the spread: tables over sizes
    as lines, the others as bars."""
    out = tmp_path / "perf.png"
    r = run_cco("perf", "--quick", "--suites", "put,barrier,host", "--host-ranks", "2", "--plot", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000

    from cco_tools.perf import report as R
    from cco_tools.perf.plot import LABELS, SIZES, panels, plot
    from cco_tools.perf.report import Report

    report = Report("synthetic")
    report.suite("bandwidth", [R.size(), R.figure("put", "GB/s"), R.spread(), R.figure("memcpy", "GB/s"),
                               R.figure("put/memcpy", "%")]).extend([[4096, 1.0, 3.0, 2.0, 50.0],
                                                                     [1 << 20, 3.0, 1.0, 4.0, 75.0]])
    report.suite("latency", [R.size(), R.figure("put+flush", "us"), R.figure("put", "GB/s")]).extend(
        [[4096, 20.0, 0.2], [16384, 21.0, 0.8]])
    report.suite("round trip", [R.text("payload"), R.figure("cco", "us/rt"), R.figure("cco/lsa", "")]).extend(
        [["signal only", 17.0, 2.0], ["put 8B", 18.0, None]])
    report.suite("targets", [R.text("issue"), R.text("verdict")]).append(["#1", "met"])
    drawn = [(s["suite"], unit, how, sorted(series)) for s, unit, how, _, series in panels(report)]
    assert drawn == [("bandwidth", "GB/s", SIZES, ["memcpy GB/s", "put GB/s"]),
                     ("latency", "us", SIZES, ["put+flush us"]), ("latency", "GB/s", SIZES, ["put GB/s"]),
                     ("round trip", "us/rt", LABELS, ["cco us/rt"])]
    assert plot(report, str(tmp_path / "synthetic.png")) == ["bandwidth [GB/s]", "latency [us]", "latency [GB/s]",
                                                            "round trip [us/rt]"]


def test_every_cpu_table_is_drawn(tmp_path):
    """The tables a cpu run makes each get a panel (a sweep or bars)."""
    path = tmp_path / "r.json"
    r = run_cco("perf", "--quick", "--suites", "put,barrier,host", "--host-ranks", "2", "--json", str(path))
    assert r.returncode == 0, r.stderr
    from cco_tools.perf.plot import panels
    from cco_tools.perf.report import Report

    report = Report.from_dict(json.loads(path.read_text()))
    assert {s["suite"] for s, *_ in panels(report)} == {s["suite"] for s in report.suites}


def test_perf_tcp_suite_measures_the_backend_beside_its_anchors():
    """`cco perf --suites tcp`: two processes as two hosts over loopback, the GDA round trips
    and put bandwidth through the tcp backend beside a bare TCP ping-pong and stream and the
    local backend's round trip, all measured in this run; --targets adds the project's target
    beside each round trip and judges it at the end."""
    r = run_cco("perf", "--platform", "cpu", "--quick", "--suites", "tcp", "--targets", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    suites = {s["suite"].split(" (")[0]: s for s in json.loads(r.stdout)["suites"]}
    trips = suites["GDA over tcp round trip"]["rows"]
    assert [row["payload"] for row in trips] == ["put+signal 8B", "signal"]
    for row in trips:
        assert row["tcp us/rt"] > 0 and row["bare tcp us/rt"] > 0 and row["local us/rt"] > 0
        assert row["target us/rt"] == row["bare tcp us/rt"] + row["local us/rt"]
        assert row["met"] == ("yes" if row["tcp us/rt"] <= row["target us/rt"] else "no")
        assert row["spread %"] >= 0  # the fastest and slowest of the bench's blocks
    bandwidth = suites["GDA over tcp put bandwidth"]["rows"]
    assert [row["size"] for row in bandwidth][0] == 4096 and all(row["tcp GB/s"] > 0 for row in bandwidth)
    judged = {row["target"]: row for row in suites["project targets"]["rows"]}
    assert judged["tcp round trip <= bare + local"]["verdict"] in ("met", "missed")
    assert judged["LSA barrier <= 2.0 us"]["verdict"] == "not measured"


def test_targets_are_shown_only_when_asked():
    r = run_cco("perf", "--quick", "--suites", "barrier")
    assert r.returncode == 0 and "project targets" not in r.stdout and "target" not in r.stdout, r.stdout
    r = run_cco("perf", "--quick", "--suites", "barrier", "--targets")
    assert r.returncode == 0 and "# project targets" in r.stdout, r.stderr


def test_options_are_settled_once():
    import argparse
    import dataclasses

    from cco_tools.perf import options

    p = argparse.ArgumentParser()
    options.add_arguments(p)
    argv = ["--platform", "cpu", "--quick", "--max-size", "256M", "--suites", "put", "--report-to", "/x"]
    o = options.Options.from_args(p.parse_args(argv), ["perf", *argv])
    assert o.max_bytes == 1 << 20 and o.rounds == 200 and o.trials == options.QUICK_TRIALS and o.world == 2
    assert o.report_to == "/x" and "--report-to" not in o.argv
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.max_bytes = 1


# --- the GPU suites, without a GPU: every module imports and has the one signature -------
def _stand_in_torch(monkeypatch):
    """A torch that imports (the suites import it at the top and use it only when they run)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        fake = types.ModuleType("torch")
        fake.cuda = types.SimpleNamespace(device_count=lambda: 0, is_available=lambda: False)
        monkeypatch.setitem(sys.modules, "torch", fake)


def _forget_modules_imported_since(before, prefix):
    """The modules under `prefix` imported since `before` (a set of names) go again, from
    sys.modules and from their packages: imported under a stand-in torch, they would keep it
    for the tests after this one, which bring stand-ins of their own."""
    for name in sorted(set(sys.modules) - before, reverse=True):
        if name.startswith(prefix):
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent in sys.modules and hasattr(sys.modules[parent], child):
                delattr(sys.modules[parent], child)


def test_every_suite_module_imports_and_runs_with_a_context(monkeypatch):
    pytest.importorskip("triton")
    before = set(sys.modules)
    _stand_in_torch(monkeypatch)
    try:
        from cco_tools.perf import suites

        for name in suites.every_module_name():
            module = importlib.import_module(f"cco_tools.perf.suites.{name}")
            if name in suites.SHARED:
                continue
            assert list(inspect.signature(module.run).parameters) == ["ctx"], name
        for platform, names in suites.MODULES.items():
            for suite in names:
                assert suites.module(platform, suite).run
    finally:
        _forget_modules_imported_since(before, "cco_tools.perf")


def test_the_gpu_options_parse_without_a_gpu():
    import argparse

    from cco_tools.perf import options

    p = argparse.ArgumentParser()
    options.add_arguments(p)
    argv = ["--platform", "cuda", "--quick", "--suites", ",".join(options.GPU_SUITES), "--launch", "threads"]
    o = options.Options.from_args(p.parse_args(argv), argv)
    assert o.platform == "cuda" and o.max_bytes == 16 << 20 and o.barrier_rounds == 2000
    assert o.suites == options.GPU_SUITES
    assert o.host_window == 1 << 30 and o.ranks_as == "threads"


def test_ranks_sharing_a_gpu_are_processes_under_mps(monkeypatch):
    """Auto: ranks as threads only where they share GPUs and no MPS daemon runs (under MPS, the
    threads of one client share its hardware work queues, and a proxy's stream stalled behind a
    kernel waiting for it); one process each where every rank has a GPU, or MPS runs."""
    import argparse

    from cco_tools.perf import options

    p = argparse.ArgumentParser()
    options.add_arguments(p)
    argv = ["--platform", "cuda", "--suites", "gda"]
    for gpus, mps, ranks, want in ((1, False, 0, "threads"), (1, True, 0, "processes"), (2, False, 0, "processes"),
                                   (2, False, 4, "threads"), (2, True, 4, "processes")):
        monkeypatch.setattr(options, "gpu_count", lambda gpus=gpus: gpus)
        monkeypatch.setattr(options, "mps_serves", lambda mps=mps: mps)
        given = argv + (["-n", str(ranks)] if ranks else [])
        o = options.Options.from_args(p.parse_args(given), given)
        assert o.ranks_as == want, (gpus, mps, ranks)
