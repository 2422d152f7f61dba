# SPDX-License-Identifier: MIT
"""cco.ops on the GPU: every operator against its torch reference with 1, 2 and 4 ranks as
processes (on one GPU they share it under MPS, as tests/gpu/run_all.sh runs them), bf16 and
fp16 (fp8 e4m3 where the GPU has it), shapes that are and are not multiples of the tiles,
uneven all-to-all splits with empty ones; CUDA graph capture and replay with new inputs;
operands from the symmetric pool; bad operands refused on the rank that holds them before
any kernel; `cco perf`'s CCO split anchor equal to the operators; a rank that never calls
makes its peers' call give up within the timeout.

Inputs are small integers, so every product and sum is exact in fp32 and the reference
(computed on each rank from every rank's seeded inputs, no torch.distributed) rounds as the
kernels do: results are compared bit for bit.

Run as `pytest tests/gpu/test_ops.py` (it launches the ranks with python -m cco.launch), or
one rank set by hand: python -m cco.launch -n 2 tests/gpu/test_ops.py [case ...]."""

import faulthandler
import os
import subprocess
import sys

import pytest

CASES = ["ops", "graph", "pool", "errors", "split", "timeout"]


def _run(ranks, cases, timeout=600, env=None):
    command = [sys.executable, "-m", "cco.launch", "-n", str(ranks), "--timeout", str(timeout - 30), __file__, *cases]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    print(done.stdout[-6000:], done.stderr[-6000:])
    assert done.returncode == 0, f"{ranks} ranks, {cases}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_operators_equal_their_references(ranks):
    out = _run(ranks, ["ops", "graph", "pool", "errors", "split"])
    assert out.count("PASS") >= 5 * ranks


@pytest.mark.parametrize("ranks", [2, 4])
def test_operators_over_gda_equal_their_references(ranks):
    """transport="gda": every tile a put with a signal; the ranks on one host, and (with two
    virtual nodes joined by tcp over loopback) ranks that share no node, where LSA is refused."""
    out = _run(ranks, ["ops@gda", "graph@gda", "pool@gda"])
    assert out.count("PASS") >= 3 * ranks
    out = _run(ranks, ["ops@gda", "graph@gda"], env={"CCO_TEST_NODES_PER_HOST": "2", "CCO_NET": "tcp",
                                                     "CCO_SOCKET_IFNAME": "=lo"})
    assert out.count("PASS") >= 2 * ranks


@pytest.mark.parametrize("ranks", [2, 4])
def test_the_sdma_operators_equal_their_references(ranks):
    out = _run(ranks, ["sdma"], env={"CCO_ENABLE_SDMA": "1"})
    assert out.count("PASS sdma") == ranks


@pytest.mark.parametrize("transport", ["lsa", "gda"])
def test_a_rank_that_never_calls_makes_the_peers_give_up(transport):
    # Long enough for every rank to start (torch and CUDA under MPS) and meet at the rendezvous.
    out = _run(2, [f"timeout@{transport}"], timeout=300, env={"CCO_TIMEOUT_MS": "15000"})
    assert "PASS timeout" in out


# --- the ranks ---------------------------------------------------------------------------------

def _ints(shape, seed, dtype, device):
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(-2, 3, shape, generator=g).float().to(dtype).to(device)


def _mm(a, b, dtype):
    return (a.float() @ b.float()).to(dtype)


def _check(name, got, want, rank, comm=None):
    """Raises unless got equals want; with `comm`, the message also says what ops.check says of
    the calls so far (a call that gave up, or whose counts disagreed, leaves its rows void)."""
    import torch

    if got.dtype != want.dtype or not torch.equal(got.float(), want.float()):
        bad = (got.float() != want.float()).nonzero()
        verdict = ""
        if comm is not None:
            from cco import ops

            try:
                ops.check(comm)
                verdict = "; ops.check: every call clean"
            except Exception as e:  # what it raises is the report
                verdict = f"; ops.check: {e}"
        raise AssertionError(f"rank {rank}: {name}: {bad.shape[0]} of {want.numel()} elements differ, first at "
                             f"{bad[0].tolist()}: {got[tuple(bad[0])].item()} != {want[tuple(bad[0])].item()}"
                             f"{verdict}")
    print(f"ok {name} (rank {rank})", flush=True)  # where a stuck run stopped


def _splits(world, m, seed):
    import random

    rng = random.Random(seed)
    cuts = sorted(rng.randint(0, m) for _ in range(world - 1))
    return [b - a for a, b in zip([0] + cuts, cuts + [m])]


def _ops(transport):
    """cco.ops with every operator's transport= bound."""
    import functools
    import types

    from cco import ops

    names = ("gemm_ar", "gemm_rs", "ag_gemm", "gemm_ag", "gemm_a2a", "a2a_gemm")
    bound = {name: functools.partial(getattr(ops, name), transport=transport) for name in names}
    return types.SimpleNamespace(**bound, check=ops.check, symmetric_pool=ops.symmetric_pool,
                                 window_offset=ops.window_offset)


def case_ops(comm, rank, world, dev, dtypes, transport="lsa"):
    import torch

    ops = _ops(transport)

    shapes = [(256, 128, 512), (200, 96, 300), (3, 64, 256)]   # rows per rank, K, N
    for dtype in dtypes:
        out_dtype = torch.bfloat16 if dtype == torch.float8_e4m3fn else dtype
        for si, (m, k, n) in enumerate(shapes):
            seed = 1000 * si
            a_all = [_ints((m * world, k), seed + r, dtype, dev) for r in range(world)]       # M x K per rank
            b_all = [_ints((k, n), seed + 100 + r, dtype, dev) for r in range(world)]
            shard = [x[: m] for x in a_all]     # M/W x K
            # gemm_ar / gemm_rs: a is M x K/W (here K), partials rounded as the kernel rounds them
            partial = [_mm(a_all[r], b_all[r], out_dtype) for r in range(world)]
            total = sum(p.float() for p in partial).to(out_dtype)
            _check(f"gemm_ar {dtype} {m * world}x{k}x{n}", ops.gemm_ar(a_all[rank], b_all[rank], comm), total, rank)
            _check(f"gemm_rs {dtype}", ops.gemm_rs(a_all[rank], b_all[rank], comm), total[rank * m:(rank + 1) * m],
                   rank)
            gathered = torch.cat(shard)
            y, g = ops.ag_gemm(shard[rank], b_all[rank], comm, return_gathered=True)
            _check(f"ag_gemm {dtype}", y, _mm(gathered, b_all[rank], out_dtype), rank)
            _check(f"ag_gemm gathered {dtype}", g, gathered, rank)
            _check(f"ag_gemm {dtype} (no gathered)", ops.ag_gemm(shard[rank], b_all[rank], comm),
                   _mm(gathered, b_all[rank], out_dtype), rank)
            _check(f"gemm_ag {dtype}", ops.gemm_ag(shard[rank], b_all[0], comm),
                   torch.cat([_mm(s, b_all[0], out_dtype) for s in shard]), rank)
            # all-to-all: uneven splits, some empty, two patterns in a row, then out_splits given
            for pattern in range(2):
                splits = [_splits(world, m * world, seed + 7 * r + pattern) for r in range(world)]
                if world > 1 and pattern == 1:
                    splits[0] = [m * world] + [0] * (world - 1)
                recv = [splits[r][rank] for r in range(world)]

                def a2a(parts):
                    return torch.cat([parts[r][sum(splits[r][:rank]):sum(splits[r][:rank]) + splits[r][rank]]
                                      for r in range(world)])

                prods = [_mm(a_all[r], b_all[0], out_dtype) for r in range(world)]
                _check(f"gemm_a2a {dtype} {splits}", ops.gemm_a2a(a_all[rank], b_all[0], splits[rank], comm),
                       a2a(prods), rank)
                _check(f"a2a_gemm {dtype} {splits}", ops.a2a_gemm(a_all[rank], b_all[rank], splits[rank], comm),
                       _mm(a2a(a_all), b_all[rank], out_dtype), rank)
                _check(f"gemm_a2a out_splits {dtype}", ops.gemm_a2a(a_all[rank], b_all[0], splits[rank], comm,
                                                                    out_splits=recv), a2a(prods), rank)
            # b transposed (a row-parallel weight stored N x K) and out= given
            out = torch.empty(m * world, n, dtype=out_dtype, device=dev)
            bt = b_all[rank].t().contiguous().t()
            assert ops.gemm_ar(a_all[rank], bt, comm, out=out) is out
            _check(f"gemm_ar b transposed {dtype}", out, total, rank)
            if si == 0:
                # the gather kernel with b transposed, and a as a column block (read in place)
                wide = torch.cat([shard[rank], shard[rank]], 1)[:, :k]
                _check(f"ag_gemm b transposed, a a column block {dtype}",
                       ops.ag_gemm(wide, b_all[rank].t().contiguous().t(), comm), _mm(gathered, b_all[rank], out_dtype),
                       rank)
                # a that does not start on 16 bytes (copied first)
                off = torch.empty(m * k + 16, dtype=dtype, device=dev)[1:1 + m * k].view(m, k)
                off.copy_(shard[rank])
                _check(f"ag_gemm a off 16 bytes {dtype}", ops.ag_gemm(off, b_all[rank], comm),
                       _mm(gathered, b_all[rank], out_dtype), rank)
    ops.check(comm)
    print(f"PASS ops ({transport}) rank {rank}", flush=True)


def case_graph(comm, rank, world, dev, dtypes, transport="lsa"):
    """Each operator captured in one CUDA graph (after a first call), replayed with new inputs."""
    import torch

    ops = _ops(transport)

    m, k, n = 128, 64, 256
    dtype = torch.bfloat16
    a = _ints((m * world, k), rank, dtype, dev)
    b = _ints((k, n), 50 + rank, dtype, dev)
    shard = a[:m].clone()
    splits = [m * world // world] * world
    calls = {
        "gemm_ar": lambda: ops.gemm_ar(a, b, comm),
        "gemm_rs": lambda: ops.gemm_rs(a, b, comm),
        "ag_gemm": lambda: ops.ag_gemm(shard, b, comm),
        "gemm_ag": lambda: ops.gemm_ag(shard, b, comm),
        "gemm_a2a": lambda: ops.gemm_a2a(a, b, splits, comm),
        "a2a_gemm": lambda: ops.a2a_gemm(a, b, splits, comm),
    }
    for name, call in calls.items():
        eager = call()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            graph.capture_begin()
            captured = call()
            graph.capture_end()
        for step in range(3):
            for t, seed in ((a, 10 + step), (b, 20 + step), (shard, 30 + step)):
                t.copy_(_ints(tuple(t.shape), seed * 7 + rank, dtype, dev))
            torch.cuda.synchronize()
            comm.barrier()          # every rank's new inputs in place before any replay reads a peer's
            graph.replay()
            want = call()           # the same call, eager, on the same inputs
            torch.cuda.synchronize()
            _check(f"{name} graph replay {step}", captured, want, rank)
        del eager
    ops.check(comm)
    print(f"PASS graph ({transport}) rank {rank}", flush=True)


def case_pool(comm, rank, world, dev, dtypes, transport="lsa"):
    """Operands allocated in the symmetric pool: they live in a CCO window, and the results
    are those of ordinary tensors."""
    import torch

    ops = _ops(transport)

    pool = ops.symmetric_pool(comm, 64 << 20)
    m, k, n = 256, 128, 256
    with torch.cuda.use_mem_pool(pool):
        a = _ints((m, k), rank, torch.bfloat16, dev)
        b = _ints((k, n), 9, torch.bfloat16, dev)
    assert ops.window_offset(a) is not None and ops.window_offset(b) is not None
    shards = [_ints((m, k), r, torch.bfloat16, dev) for r in range(world)]
    _check("ag_gemm from the pool", ops.ag_gemm(a, b, comm), _mm(torch.cat(shards), b, torch.bfloat16), rank)
    ops.check(comm)
    print(f"PASS pool ({transport}) rank {rank}", flush=True)


def _replays_equal_lsa(comm, rank, dev, name, a, call, seed):
    """call("sdma") captured in a CUDA graph after an eager call, replayed 3 times with new
    rows in `a`, each result equal to call("lsa") on the same inputs."""
    import torch

    call("sdma")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(torch.cuda.Stream()):
        graph.capture_begin()
        captured = call("sdma")
        graph.capture_end()
    for step in range(3):
        a.copy_(_ints(tuple(a.shape), seed + step * 7 + rank, a.dtype, dev))
        torch.cuda.synchronize()
        comm.barrier()
        graph.replay()
        want = call("lsa")
        torch.cuda.synchronize()
        _check(f"{name} sdma graph replay {step}", captured, want, rank)


def case_sdma(comm, rank, world, dev, dtypes):
    """transport="sdma" (CCO_ENABLE_SDMA=1): ag_gemm's shard from an ordinary tensor (staged)
    and from the pool (read in place), the gathered rows, gemm_ag, the all-to-all pair with
    splits that change from call to call (empty ones too), the reduce pair (a partial last tile
    row at 200 rows a rank), several calls in a row, and each in a CUDA graph replayed with new
    inputs."""
    import torch

    from cco import ops

    pool = ops.symmetric_pool(comm, 64 << 20)
    for dtype in dtypes:
        out_dtype = torch.bfloat16 if dtype == torch.float8_e4m3fn else dtype
        for m, k, n in ((256, 128, 512), (200, 96, 300)):
            shards = [_ints((m, k), 7 * r + m, dtype, dev) for r in range(world)]
            b = _ints((k, n), 3 + rank, dtype, dev)
            b_same = _ints((k, n), 4, dtype, dev)
            with torch.cuda.use_mem_pool(pool):
                pooled = shards[rank].clone()
            want = _mm(torch.cat(shards), b, out_dtype)
            for call in range(3):
                y, g = ops.ag_gemm(shards[rank], b, comm, transport="sdma", return_gathered=True)
                _check(f"ag_gemm sdma {dtype} {m}x{k}x{n} call {call}", y, want, rank)
                _check(f"ag_gemm sdma gathered {dtype} call {call}", g, torch.cat(shards), rank)
                _check(f"ag_gemm sdma from the pool {dtype} call {call}",
                       ops.ag_gemm(pooled, b, comm, transport="sdma"), want, rank)
                _check(f"gemm_ag sdma {dtype} call {call}", ops.gemm_ag(shards[rank], b_same, comm, transport="sdma"),
                       torch.cat([_mm(s, b_same, out_dtype) for s in shards]), rank)
            # the reduce pair: a is M x K/W (here K), partials rounded as the kernel rounds them
            a_red = [_ints((m * world, k), 13 * r + m, dtype, dev) for r in range(world)]
            b_red = [_ints((k, n), 17 + r, dtype, dev) for r in range(world)]
            total = sum(_mm(a_red[r], b_red[r], out_dtype).float() for r in range(world)).to(out_dtype)
            for call in range(3):
                _check(f"gemm_ar sdma {dtype} {m * world}x{k}x{n} call {call}",
                       ops.gemm_ar(a_red[rank], b_red[rank], comm, transport="sdma"), total, rank)
                _check(f"gemm_rs sdma {dtype} call {call}",
                       ops.gemm_rs(a_red[rank], b_red[rank], comm, transport="sdma"), total[rank * m:(rank + 1) * m],
                       rank)
            # the all-to-all pair: a new split each call, so a wait counts from what the calls before landed
            a_all = [_ints((m, k), 11 * r + m, dtype, dev) for r in range(world)]
            for call in range(4):
                splits = [_splits(world, m, 31 * call + r) for r in range(world)]
                if world > 1 and call == 1:
                    splits[0] = [m] + [0] * (world - 1)
                recv = [splits[r][rank] for r in range(world)]
                moved = torch.cat([a_all[r][sum(splits[r][:rank]):sum(splits[r][:rank]) + splits[r][rank]]
                                   for r in range(world)])
                _check(f"a2a_gemm sdma {dtype} {splits} call {call}",
                       ops.a2a_gemm(a_all[rank], b, splits[rank], comm, out_splits=recv, transport="sdma"),
                       _mm(moved, b, out_dtype), rank, comm)
                prods = [_mm(a_all[r], b_same, out_dtype) for r in range(world)]
                _check(f"gemm_a2a sdma {dtype} {splits} call {call}",
                       ops.gemm_a2a(a_all[rank], b_same, splits[rank], comm, out_splits=recv, transport="sdma"),
                       torch.cat([prods[r][sum(splits[r][:rank]):sum(splits[r][:rank]) + splits[r][rank]]
                                  for r in range(world)]), rank, comm)
    a = _ints((128, 64), rank, torch.bfloat16, dev)
    b = _ints((64, 256), 1, torch.bfloat16, dev)
    splits = [_splits(world, 128, 5 + r) for r in range(world)]
    recv = [splits[r][rank] for r in range(world)]
    # Each captured once, replayed with new rows against the same call over LSA (the copies of
    # the replays counted on the device).
    _replays_equal_lsa(comm, rank, dev, "ag_gemm", a, lambda t: ops.ag_gemm(a, b, comm, transport=t), 40)
    _replays_equal_lsa(comm, rank, dev, "a2a_gemm", a,
                       lambda t: ops.a2a_gemm(a, b, splits[rank], comm, out_splits=recv, transport=t), 70)
    _replays_equal_lsa(comm, rank, dev, "gemm_a2a", a,
                       lambda t: ops.gemm_a2a(a, b, splits[rank], comm, out_splits=recv, transport=t), 90)
    b_own = _ints((64, 256), 2 + rank, torch.bfloat16, dev)   # the reduce pair: every rank its own b
    a_rows = _ints((128 * world, 64), rank, torch.bfloat16, dev)
    _replays_equal_lsa(comm, rank, dev, "gemm_ar", a_rows, lambda t: ops.gemm_ar(a_rows, b_own, comm, transport=t), 110)
    _replays_equal_lsa(comm, rank, dev, "gemm_rs", a_rows, lambda t: ops.gemm_rs(a_rows, b_own, comm, transport=t), 130)
    ops.check(comm)
    print(f"PASS sdma rank {rank}", flush=True)


def case_errors(comm, rank, world, dev, dtypes):
    """Bad operands: refused on this rank, before any kernel, with the reason."""
    import torch

    from cco import ops

    a = torch.ones(8, 4, device=dev, dtype=torch.bfloat16)
    bad = [
        (lambda: ops.gemm_ar(a, torch.ones(5, 4, device=dev, dtype=torch.bfloat16), comm), "a's columns"),
        (lambda: ops.gemm_ar(a, torch.ones(4, 4, device=dev, dtype=torch.float16), comm), "both must be the same"),
        (lambda: ops.gemm_ar(a.float(), torch.ones(4, 4, device=dev), comm), "a is float32"),
        (lambda: ops.gemm_a2a(a, torch.ones(4, 4, device=dev, dtype=torch.bfloat16), [1] * (world + 1), comm),
         "entries"),
        (lambda: ops.gemm_ar(a.cpu(), torch.ones(4, 4, dtype=torch.bfloat16), comm), "on the communicator's GPU"),
        (lambda: ops.ag_gemm(a, torch.ones(4, 4, device=dev, dtype=torch.bfloat16), comm, transport="nvlink"),
         "choose one of"),
        (lambda: ops.gemm_ar(a, torch.ones(4, 4, device=dev, dtype=torch.bfloat16), comm,
                             out=torch.empty(33, device=dev, dtype=torch.bfloat16)[1:].view(8, 4)),
         "16-byte boundary"),
    ]
    if world > 1:
        bad.append((lambda: ops.gemm_rs(torch.ones(world + 1, 4, device=dev, dtype=torch.bfloat16),
                                        torch.ones(4, 4, device=dev, dtype=torch.bfloat16), comm), "not a multiple"))
    for call, text in bad:
        try:
            call()
        except (ValueError, TypeError) as e:
            assert text in str(e), f"{text!r} not in {e}"
        else:
            raise AssertionError(f"accepted: {text}")
    print(f"PASS errors rank {rank}", flush=True)


def case_split(comm, rank, world, dev, dtypes):
    """`cco perf --suites ops`'s CCO split (the GEMM, then or after it the collective as a CCO
    kernel) equals the operator, twice in a row with new inputs (its barriers reused), for
    every operator with equal shards."""
    import torch

    from cco import ops
    from cco.ops.context import OpsContext
    from cco_tools.perf.kernels.lsa import max_programs
    from cco_tools.perf.kernels.ops_split import COLLECTIVES, Split

    m, k, n = 128 * world, 128, 384
    split = Split(comm, m * max(k, n) * 2, max_programs(OpsContext.of(comm).ranks_per_gpu))
    for op in COLLECTIVES:
        for step in range(2):
            a = _ints((m, k), 10 * step + rank, torch.bfloat16, dev)
            b = _ints((k, n), 77 + step + rank, torch.bfloat16, dev)
            got = split.call(op, a, b)().clone()
            split.check()   # every barrier of the exchange met its peers
            args = (a, b, [m // world] * world, comm) if "a2a" in op else (a, b, comm)
            _check(f"split {op} step {step}", got, getattr(ops, op)(*args), rank)
            # Every rank's operator done before any split kernel starts: ranks sharing a GPU, a
            # split kernel waiting at its barriers could hold the SMs a peer's operator needs.
            ops.check(comm)
            comm.barrier()
    split.close()
    print(f"PASS split rank {rank}", flush=True)


def case_timeout(comm, rank, world, dev, dtypes, transport=None):
    """Rank 1 skips a call its peers make: their kernel gives up (CCO_TIMEOUT_MS) and
    ops.check raises on them; nobody hangs. Last of a run: it ends the communicator."""
    import time

    import torch

    from cco import ops
    from cco.errors import CCOTimeoutError

    a = _ints((128, 64), rank, torch.bfloat16, dev)
    b = _ints((64, 256), 1, torch.bfloat16, dev)
    over = {"transport": transport} if transport else {}
    ops.gemm_ag(a, b, comm, **over)    # made together: the plan
    torch.cuda.synchronize()
    comm.barrier()
    start = time.monotonic()
    if rank != 1:
        ops.gemm_ag(a, b, comm, **over)
        try:
            ops.check(comm)
        except CCOTimeoutError:
            took, bound = time.monotonic() - start, int(os.environ["CCO_TIMEOUT_MS"]) / 1000
            # The waits read the GPU's clock: the bound itself, plus the launch and the check.
            assert bound <= took <= bound + 5, f"gave up after {took:.1f} s, CCO_TIMEOUT_MS being {bound:.0f} s"
            print(f"PASS timeout rank {rank}: gave up after {took:.1f} s", flush=True)
        else:
            raise AssertionError("the call did not give up")
    else:
        # Its peers reach the barrier once their waits gave up (CCO_TIMEOUT_MS): this rank waits
        # that long first, or its own barrier could end on the same bound.
        time.sleep(int(os.environ["CCO_TIMEOUT_MS"]) / 1000)
        print(f"PASS timeout rank {rank} (the one that never called)", flush=True)
    comm.barrier()
    comm.abort()   # the ranks' calls are out of step now: no collective teardown


def _chosen(dtypes, only):
    """The dtypes CCO_TEST_OPS_DTYPES names (comma-separated torch names: bfloat16,float16,
    float8_e4m3fn), all where it is unset: a short run after a kernel change (bf16 alone compiles
    a third of the kernels). A name this GPU has no dtype for is an error, not a silent skip."""
    if not only:
        return dtypes
    names = {str(d).split(".")[-1]: d for d in dtypes}
    asked = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in asked if n not in names]
    if unknown or not asked:
        raise SystemExit(f"CCO_TEST_OPS_DTYPES={only!r}: name some of {', '.join(names)} (this GPU's)")
    return [names[n] for n in asked]


def main(cases):
    import torch

    from cco import Communicator
    from cco.runtime import bootstrap

    rank, world, uid = bootstrap()
    # A rank stuck for two minutes prints its stacks (compiling, in a kernel's synchronise, or
    # in a CCO call), so that a hang says where it is.
    faulthandler.dump_traceback_later(120, repeat=True)
    dev = torch.device("cuda", torch.cuda.current_device())
    dtypes = [torch.bfloat16, torch.float16]
    if torch.cuda.get_device_capability()[0] >= 9 and not getattr(torch.version, "hip", None):
        dtypes.append(torch.float8_e4m3fn)
    dtypes = _chosen(dtypes, os.environ.get("CCO_TEST_OPS_DTYPES"))
    comm = Communicator.init(world, rank, uid)
    try:
        for case in cases or CASES[:-1]:
            name, _, transport = case.partition("@")   # "ops@gda": the case over another transport
            over = {"transport": transport} if transport else {}
            globals()[f"case_{name}"](comm, rank, world, dev, dtypes, **over)
    except BaseException:
        comm.abort()
        raise
    finally:
        comm.destroy()


if __name__ == "__main__":
    main(sys.argv[1:])
