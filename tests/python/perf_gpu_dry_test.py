# SPDX-License-Identifier: MIT
"""The GPU suites of `cco perf` run start to end on a stand-in torch, with the kernels' launches
replaced by nothing (no GPU here): every suite's control flow, every table's rows as wide as
its columns, the groups the orchestration builds, ranks as threads and as one launched
process. The figures are meaningless (every timed run takes 1 ms); the data checks pass by
construction. What the kernels compute is tested on a GPU (tests/gpu, `cco perf --quick`)."""

import io
import sys
import types

import pytest

triton = pytest.importorskip("triton")


class Tensor:
    """Any tensor: every operation gives a tensor, a scalar reads 0."""

    def __init__(self, *shape, **kwargs):
        self.device = kwargs.get("device", "cuda:0")

    def __getattr__(self, name):
        return lambda *args, **kwargs: self

    def __getitem__(self, key):
        return self

    def __setitem__(self, key, value):
        pass

    def item(self):
        return 0

    def __int__(self):
        return 0

    def __float__(self):
        return 0.0

    def __iter__(self):
        return iter(())

    def _op(self, *args):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __mod__ = __truediv__ = __neg__ = _op


class Event:
    def __init__(self, **kwargs):
        pass

    def record(self, stream=None):
        pass

    def elapsed_time(self, other):
        return 1.0  # ms


class Nothing:
    """A context manager and object that does nothing (streams, graphs, devices)."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def replay(self):
        pass


def stand_in_torch(gpus):
    torch = types.ModuleType("torch")
    for dtype in ("int32", "int64", "float32", "float64", "bfloat16"):
        setattr(torch, dtype, dtype)
    for make in ("arange", "zeros", "empty", "randn", "randn_like", "empty_like", "stack", "sum", "mm", "zeros_like"):
        setattr(torch, make, lambda *args, **kwargs: Tensor())
    torch.equal = lambda a, b: True
    torch.device = lambda *args: args
    torch.__version__ = "stand-in"
    torch.version = types.SimpleNamespace(cuda="12.x", hip=None)
    props = types.SimpleNamespace(name="Stand-in GPU", multi_processor_count=132)
    torch.cuda = types.SimpleNamespace(
        device_count=lambda: gpus, is_available=lambda: True, set_device=lambda d: None, current_device=lambda: 0,
        get_device_properties=lambda d=0: props, get_device_capability=lambda d=None: (9, 0),
        synchronize=lambda d=None: None, Stream=Nothing, Event=Event, CUDAGraph=Nothing, graph=Nothing,
        device=Nothing, stream=Nothing, nccl=types.SimpleNamespace(version=lambda: (2, 0, 0)))
    return torch


class Kernel:
    """A Triton kernel whose launches do nothing: kernel[grid](...)."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: None


class AllReduce:
    """OneShotAllReduce / TwoShotAllReduce / PushAllReduce without a GPU."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self):
        pass

    def check(self):
        pass

    @staticmethod
    def window_bytes(count, *args, **kwargs):
        return 4 * count


class Comm:
    def __init__(self, rank, world):
        self.rank, self.lsa_size = rank, world
        self.value = 0.0

    def barrier(self):
        pass

    def peer_ptr(self, win, peer, offset):
        return offset

    def destroy(self):
        pass

    def abort(self):
        pass


class Rank:
    """A GPU rank without a communicator; one launched rank agrees with itself."""

    def __init__(self, rank, world, uid, device, window_bytes, barriers, gda=False, sdma=False):
        self.rank, self.device, self.scratch = rank, device, window_bytes
        self.comm = Comm(rank, world)
        self.win = self.dc = self.dc_proxy = self.dc_wide = types.SimpleNamespace(handle=0, ptr=0)
        self.stream = None

    def view(self, lsa_peer, offset, count, dtype):
        return Tensor()

    def write_f64(self, value):
        self.comm.value = value

    def read_f64(self, peer):
        return self.comm.value


@pytest.fixture
def gpu(monkeypatch):
    """Two stand-in GPUs; the kernels' launches and the all-reduce objects do nothing."""
    torch = stand_in_torch(2)
    torch.distributed = types.ModuleType("torch.distributed")
    torch.distributed.is_initialized = lambda: False
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.distributed", torch.distributed)
    monkeypatch.setenv("CCO_PLATFORM", "cuda")
    from cco.ir.triton import cco as cco_ir
    from cco_tools.perf import ranks
    from cco_tools.perf.kernels import gda, lsa, lsa_push, sdma

    for module in (gda, lsa, lsa_push, sdma):
        for name, value in vars(module).items():
            if isinstance(value, triton.runtime.jit.JITFunction):
                monkeypatch.setattr(module, name, Kernel())
    monkeypatch.setattr(lsa, "OneShotAllReduce", AllReduce)
    monkeypatch.setattr(lsa, "TwoShotAllReduce", AllReduce)
    monkeypatch.setattr(lsa_push, "PushAllReduce", AllReduce)
    monkeypatch.setattr(ranks, "GpuRank", Rank)
    monkeypatch.setattr(cco_ir, "get_extern_libs", lambda *args, **kwargs: {"cco": "stand-in.bc"})
    monkeypatch.setattr(ranks.Communicator, "get_unique_id", staticmethod(lambda: b"id"))


def options(*argv):
    import argparse

    from cco_tools.perf.options import Options, add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    argv = ["--platform", "cuda", "--quick", "--trials", "2", *argv]
    return Options.from_args(p.parse_args(argv), ["perf", *argv])


def measure(opts, joined=None):
    from cco_tools.perf import run
    from cco_tools.perf.suites import Progress

    out = io.StringIO()
    report = run._gpu(opts, joined, out, Progress(quiet=True))
    return report, out.getvalue()


def test_every_gpu_suite_runs_on_threads(gpu):
    opts = options("--launch", "threads", "--suites", "put,get,barrier,allreduce,gda,sdma", "--max-size", "64K")
    report, printed = measure(opts)
    titles = [s["suite"].split(",")[0] for s in report.suites]
    assert titles == ["LSA put bandwidth", "LSA get bandwidth", "LSA barrier latency", "GDA put+signal round trip",
                      "GDA call cost per kernel launch", "GDA put+flush latency: the calling group's own copy against "
                      "the proxy", "GDA put bandwidth", "SDMA put bandwidth", "SDMA put+signal round trip",
                      "SDMA put overlapping compute", "one-shot all-reduce kernel loop (float32 sum)"], titles
    assert report.header.startswith("cco perf: 2 x Stand-in GPU") and report.meta["trials"] == 2
    put = report.suites[0]["rows"]
    assert [row[0] for row in put] == [4096, 16384, 65536] and all(len(row) == 13 for row in put)
    assert all(s["rows"] for s in report.suites), [s["suite"] for s in report.suites if not s["rows"]]
    assert printed.count("\n\n# ") == len(report.suites)  # each title after its blank line
    assert report.to_json()  # every value is JSON


def test_the_suites_with_processes_of_their_own_run_where_cco_perf_starts_the_job(gpu, monkeypatch, capsys):
    """`--suites ops` once ran nothing (0 tables): no path called it."""
    from cco_tools.perf import run
    from cco_tools.perf.suites import host, ops

    calls = []
    monkeypatch.setattr(ops, "run", lambda ctx: calls.append(("ops", ctx.options.world)))
    monkeypatch.setattr(host, "run", lambda ctx: calls.append(("host", ctx.options.world)))
    assert run.main(options("--launch", "threads", "--suites", "ops,host", "-n", "2", "--json", "-")) == 0
    assert calls == [("host", 2), ("ops", 2)]
    calls.clear()
    import cco.runtime

    monkeypatch.setattr(cco.runtime, "launched", lambda: (0, 2, b"id"))
    assert run.main(options("--suites", "ops", "--json", "-")) == 0  # a rank of someone else's launch
    assert calls == [] and "the ops suite runs only when cco perf starts the ranks itself" in capsys.readouterr().err


def test_the_launch_suite_runs_in_a_launched_process(gpu, monkeypatch):
    monkeypatch.delenv("MASTER_ADDR", raising=False)  # the peers say why they read n/a
    opts = options("--suites", "launch,allreduce,barrier")
    report, _ = measure(opts, joined=(0, 2, b"id"))
    titles = [s["suite"].split(",")[0].split(" (")[0] for s in report.suites]
    assert titles == ["LSA barrier latency", "one-shot all-reduce kernel loop", "all-reduce per launch"], titles
    rows = report.suites[-1]["rows"]
    assert [row[3] for row in rows[:3]] == ["graph", "graph+pdl", "eager"]
    assert all(len(row) == len(report.suites[-1]["columns"]) for row in rows)
    assert "peers n/a: no torch.distributed rendezvous" in report.suites[-1]["note"]
