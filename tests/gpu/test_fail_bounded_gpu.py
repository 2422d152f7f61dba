# SPDX-License-Identifier: MIT
"""Fail-bounded on the GPU (the phases of tests/device/fail_bounded_test.cc, with the waits in
Triton kernels): one rank process is SIGKILLed inside ccoCommCreate, a window's registration,
ccoDevCommCreate or ccoDevCommDestroy, or while the survivors' kernels wait on its GDA signal,
in an LSA barrier, quieting an SDMA queue to it, or flushing GDA puts to it over tcp. Every
survivor's kernel must end with CCO_DEVICE_STATUS_ABORTED (2) within 100 ms of its host seeing
the death (and below 1 s of the kill; both printed), its host calls within CCO_TIMEOUT_MS, its async error
must name the dead rank, and once its communicator is destroyed it must hold no more GPU memory,
descriptors or threads than after a first communicator's whole life (the driver's own first-use
growth), and make a new communicator with the other survivors.

Also on the GPU: ccoCommAbort from another thread ends kernels waiting on two device
communicators, and a kernel's wait without a timeout of its own ends TIMEOUT (1) at
CCO_TIMEOUT_MS.

Ranks are processes on GPU (rank % GPUs); on one GPU without MPS their kernels time-slice, which
the bounds allow for."""

import multiprocessing as mp
import os
import signal
import subprocess
import threading
import time
import traceback

import pytest
import torch
import triton
import triton.language as tl

from cco.ir.triton import cco

WORLD = 3
TIMEOUT_MS = 5000            # CCO_TIMEOUT_MS of these runs
DEVICE_BOUND_S = 1.0         # a kernel's wait after the death
LOSS_TO_WAIT_S = 0.1         # ... after this rank's host saw it (the target)
HOST_BOUND_S = TIMEOUT_MS / 1000 + 2.0
ABORTED, TIMEOUT = 2, 1


@triton.jit
def wait_gda_signal(dc, status):
    """Waits for signal 0 (nobody sends it); no timeout of its own."""
    tl.store(status, cco.Gda.wait_signal(dc, 0, 0, 1, 64, coop=cco.CoopScope.BLOCK))


@triton.jit
def lsa_barrier(dc, status):
    tl.store(status, cco.LsaBarrier.sync(dc, 0, coop=cco.CoopScope.BLOCK))


@triton.jit(do_not_specialize=["peer", "limit"])
def sdma_quiet_until_failed(dc, win, status, peer, limit):
    """Puts 4 KiB to `peer` and quiets its queues until a call fails (or `limit` rounds)."""
    s = 0
    i = 0
    while (s == 0) & (i < limit):
        s = cco.Sdma.put(dc, peer, win, 0, win, 4096, 4096, 0, coop=cco.CoopScope.BLOCK, signal=False)
        if s == 0:
            s = cco.Sdma.quiet(dc, peer, coop=cco.CoopScope.BLOCK)
        i += 1
    tl.store(status, s)


@triton.jit(do_not_specialize=["peer", "limit"])
def gda_flush_until_failed(dc, win, status, peer, limit):
    """Puts 64 KiB to `peer` and flushes until a call fails (or `limit` rounds)."""
    s = 0
    i = 0
    while (s == 0) & (i < limit):
        s = cco.Gda.put(dc, 0, peer, win, 0, win, 0, 65536, 0, 0, coop=cco.CoopScope.BLOCK,
                        thread_mode=cco.ThreadMode.INDEPENDENT, signal_op=cco.SignalOp.NONE)
        if s == 0:
            s = cco.Gda.flush(dc, 0, coop=cco.CoopScope.BLOCK)
        i += 1
    tl.store(status, s)


DEVICE_PHASES = ["gda-signal", "lsa-barrier", "sdma-quiet", "gda-flush-tcp"]
HOST_PHASES = ["create", "register", "devcomm-create", "devcomm-destroy"]


def _gpu_mib_of_this_process():
    """This process's GPU memory in MiB as the driver lists it (each MPS client by its pid), or
    None where it is not listed. Not torch.cuda.mem_get_info: that is the whole GPU's, which
    rises when the killed rank's context goes and hides what a survivor kept."""
    try:
        listed = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                                capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in listed.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 2 and fields[0] == str(os.getpid()) and fields[1].isdigit():
            return int(fields[1])
    return None


def _census():
    return {"gpu_mib": _gpu_mib_of_this_process(), "fds": len(os.listdir("/proc/self/fd")),
            "threads": len(os.listdir("/proc/self/task"))}


def _environment(phase, rank):
    os.environ["CCO_PLATFORM"] = "cuda"
    os.environ["CCO_TIMEOUT_MS"] = str(TIMEOUT_MS)
    if phase == "sdma-quiet":
        os.environ["CCO_ENABLE_SDMA"] = "1"
    if phase == "gda-flush-tcp":
        os.environ["CCO_NET"] = "tcp"
        os.environ["CCO_TEST_NODES_PER_HOST"] = str(WORLD)  # every rank a node of its own


def _requirements(phase):
    from cco import CCODevCommRequirements, GDA_CONNECTION_FULL

    return CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_FULL, gda_context_count=1, lsa_barrier_count=1,
                                  sdma_queue_count=1 if phase == "sdma-quiet" else 0)


def _die(death):
    death.value = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process
    os.kill(os.getpid(), signal.SIGKILL)


def _die_during(death, delay_s, call):
    threading.Thread(target=call, daemon=True).start()
    time.sleep(delay_s)
    _die(death)


def _bounded(what, call):
    start = time.monotonic()
    error = None
    try:
        call()
    except Exception as e:  # the call may fail: only its time is bounded
        error = e
    took = time.monotonic() - start
    print(f"fail_bounded_gpu: {what} {'failed' if error else 'returned'} after {took * 1000:.0f} ms"
          f"{': ' + str(error) if error else ''}")
    assert took < HOST_BOUND_S, f"{what} took {took:.1f} s"
    return error


def _wait_kernel(phase, comm, dc, win, victim, stream, death):
    """Launches the phase's waiting kernel; returns (status, seconds from the death to its end,
    seconds from the death until this rank's host reported the loss, or None): the second
    figure tells a loss seen late from a wait that ended late."""
    status = torch.full((1,), -1, dtype=torch.int32, device="cuda")
    libs = cco.get_extern_libs()
    with torch.cuda.stream(stream):
        if phase == "gda-signal":
            wait_gda_signal[(1,)](dc.ptr, status, extern_libs=libs)
        elif phase == "lsa-barrier":
            lsa_barrier[(1,)](dc.ptr, status, extern_libs=libs)
        elif phase == "sdma-quiet":
            sdma_quiet_until_failed[(1,)](dc.ptr, win.handle, status, victim, 1 << 30, extern_libs=libs)
        else:
            gda_flush_until_failed[(1,)](dc.ptr, win.handle, status, victim, 1 << 30, extern_libs=libs)
    seen = []  # when this rank's host first reports the loss (ccoCommGetAsyncError)

    def watch():
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up:
            try:
                comm.check_async_error()
            except Exception:
                seen.append(time.monotonic())
                return
            time.sleep(0.0002)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    while not stream.query():
        time.sleep(0.0001)
    ended = time.monotonic()
    watcher.join(timeout=31)
    return int(status.item()), ended - death.value, (seen[0] - death.value) if seen else None


def _survivor(phase, rank, victim, uid, death, stages):
    from cco import Communicator

    comm = dc = win = None
    if phase == "create":
        made = []
        _bounded("ccoCommCreate", lambda: made.append(Communicator.init(WORLD, rank, uid, per_rank_vmm=64 << 20)))
        for c in made:  # the victim died after it: the next collective call fails, bounded
            _bounded("ccoBarrierAll", c.barrier)
            _bounded("teardown", c.destroy)
        return
    comm = Communicator.init(WORLD, rank, uid, per_rank_vmm=64 << 20)
    try:
        if phase == "register":
            comm.barrier()
            _bounded("ccoWindowAllocRegister", lambda: comm.alloc_window(1 << 20))
            return
        win = comm.alloc_window(1 << 20)
        if phase == "devcomm-create":
            comm.barrier()
            _bounded("ccoDevCommCreate", lambda: comm.create_dev_comm(_requirements(phase)))
            return
        dc = comm.create_dev_comm(_requirements(phase))
        stream = torch.cuda.Stream()
        comm.barrier()
        stages["with the device communicator"] = _census()
        if phase == "devcomm-destroy":
            _bounded("ccoDevCommDestroy", lambda: comm.destroy_dev_comm(dc))
            return
        status, after, host_saw = _wait_kernel(phase, comm, dc, win, victim, stream, death)
        print(f"fail_bounded_gpu: phase {phase}, victim {victim}: rank {rank}'s kernel ended {after * 1000:.1f} ms "
              f"after the death (status {status}); its host reported the loss "
              f"{'never' if host_saw is None else f'{host_saw * 1000:.1f} ms after the death'}")
        assert status == ABORTED, f"status {status}"
        assert after < DEVICE_BOUND_S, f"{after:.3f} s"
        # The target: 100 ms from the death being observable. When the socket closes is the
        # dying process's teardown (SIGKILL closes its descriptors last), not CCO's.
        assert host_saw is not None and after - host_saw < LOSS_TO_WAIT_S, (after, host_saw)
        with pytest.raises(Exception, match=f"rank {victim}"):
            comm.check_async_error()
    finally:
        _bounded("teardown", comm.destroy)


def _victim(phase, rank, uid, death, delay_s):
    from cco import Communicator

    if phase == "create":
        _die_during(death, delay_s, lambda: Communicator.init(WORLD, rank, uid, per_rank_vmm=64 << 20))
    comm = Communicator.init(WORLD, rank, uid, per_rank_vmm=64 << 20)
    if phase == "register":
        comm.barrier()
        _die_during(death, delay_s, lambda: comm.alloc_window(1 << 20))
    comm.alloc_window(1 << 20)
    if phase == "devcomm-create":
        comm.barrier()
        _die_during(death, delay_s, lambda: comm.create_dev_comm(_requirements(phase)))
    dc = comm.create_dev_comm(_requirements(phase))
    comm.barrier()
    if phase == "devcomm-destroy":
        _die_during(death, delay_s, lambda: comm.destroy_dev_comm(dc))
    time.sleep(delay_s)  # the survivors' kernels are waiting
    _die(death)


def _communicator_life(nranks, rank, uid, phase):
    """A communicator made and used: a window, the phase's device communicator, a barrier
    kernel on it, a host barrier, then destroyed."""
    from cco import Communicator

    comm = Communicator.init(nranks, rank, uid, per_rank_vmm=64 << 20)
    try:
        comm.alloc_window(1 << 20)
        dc = comm.create_dev_comm(_requirements(phase))
        status = torch.full((1,), -1, dtype=torch.int32, device="cuda")
        lsa_barrier[(1,)](dc.ptr, status, extern_libs=cco.get_extern_libs())
        torch.cuda.synchronize()
        assert int(status.item()) == 0
        comm.barrier()
    finally:
        comm.destroy()


def _afterwards(rank, victim, uid2, phase):
    """The survivors make and use a communicator of their own."""
    if phase == "gda-flush-tcp":
        os.environ["CCO_TEST_NODES_PER_HOST"] = str(WORLD - 1)  # still every rank a node of its own
    _communicator_life(WORLD - 1, rank if rank < victim else rank - 1, uid2, phase)


def _warm_up():
    """Compiles and loads every kernel before the census: the compiler's own threads and files
    are not the communicator's, and loading a module waits for the kernels running on the
    device (under MPS, other ranks' too), which would stretch the times measured."""
    libs = cco.get_extern_libs()
    status = torch.zeros(1, dtype=torch.int32, device="cuda")
    # torch's pool of streams, made at its first torch.cuda.Stream() and kept for the process's
    # life (about 70 MiB of GPU memory on an H100), is made here, not inside the census.
    with torch.cuda.stream(torch.cuda.Stream()):
        status.add_(0)
    torch.cuda.synchronize()
    for compiled in (wait_gda_signal.warmup(0, status, grid=(1,), extern_libs=libs),
                     lsa_barrier.warmup(0, status, grid=(1,), extern_libs=libs),
                     sdma_quiet_until_failed.warmup(0, 0, status, 1, 1 << 30, grid=(1,), extern_libs=libs),
                     gda_flush_until_failed.warmup(0, 0, status, 1, 1 << 30, grid=(1,), extern_libs=libs)):
        compiled._init_handles()


def _warm_communicator(rank, uid0, phase):
    """One whole communicator's life before the census: what the driver keeps for a process's
    first streams, copies and launches of this kind stays with the process and is no leak of
    CCO's."""
    _communicator_life(WORLD, rank, uid0, phase)


def _rank_process(phase, rank, victim, uid0, uid, uid2, death, delay_s, queue):
    try:
        _environment(phase, rank)
        torch.cuda.set_device(rank % torch.cuda.device_count())
        torch.zeros(1, device="cuda")
        _warm_up()
        _warm_communicator(rank, uid0, phase)
        torch.cuda.empty_cache()
        before = _census()
        if rank == victim:
            _victim(phase, rank, uid, death, delay_s)
        stages = {}  # where a difference starts
        _survivor(phase, rank, victim, uid, death, stages)
        torch.cuda.synchronize()
        stages["after the failed communicator's teardown"] = _census()
        _afterwards(rank, victim, uid2, phase)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        stages["after the second communicator"] = _census()
        deadline = time.monotonic() + TIMEOUT_MS / 1000 + 3
        after = _census()
        while after != before and time.monotonic() < deadline:
            time.sleep(0.05)
            after = _census()
        if after != before:  # in full (an assertion's message is cut short in the report)
            print(f"fail_bounded_gpu: rank {rank}: census before {before}, after {after}, by stage {stages}")
        assert after["fds"] == before["fds"] and after["threads"] == before["threads"], (before, after, stages)
        if before["gpu_mib"] is None or after["gpu_mib"] is None:
            print(f"fail_bounded: rank {rank}: the driver lists no GPU memory for this process: not compared")
        else:
            assert abs(after["gpu_mib"] - before["gpu_mib"]) <= 2, (before, after, stages)  # a granule of slack
        queue.put((rank, "ok"))
    except BaseException as e:
        queue.put((rank, f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"))


def _thread_states(pid):
    """name:state:wait-channel of each thread of `pid` (None once it is gone)."""
    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return "?"

    try:
        tids = sorted(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return None
    states = []
    for tid in tids:
        stat = read(f"/proc/{pid}/task/{tid}/stat")
        state = stat[stat.rfind(")") + 2:][:1] if ")" in stat else "?"
        states.append(f"{read(f'/proc/{pid}/task/{tid}/comm')}:{state}:{read(f'/proc/{pid}/task/{tid}/wchan')}")
    return states


def _watch_the_dying(pid, death, lines, limit_s=3.0):
    """From the death on, how the victim's threads end: every 5 ms, which of them are left,
    with their state and where in the kernel they wait. A death seen late by the survivors is
    a process whose threads end late; this says which, and where."""
    while death.value == 0.0:
        if _thread_states(pid) is None:
            return
        time.sleep(0.001)
    last = None
    while time.monotonic() < death.value + limit_s:
        states = _thread_states(pid)
        since = (time.monotonic() - death.value) * 1000
        if states is None or all(t.split(":")[1] == "Z" for t in states):
            lines.append(f"{since:7.1f} ms: every thread ended")
            return
        if states != last:
            lines.append(f"{since:7.1f} ms: {len(states)} threads: {' '.join(states)}")
            last = states
        time.sleep(0.005)
    lines.append(f"after {limit_s} s: still there")


def _run(phase, victim, delay_s):
    from cco import Communicator

    uid0 = Communicator.get_unique_id()
    uid = Communicator.get_unique_id()
    uid2 = Communicator.get_unique_id()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    death = ctx.Value("d", 0.0)
    procs = [ctx.Process(target=_rank_process, args=(phase, r, victim, uid0, uid, uid2, death, delay_s, queue))
             for r in range(WORLD)]
    for p in procs:
        p.start()
    dying = []
    watcher = threading.Thread(target=_watch_the_dying, args=(procs[victim].pid, death, dying), daemon=True)
    watcher.start()
    results = dict(queue.get(timeout=120) for _ in range(WORLD - 1))
    for p in procs:
        p.join(timeout=60)
    watcher.join(timeout=5)
    print(f"fail_bounded_gpu: phase {phase}, victim {victim}: its threads after the kill:\n  " + "\n  ".join(dying))
    assert procs[victim].exitcode == -signal.SIGKILL, procs[victim].exitcode
    assert results == {r: "ok" for r in range(WORLD) if r != victim}, results


@pytest.mark.parametrize("victim", [0, 1])
@pytest.mark.parametrize("phase", DEVICE_PHASES)
def test_killed_while_peers_wait_in_kernels(phase, victim):
    _run(phase, victim, 0.3)


@pytest.mark.parametrize("delay_ms", [0, 2, 20])
@pytest.mark.parametrize("phase", HOST_PHASES)
def test_killed_inside_a_host_call(phase, delay_ms):
    _run(phase, 1, delay_ms / 1000)


def test_abort_ends_kernels_waiting_on_two_device_communicators():
    """Two ranks as threads on GPU 0: rank 0's kernels wait on a GDA signal (one device
    communicator) and in an LSA barrier (another); another thread aborts rank 0."""
    os.environ["CCO_PLATFORM"] = "cuda"
    os.environ["CCO_TIMEOUT_MS"] = "30000"
    from cco import Communicator
    from cco.errors import CCOError

    uid = Communicator.get_unique_id()
    comms, dcs, ready, done = {}, {}, threading.Barrier(3, timeout=120), threading.Event()  # 2 ranks, this thread
    errors = []

    def rank(r):
        try:
            torch.cuda.set_device(0)
            comm = Communicator.init(2, r, uid, per_rank_vmm=64 << 20)
            comm.alloc_window(1 << 20)
            comms[r] = comm
            dcs[r] = (comm.create_dev_comm(_requirements("gda-signal")),
                      comm.create_dev_comm(_requirements("gda-signal")))
            comm.barrier()
            ready.wait()
            done.wait(timeout=60)
            if r == 1:  # rank 0's is destroyed by the test, once aborted; rank 1's teardown may say it left
                try:
                    comm.destroy()
                except CCOError as e:
                    if "rank 0 left" not in str(e):
                        raise
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    ready.wait()
    libs = cco.get_extern_libs()
    statuses = [torch.full((1,), -1, dtype=torch.int32, device="cuda:0") for _ in range(2)]
    streams = [torch.cuda.Stream(device=0) for _ in range(2)]
    # Both kernels' modules loaded before either runs: loading a module waits for the kernels
    # running on the device, so a second kernel's first launch would wait out the first's wait.
    for kernel, args in ((wait_gda_signal, (dcs[0][0].ptr, statuses[0])), (lsa_barrier, (dcs[0][1].ptr, statuses[1]))):
        kernel.warmup(*args, grid=(1,), extern_libs=libs)._init_handles()
    with torch.cuda.stream(streams[0]):
        wait_gda_signal[(1,)](dcs[0][0].ptr, statuses[0], extern_libs=libs)
    with torch.cuda.stream(streams[1]):
        lsa_barrier[(1,)](dcs[0][1].ptr, statuses[1], extern_libs=libs)
    time.sleep(0.3)
    aborted = time.monotonic()
    threading.Thread(target=comms[0].abort).start()
    for s in streams:
        while not s.query():
            time.sleep(0.0001)
    took = time.monotonic() - aborted
    print(f"fail_bounded_gpu: kernels on two device communicators ended {took * 1000:.1f} ms after ccoCommAbort")
    assert [int(s.item()) for s in statuses] == [ABORTED, ABORTED]
    assert took < DEVICE_BOUND_S
    comms[0].destroy()
    done.set()
    for t in threads:
        t.join(timeout=90)
    assert not any(t.is_alive() for t in threads), "a rank's thread did not end"
    assert not errors, errors


def test_a_kernel_wait_without_a_timeout_ends_at_cco_timeout_ms():
    os.environ["CCO_PLATFORM"] = "cuda"
    os.environ["CCO_TIMEOUT_MS"] = "500"
    from cco import Communicator

    comm = Communicator.init(1, 0, Communicator.get_unique_id(), per_rank_vmm=64 << 20)
    try:
        comm.alloc_window(1 << 20)
        dc = comm.create_dev_comm(_requirements("gda-signal"))
        status = torch.full((1,), -1, dtype=torch.int32, device="cuda")
        start = time.monotonic()
        wait_gda_signal[(1,)](dc.ptr, status, extern_libs=cco.get_extern_libs())
        torch.cuda.synchronize()
        took = time.monotonic() - start
        print(f"fail_bounded_gpu: a kernel's wait without a timeout ended after {took * 1000:.0f} ms (bound 500 ms)")
        assert int(status.item()) == TIMEOUT
        assert 0.5 <= took < 2.0
    finally:
        comm.destroy()
