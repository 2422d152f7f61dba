# SPDX-License-Identifier: MIT
"""LSA on the GPU with ranks as threads of this process (one communicator and stream
each, kernels running at once): the guide's lsa_copy, the one-shot all-reduce and the LSA
barrier with 2, 4 and 8 ranks, exact results; 100 000 barrier rounds; a barrier whose
peer never arrives times out, and one that waits forever ends on ccoCommAbort."""

import importlib.util
import os
import threading

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from cco_tools.perf.ranks import RankGroup
from cco.ir.triton import cco
from kernels import globaltimer_ns
from cco_tools.perf.kernels import lsa as K
from cco_tools.perf.kernels import lsa_push as P

RANKS = [2, 4, 8]
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "triton")


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Watchdog:
    """Aborts every communicator of a group if a test runs past its time: a hung barrier
    then ends with ABORTED and the test fails instead of hanging."""

    def __init__(self, group, seconds):
        self.fired = False
        self.seconds = seconds

        def fire():
            self.fired = True
            for rk in group.ranks:
                rk.comm.abort()

        self.timer = threading.Timer(seconds, fire)

    def __enter__(self):
        self.timer.start()

    def __exit__(self, *exc):
        self.timer.cancel()
        assert not self.fired, f"the kernels did not finish within {self.seconds} s (aborted)"


@pytest.fixture(params=RANKS, ids=lambda n: f"{n}ranks")
def group(request):
    g = RankGroup(request.param, window_bytes=8 << 20, barriers=64)
    yield g
    g.close()


def test_lsa_copy_ring(group):
    lsa_copy = load_example("lsa_copy").lsa_copy
    n, N = len(group.ranks), 256
    for rk in group.ranks:
        rk.view(rk.rank, 0, 2 * N, torch.int32)[:N].copy_(
            torch.arange(N, dtype=torch.int32, device=f"cuda:{rk.device}") + rk.rank * 1000)
    group.sync()
    group.run_once({r: (lambda rk=rk: lsa_copy[(1,)](rk.dc.ptr, rk.win.handle, peer=(rk.rank + 1) % n, N=N,
                                                    extern_libs=group.libs))
                    for r, rk in enumerate(group.ranks)})
    for rk in group.ranks:
        got = rk.view(rk.rank, 0, 2 * N, torch.int32)[N:]
        left = (rk.rank - 1) % n
        assert torch.equal(got, torch.arange(N, dtype=torch.int32, device=got.device) + left * 1000), rk.rank


def _allreduce_inputs(group, count):
    """Each rank's input (in its window at offset 0) and an output filled with -1."""
    outs = []
    for rk in group.ranks:
        rk.view(rk.rank, 0, count, torch.float32).copy_(
            torch.arange(count, device=f"cuda:{rk.device}", dtype=torch.float32) % 113 + 10 * rk.rank)
        outs.append(torch.full((count,), -1.0, device=f"cuda:{rk.device}"))
    group.sync()
    return outs


def _assert_summed(outs, count):
    n = len(outs)
    want = (torch.arange(count, dtype=torch.float32) % 113) * n + 10 * sum(range(n))
    for r, out in enumerate(outs):
        assert torch.equal(out.cpu(), want), f"rank {r}"


@pytest.mark.parametrize("count", [1000, 1 << 18])
def test_oneshot_allreduce(group, count):
    n = len(group.ranks)
    outs = _allreduce_inputs(group, count)
    grid = (min(triton.cdiv(count, 1024), K.max_programs(n), 64),)
    with Watchdog(group, 60):
        group.run_once({r: (lambda r=r, rk=rk: K.oneshot_allreduce[grid](
            rk.dc.ptr, rk.win.handle, outs[r], count, 3, NRANKS=n, BLOCK=1024, extern_libs=group.libs))
            for r, rk in enumerate(group.ranks)})
    _assert_summed(outs, count)


@pytest.mark.parametrize("pdl", [False, True], ids=["", "pdl"])
@pytest.mark.parametrize("count", [1000, 2048, 1 << 18, (1 << 18) + 3])
def test_twoshot_allreduce(group, count, pdl):
    """The two-shot sums exactly, 3 calls in a row (each call's stores wait for every rank to
    have copied the last call's result out), at sizes that leave a rank's chunk empty, ragged
    or whole, through the class as perf calls it; with programmatic dependent launch too."""
    n = len(group.ranks)
    outs = _allreduce_inputs(group, count)
    programs = min(K.max_programs(n), 64)
    calls = [K.TwoShotAllReduce(rk.dc, rk.win, outs[r], count, n, programs, group.libs, pdl=pdl)
             for r, rk in enumerate(group.ranks)]
    with Watchdog(group, 60):
        for _ in range(3):
            group.run_once({r: calls[r] for r in range(n)})
    _assert_summed(outs, count)


@pytest.mark.parametrize("pdl", [False, True], ids=["", "pdl"])
@pytest.mark.parametrize("count", [1000, 2048, 1 << 16, (1 << 16) + 3])
def test_push_allreduce(group, count, pdl):
    """The barrier-free one-shot sums exactly, 7 calls in a row (each of the three receive
    buffers filled and cleared twice) with new inputs every call, -0.0 among them, at sizes
    that fill whole blocks or not; every rank gets the same bits. With programmatic dependent
    launch, each call starts while the copy of its input (the kernel before it) still runs."""
    n = len(group.ranks)
    programs = min(K.max_programs(n), 64)
    outs = [torch.full((count,), -1.0, device=f"cuda:{rk.device}") for rk in group.ranks]
    calls = {}
    group.run_once({r: (lambda r=r, rk=rk: calls.__setitem__(
        r, P.PushAllReduce(rk.dc, rk.win, outs[r], count, n, programs, group.libs, pdl=pdl)))
        for r, rk in enumerate(group.ranks)})
    base = torch.arange(count, dtype=torch.float32) % 113
    for c in range(7):
        inputs = []
        for rk in group.ranks:
            x = base + 10 * rk.rank + 1000 * c
            x[::97] = -0.0
            rk.view(rk.rank, 0, count, torch.float32).copy_(x.to(f"cuda:{rk.device}"))
            inputs.append(x)
        group.sync()
        with Watchdog(group, 60):
            group.run_once({r: calls[r] for r in range(n)})
        want = torch.zeros(count)
        for x in inputs:
            want = want + x
        for r, out in enumerate(outs):
            assert torch.equal(out.cpu(), want), f"call {c}, rank {r}"
    for call in calls.values():
        call.check()


@triton.jit
def _late_copy(src, dst, n, DELAY_NS: tl.constexpr, BLOCK: tl.constexpr):
    """Launched with PDL: lets the next kernel start at once, waits for the one before, idles
    DELAY_NS, then copies n floats src -> dst. Before an all-reduce it writes the input late;
    after one it copies the result out."""
    gdc_launch_dependents()
    gdc_wait()
    start = globaltimer_ns()
    now = start
    while now - start < DELAY_NS:
        now = globaltimer_ns()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


def test_pdl_allreduces_wait_for_the_kernel_before():
    """Under programmatic dependent launch an all-reduce may start while the kernel before it
    runs. Here that kernel lets it start at once and writes the input 20 us later; the kernel
    after it (PDL too) copies the result out. 5 calls of each all-reduce with a new input each,
    then 3 calls back to back; eager, then captured and replayed from a CUDA graph (results
    cleared in between): every result exact. An all-reduce that read before its wait would
    see the previous call's input."""
    g = RankGroup(2, window_bytes=8 << 20, barriers=64)
    try:
        n, count, calls, BLOCK = 2, 1 << 16, 5, 1024
        programs = min(K.max_programs(n), 64)
        grid = (triton.cdiv(count, BLOCK),)
        inputs = [[(torch.arange(count, device=f"cuda:{rk.device}") % 113 + 10 * rk.rank + 1000 * c).float()
                   for c in range(calls)] for rk in g.ranks]
        want = [sum(inputs[r][c].cpu() for r in range(n)) for c in range(calls)]
        for make in (K.OneShotAllReduce, K.TwoShotAllReduce, P.PushAllReduce):
            outs = [torch.zeros(count, device=f"cuda:{rk.device}") for rk in g.ranks]
            results = [[torch.zeros(count, device=f"cuda:{rk.device}") for _ in range(calls + 1)] for rk in g.ranks]
            kernels = {}
            g.run_once({r: (lambda r=r, rk=rk: kernels.__setitem__(
                r, make(rk.dc, rk.win, outs[r], count, n, programs, g.libs, pdl=True)))
                for r, rk in enumerate(g.ranks)})
            # Every binary loaded before any kernel waits for a peer: loading one while a
            # peer's kernel spins can wait for that kernel, which waits for this rank.
            for delay in (20000, 0):
                g.run_once({r: (lambda r=r, delay=delay: _late_copy[grid](inputs[r][0], results[r][0], count,
                                                                          DELAY_NS=delay, BLOCK=BLOCK, launch_pdl=True))
                            for r in range(n)})
            g.run_once({r: kernels[r] for r in range(n)})

            def sequence(r, rk):
                window_input = rk.view(rk.rank, 0, count, torch.float32)
                for c in range(calls):
                    _late_copy[grid](inputs[r][c], window_input, count, DELAY_NS=20000, BLOCK=BLOCK, launch_pdl=True)
                    kernels[r]()
                    _late_copy[grid](outs[r], results[r][c], count, DELAY_NS=0, BLOCK=BLOCK, launch_pdl=True)
                for _ in range(3):  # back to back: each reads what the one before left (turns, epochs)
                    kernels[r]()
                _late_copy[grid](outs[r], results[r][calls], count, DELAY_NS=0, BLOCK=BLOCK, launch_pdl=True)

            def check(how):
                for r in range(n):
                    for c in range(calls + 1):
                        got = results[r][c].cpu()
                        assert torch.equal(got, want[min(c, calls - 1)]), f"{make.__name__} {how}: rank {r}, call {c}"
                        results[r][c].zero_()
                g.sync()

            with Watchdog(g, 60):
                g.run_once({r: (lambda r=r, rk=rk: sequence(r, rk)) for r, rk in enumerate(g.ranks)})
            check("eager")
            graphs = {}
            for r, rk in enumerate(g.ranks):
                graphs[r] = torch.cuda.CUDAGraph()
                with torch.cuda.device(rk.device), torch.cuda.graph(graphs[r], stream=rk.stream):
                    sequence(r, rk)
            g.sync()
            with Watchdog(g, 60):
                for r, rk in enumerate(g.ranks):
                    with torch.cuda.device(rk.device), torch.cuda.stream(rk.stream):
                        graphs[r].replay()
                g.sync()
            check("replayed")
            if make is P.PushAllReduce:
                for k in kernels.values():
                    k.check()
    finally:
        g.close()


def test_graph_allreduces_capture_on_their_own_device():
    """graph=True: the first call captures the launch and every call replays it. With ranks as
    threads on several GPUs each rank captures on a stream of its own device (torch's default
    capture stream belongs to whichever device captured first: another GPU's capture there
    came out empty and its replays did nothing). 4 calls with a new input each: exact."""
    g = RankGroup(2, window_bytes=8 << 20, barriers=64)
    try:
        n, count, calls = 2, 1 << 14, 4
        programs = min(K.max_programs(n), 64)
        for make in (K.OneShotAllReduce, K.TwoShotAllReduce, P.PushAllReduce):
            outs = [torch.zeros(count, device=f"cuda:{rk.device}") for rk in g.ranks]
            kernels = {}
            g.run_once({r: (lambda r=r, rk=rk: kernels.__setitem__(
                r, make(rk.dc, rk.win, outs[r], count, n, programs, g.libs, graph=True)))
                for r, rk in enumerate(g.ranks)})
            for c in range(calls):
                def values(rank, c=c, device="cpu"):
                    return (torch.arange(count, device=device) % 97 + 100 * rank + 10000 * c).float()

                want = sum(values(r) for r in range(n))

                def call(r, rk):  # on the rank's stream: the input, then the all-reduce
                    rk.view(rk.rank, 0, count, torch.float32).copy_(values(rk.rank, device=f"cuda:{rk.device}"))
                    outs[r].zero_()
                    kernels[r]()

                with Watchdog(g, 60):
                    g.run_once({r: (lambda r=r, rk=rk: call(r, rk)) for r, rk in enumerate(g.ranks)})
                for r in range(n):
                    assert torch.equal(outs[r].cpu(), want), f"{make.__name__}: rank {r}, call {c}"
                g.sync()
            if make is P.PushAllReduce:
                for k in kernels.values():
                    k.check()
    finally:
        g.close()


def test_push_allreduce_ends_on_abort():
    """Rank 0 calls, rank 1 never does: the call ends once the communicator is aborted, and
    check() says so instead of returning a wrong sum quietly."""
    g = RankGroup(2, window_bytes=1 << 20, barriers=4)
    try:
        outs = [torch.zeros(1024, device="cuda") for _ in g.ranks]
        calls = {}
        g.run_once({r: (lambda r=r, rk=rk: calls.__setitem__(
            r, P.PushAllReduce(rk.dc, rk.win, outs[r], 1024, 2, 1, g.libs))) for r, rk in enumerate(g.ranks)})
        timer = threading.Timer(0.3, g.ranks[0].comm.abort)
        timer.start()
        g.run_once({0: calls[0]})
        timer.join()
        with pytest.raises(RuntimeError, match="gave up waiting"):
            calls[0].check()
    finally:
        for rk in g.ranks:  # rank 0 is aborted: tear both down locally
            rk.comm.abort()
        g.close()


@pytest.mark.parametrize("kind", ["two-shot", "push"])
def test_allreduce_refuses_a_window_too_small(group, kind):
    """The kernels whose window holds more than the input say how much they need."""
    rk = group.ranks[0]
    out = torch.empty(1 << 21, device=f"cuda:{rk.device}")
    make = K.TwoShotAllReduce if kind == "two-shot" else P.PushAllReduce
    with pytest.raises(ValueError, match="needs a window of"):
        make(rk.dc, rk.win, out, 1 << 21, len(group.ranks), 1, group.libs)


@pytest.mark.parametrize("order", ["default", "ACQUIRE", "RELAXED"])
def test_barrier_100000_rounds(group, order):
    ordered = -1 if order == "default" else getattr(cco.MemoryOrder, order)
    status = [torch.full((1,), -1, dtype=torch.int32, device=f"cuda:{rk.device}") for rk in group.ranks]
    with Watchdog(group, 120):
        group.run_once({r: (lambda rk=rk, r=r: K.barrier_loop[(1,)](rk.dc.ptr, 100000, status[r],
                                                                    COOP=cco.CoopScope.BLOCK, ORDER=ordered,
                                                                    extern_libs=group.libs))
                        for r, rk in enumerate(group.ranks)})
    assert [int(s.item()) for s in status] == [0] * len(group.ranks)


def test_barrier_per_program_and_warp_scope(group):
    """16 programs, each on its own barrier index, with coop=WARP (one-warp programs)."""
    status = [torch.full((16,), -1, dtype=torch.int32, device=f"cuda:{rk.device}") for rk in group.ranks]
    with Watchdog(group, 60):
        group.run_once({r: (lambda rk=rk, r=r: K.barrier_loop[(16,)](rk.dc.ptr, 2000, status[r],
                                                                     COOP=cco.CoopScope.WARP, num_warps=1,
                                                                     extern_libs=group.libs))
                        for r, rk in enumerate(group.ranks)})
    assert all(s.tolist() == [0] * 16 for s in status), [s.tolist() for s in status]


def test_barrier_timeout_when_a_peer_never_arrives():
    g = RankGroup(2, window_bytes=1 << 20, barriers=4)
    try:
        status = torch.full((1,), -1, dtype=torch.int32, device="cuda")
        with Watchdog(g, 30):
            g.run_once({0: lambda: K.barrier_timeout[(1,)](g.ranks[0].dc.ptr, 50_000_000, status,
                                                           COOP=cco.CoopScope.BLOCK, extern_libs=g.libs)})
        assert int(status.item()) == 1  # CCO_DEVICE_STATUS_TIMEOUT
    finally:
        g.close()


def test_barrier_ends_on_abort():
    g = RankGroup(2, window_bytes=1 << 20, barriers=4)
    try:
        status = torch.full((1,), -1, dtype=torch.int32, device="cuda")
        timer = threading.Timer(0.3, g.ranks[0].comm.abort)
        timer.start()
        g.run_once({0: lambda: K.barrier_loop[(1,)](g.ranks[0].dc.ptr, 1, status, COOP=cco.CoopScope.BLOCK,
                                                    extern_libs=g.libs)})
        timer.join()
        assert int(status.item()) == 2  # CCO_DEVICE_STATUS_ABORTED
    finally:
        for rk in g.ranks:  # rank 0 is aborted: tear both down locally
            rk.comm.abort()
        g.close()
