# SPDX-License-Identifier: MIT
"""`cco perf --suites ops` without a GPU: the shapes it measures, how the ranks' rows become
the slowest rank's, and the tables (one per operator, every row as wide as its columns, a
failed operator named in its table). The measurement itself runs on a GPU
(tests/gpu/run_all.sh ops)."""

import argparse
import io

import pytest

from cco_tools.perf import options
from cco_tools.perf import report as R
from cco_tools.perf.suites import ops


def test_shapes_cover_every_operator_and_shard_by_the_ranks():
    shapes = ops.shapes_for((1024, 4096), 2)
    assert {s[0] for s in shapes} == set(ops.OPERATORS)
    by = {(op, what): (m, k, n) for op, what, m, k, n in shapes}
    assert by[("ag_gemm", "FFN up M=4096")] == (2048, ops.HIDDEN, ops.FFN // 2)
    assert by[("gemm_rs", "FFN down M=4096")] == (4096, ops.FFN // 2, ops.HIDDEN)
    assert by[("a2a_gemm", "DSv3 dispatch M=1024")] == (4096, ops.DSV3_HIDDEN, ops.DSV3_EXPERT_FFN)
    assert ops.gemm_rows("ag_gemm", 2048, 2) == 4096 and ops.gemm_rows("gemm_rs", 4096, 2) == 4096


def test_the_slowest_rank_counts_and_any_error_marks_the_row():
    rank0 = [dict(op="gemm_ar", shape="s", flops=2e12, fused_s=1.0, matmul_s=0.5, core_s=0.5, nccl_s=None,
                  torch_s=0.5, cco_split_s=1.5, anchor_error="torch's fused op: E: y")]
    rank1 = [dict(op="gemm_ar", shape="s", flops=2e12, fused_s=2.0, matmul_s=0.25, core_s=0.75, nccl_s=None,
                  torch_s=0.75, cco_split_s=1.25, error="E: x")]
    (row,) = ops.slowest([rank0, rank1])
    assert row["fused_s"] == 2.0 and row["matmul_s"] == 0.5 and row["core_s"] == 0.75 and row["nccl_s"] is None
    assert row["torch_s"] == 0.75 and row["cco_split_s"] == 1.5
    assert row["error"] == "E: x" and row["anchor_error"] == "torch's fused op: E: y"
    rank1[0].pop("fused_s")  # a rank that has no figure: none for the row
    assert ops.slowest([rank0, rank1])[0]["fused_s"] is None


def test_one_table_per_operator_with_failures_named():
    rows = []
    for op in ops.OPERATORS:
        rows.append(dict(op=op, shape=f"{op} M=4096", flops=2e12, fused_s=2e-3, matmul_s=1e-3, core_s=1.6e-3,
                         cco_split_s=2.8e-3, nccl_s=3e-3, torch_s=2.5e-3 if op in ("ag_gemm", "gemm_rs") else None))
    rows[1].update(fused_s=None, error="CCOTimeoutError: a peer never came")
    rows[0].update(anchor_error="torch's fused op: RuntimeError: no symmetric memory")
    out = io.StringIO()
    report = R.Report("test", live=out)
    ops.add_tables(report, rows, 2, shared=False)
    assert len(report.suites) == len(ops.OPERATORS)
    first = report.suites[0]["rows"][0]
    # fused us, TFLOP/s; matmul us, TFLOP/s, matmul/fused %; core TFLOP/s, core/fused %; exposed; CCO's split;
    # NCCL's split; torch's fused op (none for gemm_ar, the first operator)
    assert first[1:12] == pytest.approx([2000.0, 1000.0, 1000.0, 2000.0, 50.0, 1250.0, 80.0, 1000.0, 2800.0, 3000.0,
                                         None])
    by_op = {s["suite"].split(",")[0]: s for s in report.suites}
    assert by_op["cco.ops.ag_gemm"]["rows"][0][11] == pytest.approx(2500.0)
    assert "torch has none" in by_op["cco.ops.gemm_ar"]["note"]
    assert "no symmetric memory" in report.suites[0]["note"]
    failed = report.suites[1]
    assert failed["rows"][0][0].endswith("(failed)") and failed["rows"][0][1] is None
    assert "CCOTimeoutError: a peer never came" in failed["note"]
    for suite in report.suites:
        assert all(len(r) == len(suite["columns"]) for r in suite["rows"])
    assert "cco.ops.gemm_ar" in out.getvalue()


def test_each_transport_is_a_row_of_its_own():
    rows = [dict(op="ag_gemm", shape="FFN up M=4096", transport=t, flops=2e12, fused_s=f, matmul_s=1e-3, nccl_s=None)
            for t, f in (("lsa", 2e-3), ("gda", 3e-3), ("sdma", 4e-3))]
    report = R.Report("test", live=io.StringIO())
    ops.add_tables(report, rows, 2, shared=True)
    labels = [r[0] for r in report.suites[0]["rows"]]
    assert labels == ["FFN up M=4096", "FFN up M=4096 gda", "FFN up M=4096 sdma"]
    assert [r[1] for r in report.suites[0]["rows"]] == [2000.0, 3000.0, 4000.0]


@pytest.mark.parametrize("given, want", [("lsa", ("lsa",)), ("lsa,gda,sdma", ("lsa", "gda", "sdma")),
                                         ("nvlink", None), ("", None)])
def test_ops_transports_option(given, want):
    p = argparse.ArgumentParser()
    options.add_arguments(p)
    argv = ["--platform", "cuda", "--suites", "ops", "-n", "2", "--ops-transports", given]
    if want is None:
        with pytest.raises(options.UsageError, match="name some of lsa, gda, sdma"):
            options.Options.from_args(p.parse_args(argv), argv)
    else:
        assert options.Options.from_args(p.parse_args(argv), argv).ops_transports == want


def test_ops_is_a_gpu_suite_with_ranks_of_its_own():
    p = argparse.ArgumentParser()
    options.add_arguments(p)
    argv = ["--platform", "cuda", "--suites", "ops", "-n", "1", "--quick"]
    o = options.Options.from_args(p.parse_args(argv), argv)  # one rank is allowed: ops starts its own
    assert o.suites == ("ops",) and o.world == 1 and "ops" in options.OWN_PROCESSES
    with pytest.raises(options.UsageError, match="unknown suite"):
        options.Options.from_args(p.parse_args(["--platform", "cpu", "--suites", "ops"]), [])


class _Comm:
    def __init__(self, world, lsa):
        self.world_size, self.lsa_size = world, lsa


@pytest.mark.parametrize("world, lsa", [(1, 1), (4, 2)])
def test_cco_split_only_where_every_rank_is_an_lsa_peer(world, lsa):
    """One rank has nothing to move; ranks on several hosts have no LSA kernel between them:
    no split anchor (its column stays empty), and no window is made for one."""
    assert ops._cco_split(_Comm(world, lsa), None, (4096,), world) is None


def test_the_cco_split_window_holds_the_largest_source():
    from cco_tools.perf.kernels.ops_split import COLLECTIVES, source_bytes

    assert set(COLLECTIVES) == set(ops.OPERATORS)
    # before the GEMM the collective moves a (m x k), after it the product (m x n)
    assert source_bytes("ag_gemm", 2048, 8192, 14336) == 2048 * 8192 * 2
    assert source_bytes("gemm_rs", 16384, 14336, 8192) == 16384 * 8192 * 2
    biggest = max(source_bytes(op, m, k, n) for op, _, m, k, n in ops.shapes_for(ops.TOKENS, 2))
    assert biggest == 16384 * ops.HIDDEN * 2   # gemm_rs / gemm_ar at M = 16384


def test_a_split_that_differs_from_the_operator_is_said():
    assert ops._beyond_rounding(0.3, 8.0) is None          # bf16 sums in another order
    assert "differs from the operator by 2 of 8" in ops._beyond_rounding(2.0, 8.0)
    assert ops._beyond_rounding(0.0, 0.0) is None and ops._beyond_rounding(1.0, 0.0)   # all zeros wanted


def test_an_operator_and_its_anchors_are_timed_in_turns():
    """Each figure is the median of its runs, and the runs take turns, each round starting one
    timer further on (matmul, core, fused; core, fused, matmul; ...): a clock drifting through
    the measurement (here each run 10 % slower than the one before) then moves the ratio of two
    figures by the drift across one round, not across all the runs of the first figure, as runs
    one figure after the other would; and no figure always runs first or last."""
    order, clock = [], [1.0]

    def timer(name, cost):
        def run():
            order.append(name)
            clock[0] *= 1.1
            return cost * clock[0]
        return run

    got = ops.in_turns({"matmul_s": timer("matmul", 1.0), "core_s": timer("core", 1.0),
                        "fused_s": timer("fused", 2.0)}, 3)
    assert order == ["matmul", "core", "fused", "core", "fused", "matmul", "fused", "matmul", "core"]
    # medians of the runs (n-th call: 1.1 ** n): matmul 1, 6, 8; core 2, 4, 9; fused 3, 5, 7
    assert got["matmul_s"] == pytest.approx(1.1 ** 6) and got["core_s"] == pytest.approx(1.1 ** 4)
    assert got["fused_s"] == pytest.approx(2 * 1.1 ** 5)
    in_a_row = 2 * 1.1 ** 6   # fused's median run (the 8th) against matmul's (the 2nd), one figure after the other
    for name in ("matmul_s", "core_s"):
        ratio = got["fused_s"] / got[name]
        assert 2 / 1.1 ** 2 <= ratio <= 2 * 1.1 ** 2 < in_a_row
