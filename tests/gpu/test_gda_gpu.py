# SPDX-License-Identifier: MIT
"""GDA on the GPU through Triton, the proxy and its local backend: a put with a signal around
a ring of ranks, exact data; a signal ping-pong and a put+signal ping-pong between two ranks
(round-trip times printed, not asserted: `cco perf` reports figures); puts a warp or block
copies itself, around the group bound of the direct path; gets of every size around both
bounds, direct, through the proxy and over tcp; the matrix op x coop x thread mode x signal
action x doorbell mode, in one LSA team and across two virtual nodes. Ranks as threads on one
GPU (FULL connections), as two processes on one GPU (under MPS when it runs) and as one
process per GPU (skipped with fewer than two GPUs)."""

import multiprocessing as mp
import os
import threading
import time
import traceback

import pytest
import torch
import triton
import triton.language as tl

from cco.ir.triton import cco
from kernels import MATRIX_BYTES, MATRIX_DST, get_then_flush, globaltimer_ns, matrix_cell, matrix_cells, \
    matrix_constexprs

N = 1024  # int32 per put


# Runtime integers stay unspecialised: a value of 1 or a multiple of 16 would otherwise
# compile (and load) a new variant inside a timed or waiting run.
@triton.jit(do_not_specialize=["peer", "active"])
def put_ring(dc, win, status, peer, active, N: tl.constexpr):
    """Puts this rank's first N words into `peer`'s second N with signal 0 += 1, waits for
    its own signal, flushes; status[0..2] = the three statuses. active == 0: only stores
    zeros (a warm-up that loads the kernel and waits on no one)."""
    s0 = 0
    s1 = 0
    s2 = 0
    if active != 0:
        s0 = cco.Gda.put(dc, 0, peer, win, N * 4, win, 0, N * 4, 0, 1, coop=cco.CoopScope.BLOCK,
                         thread_mode=cco.ThreadMode.INDEPENDENT, signal_op=cco.SignalOp.INC)
        s1 = cco.Gda.wait_signal(dc, 0, 0, 1, 64, coop=cco.CoopScope.BLOCK)
        s2 = cco.Gda.flush(dc, 0, coop=cco.CoopScope.BLOCK)
    tl.store(status + 0, s0)
    tl.store(status + 1, s1)
    tl.store(status + 2, s2)


@triton.jit(do_not_specialize=["peer", "rounds", "first"])
def ping_pong(dc, win, status, times, peer, rounds, first, WITH_DATA: tl.constexpr):
    """`rounds` round trips on signal 1: the first rank posts then waits, the other waits then
    answers. WITH_DATA: an 8-byte put carries the signal; else a signal alone. times[0] = ns
    spent posting, times[1] = ns spent waiting (where a round trip's time goes)."""
    bad = 0
    posting = tl.zeros((), dtype=tl.int64)
    waiting = tl.zeros((), dtype=tl.int64)
    for i in range(rounds):
        t0 = globaltimer_ns()
        if first == 0:
            bad += cco.Gda.wait_signal(dc, 0, 1, 1, 64, coop=cco.CoopScope.BLOCK)
        t1 = globaltimer_ns()
        if WITH_DATA:
            bad += cco.Gda.put(dc, 0, peer, win, 64, win, 0, 8, 1, 1, coop=cco.CoopScope.BLOCK,
                               thread_mode=cco.ThreadMode.INDEPENDENT, signal_op=cco.SignalOp.INC)
        else:
            bad += cco.Gda.signal(dc, 0, peer, 1, 1, coop=cco.CoopScope.BLOCK, signal_op=cco.SignalOp.INC)
        t2 = globaltimer_ns()
        if first == 1:
            bad += cco.Gda.wait_signal(dc, 0, 1, 1, 64, coop=cco.CoopScope.BLOCK)
        t3 = globaltimer_ns()
        posting += t2 - t1
        waiting += (t1 - t0) + (t3 - t2)
    bad += cco.Gda.flush(dc, 0, coop=cco.CoopScope.BLOCK)
    tl.store(status, bad)
    tl.store(times + 0, posting)
    tl.store(times + 1, waiting)


@triton.jit
def scribble_descriptor(slots, head_word, depth):
    """Writes into a ring, past every check the device makes, what its proxy must refuse: a
    complete put_value descriptor into window 0x7fffffff at the ring's head, and takes the
    ticket (one warp: every lane stores the same words)."""
    head_ptr = head_word.to(tl.pointer_type(tl.uint64))
    head = tl.load(head_ptr)
    desc = (slots + (head & (depth - 1)) * 64).to(tl.pointer_type(tl.uint64))
    tl.store(desc + 1, 2)            # op PUT_VALUE, no signal
    tl.store(desc + 2, 0x7FFFFFFF)   # dstWindow: no window has this id
    tl.store(desc + 3, 0)
    tl.store(desc + 4, 0)
    tl.store(desc + 5, 8)            # bytes
    tl.store(desc + 6, 0)
    tl.store(desc + 7, 0)
    tl.atomic_xchg(desc, head + 1, sem="release", scope="sys")  # seq: complete
    tl.store(head_ptr, head + 1)


@triton.jit(do_not_specialize=["peer", "bad_id"])
def refused_then_flush(dc, status, peer, bad_id, BLOCK: tl.constexpr):
    """A flush with coop=BLOCK of the ring `scribble_descriptor` wrote into: it rings the
    descriptor, the proxy refuses it and fails the ring. Each thread stores what its own
    flush returned: status[t] is thread t's. (bad_id, a signal id out of range, is refused by
    the device, posting nothing: it must return INVALID_ARGUMENT.)"""
    refused = cco.Gda.signal(dc, 0, peer, bad_id, 1, coop=cco.CoopScope.BLOCK, signal_op=cco.SignalOp.INC)
    flushed = cco.Gda.flush(dc, 0, coop=cco.CoopScope.BLOCK)
    flushed = tl.where(refused == 3, flushed, 99)  # 99: the bad signal id was not refused
    tl.store(status + tl.arange(0, BLOCK), tl.zeros([BLOCK], dtype=tl.int32) + flushed)


@triton.jit(do_not_specialize=["peer", "rounds"])
def barrier_rounds(dc, win, mine, status, peer, rounds):
    """`rounds` GDA barrier rounds, each after an 8-byte put_value of the round number into
    slot (round % 2) of `peer` (the barrier orders it): after round k this rank's slot k % 2
    holds k + 1 exactly (the peer cannot write that slot again before this rank's next
    round). status = failed calls plus wrong slots."""
    bad = 0
    for k in range(rounds):
        bad += cco.Gda.put_value(dc, 0, peer, win, 64 + 8 * (k % 2), k + 1, 0, 0, coop=cco.CoopScope.BLOCK,
                                 signal_op=cco.SignalOp.NONE)
        bad += cco.Gda.barrier_sync(dc, 0, 0, coop=cco.CoopScope.BLOCK)
        bad += (tl.load(mine + 8 + k % 2, volatile=True) != k + 1).to(tl.int32)
    tl.store(status, bad)


@triton.jit(do_not_specialize=["peer", "dst", "nbytes"])
def put_then_wait(dc, win, status, peer, dst, nbytes, COOP: tl.constexpr):
    """Puts this rank's first `nbytes` into `peer`'s window at `dst` with signal 2 += 1, waits
    for the peer's, flushes; status = failed calls. nbytes == 0: only loads the kernel."""
    bad = 0
    if nbytes != 0:
        bad += cco.Gda.put(dc, 0, peer, win, dst, win, 0, nbytes, 2, 1, coop=COOP,
                           thread_mode=cco.ThreadMode.INDEPENDENT, signal_op=cco.SignalOp.INC)
        bad += cco.Gda.wait_signal(dc, 0, 2, 1, 64, coop=COOP)
        bad += cco.Gda.flush(dc, 0, coop=COOP)
    tl.store(status, bad)


class Rank:
    """A rank with a GDA device communicator (FULL: every rank connected) and a window."""

    def __init__(self, rank, world, uid, device, device_sync=False):
        from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_FULL

        torch.cuda.set_device(device)
        torch.zeros(1, device=f"cuda:{device}")
        self.rank, self.world, self.device, self.device_sync = rank, world, device, device_sync
        self.comm = Communicator.init(world, rank, uid, per_rank_vmm=256 << 20)
        self.win = self.comm.alloc_window(1 << 20)
        reqs = CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_FULL, gda_context_count=1, lsa_barrier_count=1,
                                      gda_barrier_count=1)
        self.dc = self.comm.create_dev_comm(reqs)
        self.stream = torch.cuda.Stream(device=device)
        self.libs = cco.get_extern_libs()

    def view(self, count, dtype=torch.int32):
        from cco.memview import torch_view

        return torch_view(self.win.local_ptr, (count,), dtype, device=f"cuda:{self.device}")

    # Everything of a rank runs on its own stream and is waited for by that stream alone: a
    # synchronous operation on the legacy default stream, or a device-wide synchronise, while
    # another rank's kernel waits for a signal would stall the process's GDA proxies.
    def warm_up(self):
        """Loads both kernels while no kernel waits: loading a module while another rank's
        kernel spins on this GPU may wait for that kernel (CUDA's lazy-loading hazard)."""
        with torch.cuda.stream(self.stream):
            status = torch.full((3,), -1, dtype=torch.int32, device=f"cuda:{self.device}")
            times = torch.zeros(2, dtype=torch.int64, device=status.device)
            put_ring[(1,)](self.dc.ptr, self.win.handle, status, 0, 0, N=N, extern_libs=self.libs)
            for with_data in (False, True):
                ping_pong[(1,)](self.dc.ptr, self.win.handle, status, times, 0, 0, 0, WITH_DATA=with_data,
                                extern_libs=self.libs)
        self.stream.synchronize()
        self.comm.barrier()

    def ring(self):
        with torch.cuda.stream(self.stream):
            mine = self.view(2 * N)
            mine[:N] = torch.arange(N, dtype=torch.int32, device=mine.device) + self.rank * 1000
            mine[N:] = -1
            status = torch.full((3,), -1, dtype=torch.int32, device=mine.device)
        self.stream.synchronize()
        self.comm.barrier()
        with torch.cuda.stream(self.stream):
            put_ring[(1,)](self.dc.ptr, self.win.handle, status, (self.rank + 1) % self.world, 1, N=N,
                           extern_libs=self.libs)
        if self.device_sync:
            # A device-wide synchronise while other ranks' kernels wait on this rank's
            # proxy: the proxy only queues work on its own stream, so it is not held back.
            torch.cuda.synchronize(self.device)
        else:
            self.stream.synchronize()
        left = (self.rank - 1) % self.world
        self.comm.barrier()  # every rank's kernel is done before anyone reads on the host
        with torch.cuda.stream(self.stream):
            got_status = status.tolist()
            want = torch.arange(N, dtype=torch.int32, device=mine.device) + left * 1000
            same = torch.equal(mine[N:], want)
        assert got_status == [0, 0, 0], f"rank {self.rank}: statuses {got_status}"
        assert same, f"rank {self.rank}: wrong data from rank {left}"
        self.comm.barrier()

    def ping_pong(self, rounds, with_data):
        with torch.cuda.stream(self.stream):
            status = torch.full((1,), -1, dtype=torch.int32, device=f"cuda:{self.device}")
            times = torch.zeros(2, dtype=torch.int64, device=status.device)
        self.stream.synchronize()
        self.comm.barrier()
        start = time.perf_counter()
        with torch.cuda.stream(self.stream):
            ping_pong[(1,)](self.dc.ptr, self.win.handle, status, times, 1 - self.rank, rounds,
                            1 if self.rank == 0 else 0, WITH_DATA=with_data, extern_libs=self.libs)
        self.stream.synchronize()
        seconds = time.perf_counter() - start
        self.comm.barrier()
        with torch.cuda.stream(self.stream):
            got = int(status.item())
            posting, waiting = times.tolist()
        assert got == 0, f"rank {self.rank}: ping-pong status {got}"
        return seconds / rounds * 1e6, posting / rounds / 1e3, waiting / rounds / 1e3

    def close(self):
        self.comm.destroy()


def body(rank, world, uid, device, report, rounds=2000, device_sync=False):
    rk = Rank(rank, world, uid, device, device_sync)
    watchdog = threading.Timer(90, rk.comm.abort)  # a hung wait ends ABORTED, not never
    watchdog.start()
    try:
        rk.warm_up()
        rk.ring()
        rk.ring()  # the signal was consumed: a second round needs a second signal
        if world == 2:
            rk.ping_pong(50, False)  # warm-up: compile and settle
            sig = rk.ping_pong(rounds, False)
            data = rk.ping_pong(rounds, True)
            report[rank] = (sig, data)
    finally:
        watchdog.cancel()
        rk.close()


def _describe(figures):
    """Rank 0's view: per round trip, the total and the kernel's time posting and waiting."""
    (sig, sig_post, sig_wait), (data, data_post, data_wait) = figures
    return (f"signal round trip {sig:.2f} us (posting {sig_post:.2f}, waiting {sig_wait:.2f}); "
            f"8-byte put+signal round trip {data:.2f} us (posting {data_post:.2f}, waiting {data_wait:.2f})")


def _process(rank, world, uid, gpus, queue):
    os.environ["CCO_PLATFORM"] = "cuda"
    try:
        report = {}
        # Processes sharing a GPU time-slice without MPS: few rounds, then.
        body(rank, world, uid, rank % gpus, report, 2000 if gpus == world or _mps() else 50)
        print(f"rank {rank}: the main thread (and so the proxy) may run on {len(os.sched_getaffinity(0))} CPUs")
        queue.put((rank, "ok", report.get(rank)))
    except BaseException as e:
        queue.put((rank, f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}", None))


def _mps():
    """Whether an MPS server is reachable (then processes on one GPU run kernels at once)."""
    return os.path.exists(os.path.join(os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"), "control"))


@pytest.mark.parametrize("gpus", [1, 2])
def test_gda_one_process_per_rank(gpus):
    """Two processes, on one GPU (its ranks' memory imported from each other; kernels at once
    only under MPS) or one per GPU."""
    if torch.cuda.device_count() < gpus:
        pytest.skip(f"needs {gpus} GPUs")
    from cco import Communicator

    uid = Communicator.get_unique_id()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_process, args=(r, 2, uid, gpus, queue)) for r in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=240) for _ in range(2)]
    for p in procs:
        p.join(timeout=60)
    assert {r: s for r, s, _ in results} == {0: "ok", 1: "ok"}, results
    times = dict((r, t) for r, _, t in results)
    print(f"\nGDA on {gpus} GPU(s), processes{' (MPS)' if gpus == 1 and _mps() else ''}:", _describe(times[0]))


@pytest.mark.parametrize("sync", ["stream", "device"])
@pytest.mark.parametrize("world", [2, 4])
def test_gda_threads_on_one_gpu(world, sync):
    """Ranks as threads sharing GPU 0: their kernels run at once (one process, many streams);
    each waits for its ring kernel on its stream, or with a device-wide synchronise."""
    os.environ["CCO_PLATFORM"] = "cuda"
    from cco import Communicator

    uid = Communicator.get_unique_id()
    errors, report = {}, {}

    def run(rank):
        try:
            body(rank, world, uid, 0, report, device_sync=sync == "device")
        except BaseException as e:
            errors[rank] = f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"

    threads = [threading.Thread(target=run, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    assert errors == {}, errors
    if world == 2 and sync == "stream":
        print("\nGDA on 1 GPU, threads:", _describe(report[0]))


# Tests whose ranks hung in this process: their threads (daemons) and kernels may still hold
# the GPU, so later tests fail at once instead of waiting out their own bound behind them,
# and the process can still exit.
_HUNG = []
# What each rank was doing, for the message when one hangs (bodies set it).
_WHERE = {}


def _two_ranks_as_threads(body_of, aborted=False, seconds=120):
    """Runs body_of(rank, rk) for ranks 0 and 1 as threads on GPU 0; returns {rank: result}.
    aborted: a rank was aborted, so each tears its communicator down locally (abort first).
    A rank still running near the bound is aborted (its device waits end ABORTED); one that
    does not end even so fails the test, naming what each rank was doing and what failed."""
    if _HUNG:
        pytest.fail(f"ranks of {_HUNG[0]} still hang in this process")
    os.environ["CCO_PLATFORM"] = "cuda"
    from cco import Communicator

    uid = Communicator.get_unique_id()
    errors, results = {}, {}
    _WHERE.clear()

    def run(rank):
        try:
            rk = Rank(rank, 2, uid, 0)
            fired = threading.Event()

            def abort():
                fired.set()
                rk.comm.abort()

            watchdog = threading.Timer(seconds * 0.75, abort)
            watchdog.start()
            try:
                results[rank] = body_of(rank, rk)
            finally:
                watchdog.cancel()
                if aborted or fired.is_set():
                    rk.comm.abort()
                rk.close()
            if fired.is_set():
                errors[rank] = f"aborted by the watchdog after {seconds * 0.75:.0f} s, at {_WHERE.get(rank)}"
        except BaseException as e:
            errors[rank] = f"{type(e).__name__}: {e} (at {_WHERE.get(rank)})\n{traceback.format_exc()[-1500:]}"

    threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(2)]
    for t in threads:
        t.start()
    end = time.monotonic() + seconds
    for t in threads:
        t.join(timeout=max(0.0, end - time.monotonic()))
    if any(t.is_alive() for t in threads):
        _HUNG.append(os.environ.get("PYTEST_CURRENT_TEST", "a test").split(" ")[0])
        pytest.fail(f"a rank hung for {seconds} s; where each was: {dict(_WHERE)}; errors: {errors}")
    if errors:  # in full: pytest would cut an assertion's operands short
        pytest.fail("\n".join(f"rank {rank}: {error}" for rank, error in sorted(errors.items())))
    return results


def test_a_failed_ring_fails_the_flush_in_every_thread():
    """The group's verdict: one thread flushes the failed ring and meets its error, and every
    thread of the block returns ABORTED (one vote spreads it; the device-side mirror of a
    ring failed after all its work was consumed is not what this exercises); a signal id past
    the user's is refused on the device first. The device refuses every bad window itself, so
    the ring is failed by a descriptor written into it directly (what a scribbled ring does)."""
    block = 128  # num_warps=4: one element per thread

    def body_of(rank, rk):
        d = rk.dc.struct
        ring = 0 * d.gdaPeerCount + (1 - rank)  # context 0, FULL: the GDA-team index is the world rank
        slots = d.gdaRingSlots + ring * d.gdaRingDepth * 64
        head_word = d.gdaRingDevice + ring * 64  # ccoGdaRingDevice.head
        with torch.cuda.stream(rk.stream):
            status = torch.full((block,), -1, dtype=torch.int32, device=f"cuda:{rk.device}")
            scribble_descriptor[(1,)](slots, head_word, d.gdaRingDepth, num_warps=1)
            refused_then_flush[(1,)](rk.dc.ptr, status, 1 - rank, 1 << 20, BLOCK=block, num_warps=4,
                                     extern_libs=rk.libs)
        rk.stream.synchronize()
        with torch.cuda.stream(rk.stream):
            got = status.tolist()
        rk.comm.barrier()
        return got

    got = _two_ranks_as_threads(body_of)
    aborted = 2  # CCO_DEVICE_STATUS_ABORTED
    for rank in range(2):
        assert got[rank] == [aborted] * block, f"rank {rank}: statuses {sorted(set(got[rank]))}"


def test_many_sdma_device_communicators_keep_their_copies_moving(monkeypatch):
    """Two ranks as threads, each with 24 SDMA device communicators of two queues: put+signal
    ping-pongs on the first and the last one, both ranks' kernels waiting for the other's
    copies. Every queue q shares the proxy's one stream for q (rather than 48 streams a
    process, spread over CUDA's few hardware queues: a stream that shares one with a waiting
    kernel never runs), so the copies of each keep moving; the bytes of the last put landed."""
    from cco import CCODevCommRequirements
    from cco_tools.perf.kernels import sdma as S

    monkeypatch.setenv("CCO_ENABLE_SDMA", "1")   # for this test only: later ones' device communicators get no queues
    rounds, nbytes = 50, 64

    def body_of(rank, rk):
        dcs = [rk.comm.create_dev_comm(CCODevCommRequirements(sdma_queue_count=2)) for _ in range(24)]
        peer = 1 - rank
        with torch.cuda.stream(rk.stream):
            mine = rk.view(32, torch.int32)
            mine[:16] = torch.arange(16, dtype=torch.int32, device=mine.device) + 100 * (rank + 1)
            mine[16:] = -1
            status = torch.zeros(1, dtype=torch.int32, device=mine.device)
            for dc in (dcs[0], dcs[-1]):  # loads each rank's binary; no round, so nothing waits
                S.pingpong[(1,)](dc.ptr, rk.win.handle, status, peer, 0, nbytes, 1, FIRST=rank == 0, num_warps=4,
                                 extern_libs=rk.libs)
        rk.stream.synchronize()
        rk.comm.barrier()
        for which, dc in (("first", dcs[0]), ("last", dcs[-1])):
            _WHERE[rank] = f"the ping-pong on the {which} device communicator"
            with torch.cuda.stream(rk.stream):
                S.pingpong[(1,)](dc.ptr, rk.win.handle, status, peer, rounds, nbytes, 1, FIRST=rank == 0,
                                 num_warps=4, extern_libs=rk.libs)
            rk.stream.synchronize()
        rk.comm.barrier()
        with torch.cuda.stream(rk.stream):
            got = (int(status.item()), mine[16:].tolist())
        rk.comm.barrier()
        return got

    got = _two_ranks_as_threads(body_of, seconds=90)
    for rank in range(2):
        status, landed = got[rank]
        assert status == 0, f"rank {rank}: statuses summing to {status}"
        assert landed == [100 * (2 - rank) + i for i in range(16)], f"rank {rank}: the peer's bytes {landed}"


def _load_barrier_rounds(rk, status):
    """Compiles and loads barrier_rounds with no round (nothing waits): loading a module while
    another rank's kernel of this process waits in a barrier would wait for that kernel."""
    barrier_rounds[(1,)](rk.dc.ptr, rk.win.handle, rk.view(32, torch.int64), status, 0, 0, num_warps=4,
                         extern_libs=rk.libs)


def test_gda_barrier_orders_the_puts_before_it():
    """200 GDA barrier rounds between two ranks, each after a put_value of the round number:
    every round finds the peer's value of that round, and every call succeeds."""
    rounds = 200

    def body_of(rank, rk):
        with torch.cuda.stream(rk.stream):
            rk.view(64).zero_()
            status = torch.full((1,), -1, dtype=torch.int32, device=f"cuda:{rk.device}")
            _load_barrier_rounds(rk, status)
        rk.stream.synchronize()
        rk.comm.barrier()
        with torch.cuda.stream(rk.stream):
            barrier_rounds[(1,)](rk.dc.ptr, rk.win.handle, rk.view(32, torch.int64), status, 1 - rank, rounds,
                                 num_warps=4, extern_libs=rk.libs)
        rk.stream.synchronize()
        rk.comm.barrier()
        with torch.cuda.stream(rk.stream):
            return int(status.item())

    assert _two_ranks_as_threads(body_of) == {0: 0, 1: 0}


def test_gda_barrier_ends_on_abort_in_every_thread():
    """Rank 0 enters a GDA barrier that rank 1 never enters, and is aborted: the call ends, and
    thread 0 (whose share, rank 0 itself, needs no wait) returns ABORTED too: Triton reports
    thread 0's status."""
    def body_of(rank, rk):
        if rank == 1:
            time.sleep(1.0)  # stays alive while rank 0 waits, never enters the barrier
            return None
        with torch.cuda.stream(rk.stream):
            rk.view(64).zero_()  # slot 0 stays 0: the peer never writes it
            status = torch.full((1,), -1, dtype=torch.int32, device=f"cuda:{rk.device}")
            _load_barrier_rounds(rk, status)
        rk.stream.synchronize()
        timer = threading.Timer(0.3, rk.comm.abort)
        timer.start()
        with torch.cuda.stream(rk.stream):
            barrier_rounds[(1,)](rk.dc.ptr, rk.win.handle, rk.view(32, torch.int64), status, 1, 1, num_warps=4,
                                 extern_libs=rk.libs)
        rk.stream.synchronize()
        timer.join()
        with torch.cuda.stream(rk.stream):
            return int(status.item())

    # CCO_DEVICE_STATUS_ABORTED (2) from the barrier, plus 1 for the slot the peer never wrote
    # (the put_value itself succeeds). Thread 0's status was OK before the group's verdict.
    assert _two_ranks_as_threads(body_of, aborted=True)[0] == 2 + 1


@pytest.mark.parametrize("coop, warps", [(cco.CoopScope.WARP, 1), (cco.CoopScope.BLOCK, 4)], ids=["warp", "block"])
def test_group_copies_land_exactly_around_the_bound(coop, warps):
    """A put whose copy a warp or block shares goes direct up to gdaDirectGroupMaxBytes
    (65536 by default) and through the proxy above it: every size around the bound lands
    exactly, and not a byte past its end."""
    sizes = (4100, 16392, 65536, 65552)
    dst, slack = 256 << 10, 64

    def body_of(rank, rk):
        assert rk.dc.struct.gdaDirectGroupMaxBytes == 65536
        mine = rk.view(1 << 18)  # the whole window, int32
        with torch.cuda.stream(rk.stream):
            mine[: 32 << 10] = torch.arange(32 << 10, dtype=torch.int32, device=mine.device) + rank * 1_000_000
            status = torch.full((1,), -1, dtype=torch.int32, device=mine.device)
            put_then_wait[(1,)](rk.dc.ptr, rk.win.handle, status, 1 - rank, dst, 0, COOP=coop, num_warps=warps,
                                extern_libs=rk.libs)
        rk.stream.synchronize()
        wrong = []
        for nbytes in sizes:
            region = mine[dst // 4: (dst + nbytes + slack) // 4]
            with torch.cuda.stream(rk.stream):
                region.zero_()
            rk.stream.synchronize()
            rk.comm.barrier()  # both regions cleared before either rank puts
            with torch.cuda.stream(rk.stream):
                put_then_wait[(1,)](rk.dc.ptr, rk.win.handle, status, 1 - rank, dst, nbytes, COOP=coop,
                                    num_warps=warps, extern_libs=rk.libs)
            rk.stream.synchronize()
            with torch.cuda.stream(rk.stream):
                want = torch.zeros_like(region)
                want[: nbytes // 4] = torch.arange(nbytes // 4, dtype=torch.int32, device=mine.device) + \
                    (1 - rank) * 1_000_000
                if int(status.item()) != 0 or not torch.equal(region, want):
                    wrong.append((nbytes, int(status.item()), int((region != want).sum().item())))
            rk.comm.barrier()  # the peer checked before this rank clears for the next size
        return wrong

    got = _two_ranks_as_threads(body_of)
    assert got == {0: [], 1: []}, f"(bytes, failed calls, wrong words): {got}"


# How a get reaches the peer: the caller's own loads where the direct path may take it (up to
# gdaDirectMaxBytes for a thread, gdaDirectGroupMaxBytes for a warp or block), the proxy's copy
# where it may not, and the tcp backend between two virtual nodes (a request, the peer's
# bytes staged out of its device memory and landed into this rank's).
GET_PATHS = {
    "direct": {},
    "proxy": {"CCO_GDA_DIRECT_MAX_BYTES": "0"},
    "tcp": {"CCO_NET": "tcp", "CCO_TEST_NODES_PER_HOST": "2", "CCO_SOCKET_IFNAME": "=lo"},
}


@pytest.mark.parametrize("path", list(GET_PATHS))
@pytest.mark.parametrize("coop, warps", [(cco.CoopScope.THREAD, 1), (cco.CoopScope.WARP, 1), (cco.CoopScope.BLOCK, 4)],
                         ids=["thread", "warp", "block"])
def test_gets_land_exactly(coop, warps, path, monkeypatch):
    """A get of every size around both direct-path bounds, an odd one among them, lands
    exactly the peer's bytes, and not a byte past its end, whichever way it goes."""
    for name, value in GET_PATHS[path].items():
        monkeypatch.setenv(name, value)
    sizes = (13, 4096, 4100, 65536, 65552, 256 << 10)
    src_words, dst, slack = 64 << 10, 512 << 10, 64  # the source: the window's first 256 KiB

    def body_of(rank, rk):
        if path == "proxy":
            assert rk.dc.struct.gdaDirectMaxBytes == 0
        # Only copies between host and device here, no torch kernels: the first use of a torch
        # kernel loads it (CUDA lazy loading), and a load may wait for the kernels running in
        # the process, the other rank's get among them, whose flush waits for its proxy's
        # copies, which wait for the load. (A thread waiting for its kernel inside the driver,
        # as region.cpu() does, also holds up other threads' allocations: the tcp backend
        # allocates everything before kernels run; tools/perf/blocking_call_probe.cu shows it.)
        device = f"cuda:{rk.device}"
        mine = rk.view(1 << 18).view(torch.uint8)
        source = (torch.arange(src_words, dtype=torch.int32) + rank * 1_000_000).view(torch.uint8)
        theirs = (torch.arange(src_words, dtype=torch.int32) + (1 - rank) * 1_000_000).view(torch.uint8)
        threads = 32 * warps
        with torch.cuda.stream(rk.stream):
            status = torch.full((threads,), -1, dtype=torch.int32).to(device)
            mine[: src_words * 4].copy_(source)
            get_then_flush[(1,)](rk.dc.ptr, rk.win.handle, status, 1 - rank, 0, dst, 0, COOP=coop, THREADS=threads,
                                 num_warps=warps, extern_libs=rk.libs)
        rk.stream.synchronize()
        rk.comm.barrier()  # both sources written and both kernels loaded before either rank gets
        wrong = []
        for nbytes in sizes:
            _WHERE[rank] = nbytes
            region = mine[dst: dst + nbytes + slack]
            with torch.cuda.stream(rk.stream):
                region.copy_(torch.zeros(nbytes + slack, dtype=torch.uint8))
                get_then_flush[(1,)](rk.dc.ptr, rk.win.handle, status, 1 - rank, 0, dst, nbytes, COOP=coop,
                                     THREADS=threads, num_warps=warps, extern_libs=rk.libs)
                got, failed = region.cpu(), int(status.cpu().sum())
            want = torch.zeros(nbytes + slack, dtype=torch.uint8)
            want[:nbytes] = theirs[:nbytes]
            if failed != 0 or not torch.equal(got, want):
                wrong.append((nbytes, failed, int((got != want).sum())))
                if failed != 0 and not any(isinstance(w, str) for w in wrong):
                    try:  # what the proxy or the backend met, named (once)
                        rk.comm.check_async_error()
                    except Exception as e:  # noqa: BLE001
                        wrong.append(f"{type(e).__name__}: {e}")
            rk.comm.barrier()  # both ranks' gets done before either starts the next
        return wrong

    got = _two_ranks_as_threads(body_of)
    assert got == {0: [], 1: []}, f"(bytes, failed calls, wrong bytes): {got}"


MATRIX_WARPS = 2


def _matrix(rank, rk):
    """Every cell of matrix_cells() between rank and 1 - rank; the cells that went wrong, as
    (cell, failed calls, wrong bytes). Host <-> device copies only, and each cell's kernel
    loaded in both ranks before either runs it: a kernel load may wait for the kernels running
    in the context, one of which may wait for the other rank (CUDA's lazy loading)."""
    device = f"cuda:{rk.device}"
    mine = rk.view(1 << 18).view(torch.uint8)

    def pattern(r):  # rank r's first MATRIX_BYTES
        return (torch.arange(MATRIX_BYTES // 4, dtype=torch.int32) + r * 1_000_000).view(torch.uint8)

    def word(r):  # rank r's put_value
        return 0x1122334455667700 + r

    with torch.cuda.stream(rk.stream):
        status = torch.full((32 * MATRIX_WARPS,), -1, dtype=torch.int32).to(device)
        mine[:MATRIX_BYTES].copy_(pattern(rank))
    wrong = []
    for cell in matrix_cells():
        _WHERE[rank] = cell
        op = cell[0]
        args = _matrix_args(cell, rk.libs)
        launch = (rk.dc.ptr, rk.win.handle, rk.view(1), status, 1 - rank, word(rank), (1 - rank) * 1_000_000,
                  word(1 - rank))
        with torch.cuda.stream(rk.stream):
            mine[MATRIX_DST: MATRIX_DST + MATRIX_BYTES].copy_(torch.zeros(MATRIX_BYTES, dtype=torch.uint8))
            matrix_cell[(1,)](*launch, 0, **args)
        rk.stream.synchronize()
        rk.comm.barrier()  # both kernels loaded, both regions cleared
        with torch.cuda.stream(rk.stream):
            matrix_cell[(1,)](*launch, 1, **args)
            failed = int(status.cpu().sum())
        rk.comm.barrier()  # both ranks' ops complete (each flushed) before either looks
        with torch.cuda.stream(rk.stream):
            got = mine[MATRIX_DST: MATRIX_DST + MATRIX_BYTES].cpu()
        want = torch.zeros(MATRIX_BYTES, dtype=torch.uint8)
        if op in (0, 2):
            want[:] = pattern(1 - rank)
        elif op == 1:
            want[:8] = torch.tensor([word(1 - rank)], dtype=torch.int64).view(torch.uint8)
        if failed != 0 or not torch.equal(got, want):
            wrong.append((cell, failed, int((got != want).sum())))
            if failed != 0 and not any(isinstance(w, str) for w in wrong):
                try:  # what the proxy or the backend met, named (once): a failed ring fails every later cell
                    rk.comm.check_async_error()
                except Exception as e:  # noqa: BLE001
                    wrong.append(f"{type(e).__name__}: {e}")
        rk.comm.barrier()  # both checked before either clears for the next cell
    _WHERE.pop(rank, None)
    return wrong


def _matrix_args(cell, libs):
    """A cell's constexprs and launch options."""
    return dict(matrix_constexprs(cell, MATRIX_WARPS), num_warps=MATRIX_WARPS, extern_libs=libs)


def _compile_matrix():
    """Every cell's kernel compiled and loaded on GPU 0 by this thread, before any rank runs:
    a compile inside a rank's bounded time would read as a hang, and a load while the other
    rank's kernel waits may wait for it. Inactive launches: no device communicator is read."""
    status = torch.zeros(32 * MATRIX_WARPS, dtype=torch.int32, device="cuda:0")
    words = torch.zeros(4, dtype=torch.int32, device="cuda:0")
    libs = cco.get_extern_libs()
    # 64-bit integers where the ranks pass them (device addresses, the put_value words): the
    # same signature, so the ranks' launches find these variants.
    wide = 0x1122334455667700
    for cell in matrix_cells():
        matrix_cell[(1,)](wide, wide, words, status, 0, wide, 0, wide, 0, **_matrix_args(cell, libs))
    torch.cuda.synchronize(0)


@pytest.mark.parametrize("path", ["lsa", "nodes", "tcp"])
def test_gda_matrix(path, monkeypatch):
    """The matrix op x coop x thread mode x signal action x doorbell mode between two ranks as
    threads on one GPU: exact data, exact signal totals, every signal consumed. lsa: the ranks
    share an LSA team (small ops may take the direct path); nodes: two virtual nodes
    (CCO_TEST_NODES_PER_HOST=2), so everything goes through the proxies' local backend; tcp:
    the same nodes joined by the tcp backend over loopback."""
    if path != "lsa":
        monkeypatch.setenv("CCO_TEST_NODES_PER_HOST", "2")
    if path == "tcp":
        monkeypatch.setenv("CCO_NET", "tcp")
        monkeypatch.setenv("CCO_SOCKET_IFNAME", "=lo")
    _compile_matrix()
    got = _two_ranks_as_threads(_matrix, seconds=300)
    assert got == {0: [], 1: []}, f"((op, coop, thread mode, signal, mode), failed calls, wrong bytes): {got}"


def _matrix_process(rank, uid, queue):
    os.environ["CCO_PLATFORM"] = "cuda"
    try:
        rk = Rank(rank, 2, uid, rank)
        try:
            queue.put((rank, _matrix(rank, rk)))
        finally:
            rk.close()
    except BaseException as e:
        queue.put((rank, f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"))


def test_gda_matrix_one_process_per_gpu():
    """The same matrix between two processes, one per GPU (over NVLink where there is one)."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    from cco import Communicator

    uid = Communicator.get_unique_id()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_matrix_process, args=(r, uid, queue)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        results = dict(queue.get(timeout=300) for _ in range(2))
    finally:
        for p in procs:  # a process that hung must not keep pytest from ending
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert results == {0: [], 1: []}, results
