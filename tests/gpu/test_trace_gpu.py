# SPDX-License-Identifier: MIT
"""The device-side trace on the GPU (docs/trace.md): two ranks as threads on GPU 0, GDA through
the proxy (the direct path off, so that every post has the proxy's stamps).

  - a traced kernel's posts, waits, flush and own range are in each rank's file, with the
    proxy's stamps in order after the device's (post <= issue <= in flight) once the device
    clock is moved onto the host's, and the clock bounds agree with each other;
  - `cco perf --trace` on the GPU suites and `cco trace merge` (tests/gpu/run_all.sh's `trace`
    step does the same on the command line);
  - a fused operator (cco.ops.gemm_ar, one rank) records its tiles;
  - the cost: a kernel of `rounds` x (put 8 B + signal) timed on the device, with the shipped
    bitcode untraced (CCO_TRACE unset), traced, and, where tools/stage_device.sh staged it
    ($CCO_STAGE/untraced-nvptx-sm_90-proxy.bc), the bitcode built without trace points. Printed
    per operation; the bound asserted is loose (a GPU's timings vary run to run), the figures
    are what to look at.

Not run in this repository's CI (no GPU); written to run on the device machine."""

import json
import os
import subprocess
import sys
import threading
import traceback

import torch
import triton
import triton.language as tl

from cco.ir.triton import cco
from cco_tools import trace as trace_tool
from cco_tools import trace_format
from kernels import globaltimer_ns


@triton.jit(do_not_specialize=["peer", "rounds"])
def posts(dc, win, status, times, peer, rounds):
    """rounds x (an 8-byte put, a signal) to `peer`, one block; then a flush. times[0]: ns from the
    first post to the last; status[0]: the calls that failed. The whole loop is one TILE range."""
    bad = 0
    t0 = globaltimer_ns()
    begin = cco.Trace.clock(dc)
    for i in range(rounds):
        bad += cco.Gda.put(dc, 0, peer, win, 64, win, 0, 8, 0, 0, coop=cco.CoopScope.BLOCK,
                           thread_mode=cco.ThreadMode.INDEPENDENT, signal_op=cco.SignalOp.NONE)
        bad += cco.Gda.signal(dc, 0, peer, 1, 1, coop=cco.CoopScope.BLOCK, signal_op=cco.SignalOp.INC)
    t1 = globaltimer_ns()
    cco.Trace.range(dc, cco.TraceTag.TILE, rounds, begin, coop=cco.CoopScope.BLOCK)
    bad += cco.Gda.wait_signal(dc, 0, 1, rounds, 64, coop=cco.CoopScope.BLOCK)
    bad += cco.Gda.flush(dc, 0, coop=cco.CoopScope.BLOCK)
    tl.store(status, bad)
    tl.store(times, t1 - t0)


class Rank:
    def __init__(self, rank, uid, traced_folder):
        from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_FULL

        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda:0")
        self.rank = rank
        self.comm = Communicator.init(2, rank, uid, per_rank_vmm=256 << 20)
        self.win = self.comm.alloc_window(1 << 20)
        reqs = CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_FULL, gda_context_count=1,
                                      gda_direct_max_bytes=0)
        self.dc = self.comm.create_dev_comm(reqs)
        assert self.dc.traced == (traced_folder is not None)
        self.stream = torch.cuda.Stream(device=0)

    def run(self, rounds, libs):
        with torch.cuda.stream(self.stream):
            status = torch.full((1,), -1, dtype=torch.int32, device="cuda:0")
            times = torch.zeros(1, dtype=torch.int64, device="cuda:0")
            posts[(1,)](self.dc.ptr, self.win.handle, status, times, 1 - self.rank, rounds, num_warps=4,
                        extern_libs=libs)
        self.stream.synchronize()
        assert int(status.item()) == 0
        return int(times.item()) / max(1, 2 * rounds)

    def load(self, libs):
        """Every module a run uses loaded (the kernel, torch's fill kernels), with no peer
        needed: loading a module waits for the kernels running in the process, the other
        rank's among them, which may be waiting for this rank (CUDA's lazy loading). The body
        then meets the other rank at a barrier before its first run that needs it."""
        self.run(0, libs)

    def close(self):
        self.comm.destroy()


def _two_ranks(body, traced_folder):
    """body(rk) on ranks 0 and 1 as threads on GPU 0 (CCO_TRACE = traced_folder, or unset)."""
    os.environ["CCO_PLATFORM"] = "cuda"
    if traced_folder is None:
        os.environ.pop("CCO_TRACE", None)
    else:
        os.environ["CCO_TRACE"] = str(traced_folder)
    from cco import Communicator

    uid = Communicator.get_unique_id()
    results, errors = {}, {}

    def run(rank):
        try:
            rk = Rank(rank, uid, traced_folder)
            try:
                results[rank] = body(rk)
            except BaseException as e:  # reported below; the teardown it leads to fails too
                errors[rank] = f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"
                rk.comm.abort()
            try:
                rk.close()
            except BaseException as e:  # noqa: BLE001
                errors.setdefault(rank, f"teardown: {type(e).__name__}: {e}")
        except BaseException as e:  # noqa: BLE001 (a rank's first error stays)
            errors.setdefault(rank, f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}")

    threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    os.environ.pop("CCO_TRACE", None)
    said = "\n".join(f"rank {rank}: {error}" for rank, error in sorted(errors.items()))
    assert not any(t.is_alive() for t in threads), f"a rank hung; {said or 'no rank failed'}"
    assert not errors, said
    return results


def test_a_traced_kernel_on_the_gpu(tmp_path):
    libs = cco.get_extern_libs()

    def body(rk):
        rk.load(libs)
        rk.comm.barrier()
        rk.run(4, libs)  # its records go with the first flush
        rk.comm.barrier()
        rk.comm.trace_flush(rk.dc, str(tmp_path / f"warm{rk.rank}.json"))
        rk.comm.barrier()
        rk.run(64, libs)
        rk.comm.barrier()
        rk.comm.trace_flush(rk.dc, str(tmp_path / f"rank{rk.rank}.json"))
        return True

    _two_ranks(body, tmp_path / "at-destroy")
    for rank in (0, 1):
        with open(tmp_path / f"rank{rank}.json", encoding="utf-8") as f:
            doc = json.load(f)
        assert trace_format.problems(doc) == []
        meta = doc["otherData"]["cco"]
        assert meta["platform"] == "cuda" and meta["rank"] == rank and meta["dropped"] == 0
        clock = meta["clock"]
        print(f"rank {rank}: clock {clock}")
        assert not clock["sameClock"] and clock["samples"] > 0 and clock["lowerNs"] is not None
        assert clock["lowerNs"] <= clock["upperNs"], clock  # the two bounds agree
        names = [e["name"] for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "device"]
        assert names.count("gda.put") == 64 and names.count("gda.signal") == 64
        assert {"gda.wait_signal", "gda.flush"} <= set(names)
        assert [e["name"] for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "kernel"] == ["tile"]
        slices = {(e["tid"], e["ts"]): e for e in doc["traceEvents"] if e["ph"] == "X"}
        flows = {}
        for e in doc["traceEvents"]:
            if e["ph"] in "sf":
                flows.setdefault(e["id"], {})[e["ph"]] = e
        assert len(flows) == 2 * 128  # every post to its issue, every issue to its flight
        for pair in flows.values():
            assert pair["s"]["ts"] <= pair["f"]["ts"]
            start, finish = pair["s"], pair["f"]
            assert slices[(start["tid"], start["ts"])]["ts"] <= slices[(finish["tid"], finish["ts"])]["ts"]
    merged = trace_tool.merge([json.load(open(tmp_path / f"rank{r}.json", encoding="utf-8")) for r in (0, 1)])
    assert trace_format.problems(merged) == []


def test_cco_perf_trace_on_the_gpu(tmp_path):
    env = dict(os.environ, CCO_PLATFORM="cuda")
    r = subprocess.run([sys.executable, "-m", "cco_tools", "perf", "--quick", "--suites", "gda", "--trace",
                        str(tmp_path / "t")], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    files = os.listdir(tmp_path / "t")
    assert {f.split(".")[1] for f in files} == {"r0", "r1"}, files
    m = subprocess.run([sys.executable, "-m", "cco_tools", "trace", "merge", str(tmp_path / "t"), "-o",
                        str(tmp_path / "all.json")], env=env, capture_output=True, text=True, timeout=300)
    assert m.returncode == 0, m.stderr
    with open(tmp_path / "all.json", encoding="utf-8") as f:
        assert trace_format.problems(json.load(f)) == []


def test_a_fused_operator_records_its_tiles(tmp_path):
    code = f"""
import os, torch
os.environ["CCO_TRACE"] = {str(tmp_path)!r}
from cco import Communicator, ops
uid = Communicator.get_unique_id()
with Communicator.init(1, 0, uid) as comm:
    a = torch.randint(-2, 3, (512, 256), device="cuda").to(torch.bfloat16)
    b = torch.randint(-2, 3, (256, 512), device="cuda").to(torch.bfloat16)
    torch.testing.assert_close(ops.gemm_ar(a, b, comm).float(), (a.float() @ b.float()))
    torch.cuda.synchronize()
"""
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, CCO_PLATFORM="cuda"), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    names = set()
    for f in os.listdir(tmp_path):
        with open(tmp_path / f, encoding="utf-8") as fh:
            doc = json.load(fh)
        assert trace_format.problems(doc) == []
        names |= {e["name"] for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") == "kernel"}
    assert {"tile", "reduce"} <= names, names


def test_what_the_trace_points_cost_on_the_gpu(tmp_path):
    rounds = 2000
    shipped = cco.get_extern_libs()
    untraced_bc = os.path.join(os.environ.get("CCO_STAGE", "stage"), "untraced-nvptx-sm_90-proxy.bc")
    runs = {"off": (None, shipped), "on": (tmp_path, shipped)}
    if os.path.exists(untraced_bc):
        runs["compiled out"] = (None, {"cco": untraced_bc})
    figures = {}
    for name, (folder, libs) in runs.items():
        def body(rk, libs=libs):
            rk.load(libs)
            rk.comm.barrier()
            rk.run(8, libs)
            rk.comm.barrier()
            best = min(rk.run(rounds, libs) for _ in range(5))
            rk.comm.barrier()
            return best
        figures[name] = max(_two_ranks(body, folder).values())
    print("\nns per GDA post (put 8 B or signal), best of 5 runs, slower rank: " +
          ", ".join(f"{k} {v:.1f}" for k, v in figures.items()))
    if "compiled out" in figures:
        assert figures["off"] <= 1.10 * figures["compiled out"] + 50, figures
