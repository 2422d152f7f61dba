# SPDX-License-Identifier: MIT
"""The Python host API (cco.Communicator and friends) with ranks as real processes.

Every rank is a forked process on the cpu platform (see rank_processes.py); a rank's
assertion failure or exception comes back to the parent with its traceback. Covers
creation and queries, peer writes read back exactly in the peer, device communicators,
the unique id's trips through pickle, bad input, use after destroy, teardown when the
body raises or the communicator was aborted, and the guide's Quick Reference.
"""

import ctypes
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import cco
from cco import (
    GDA_CONNECTION_FULL,
    GDA_CONNECTION_NONE,
    CCOAbortedError,
    CCODevCommRequirements,
    CCOError,
    CCOTimeoutError,
    Communicator,
    DevCommHandle,
    RegisteredWindow,
)
from cco import _abi
from rank_processes import RANK_ENV, run_ranks

RANKS = [1, 2, 4]
VMM = 64 << 20  # per-rank slice: small, the tests allocate little


def uint32_view(address, count):
    return (ctypes.c_uint32 * count).from_address(address)


# --- creation and queries -------------------------------------------------------------------


@pytest.mark.parametrize("nranks", RANKS)
def test_create_query_destroy_with_context_manager(nranks):
    def body(rank, n, uid):
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            assert (comm.rank, comm.world_size, comm.size) == (rank, n, n)
            assert (comm.lsa_rank, comm.lsa_size) == (rank, n)  # one host: LSA team = world
            assert (comm.node, comm.num_nodes) == (0, 1)
            assert comm.platform == "cpu"
            assert isinstance(comm.device, int) and comm.device >= 0
            assert f"rank {rank} of {n}" in repr(comm)
            comm.barrier()
        assert comm.destroyed and "destroyed" in repr(comm)
        return rank

    assert run_ranks(nranks, body) == list(range(nranks))


@pytest.mark.parametrize("nranks", RANKS)
def test_allgather_host_hands_every_rank_every_ranks_bytes(nranks):
    def body(rank, n, uid):
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            mine = bytes([rank]) * (rank * 1000 + 3)          # sizes differ per rank
            assert comm.allgather_host(mine) == [bytes([r]) * (r * 1000 + 3) for r in range(n)]
            assert comm.allgather_host(b"") == [b""] * n
            full = bytes(range(256)) * (cco.communicator.ALLGATHER_HOST_MAX_BYTES // 256)
            assert comm.allgather_host(full) == [full] * n
            # One rank too long: every rank fails, naming it, and the ranks stay in step.
            with pytest.raises(ValueError, match=f"rank {n - 1} contributed more than"):
                comm.allgather_host(full + b"x" if rank == n - 1 else b"ok")
            assert comm.allgather_host(b"%d" % rank) == [b"%d" % r for r in range(n)]
        return True

    assert all(run_ranks(nranks, body))


# --- symmetric memory and windows -----------------------------------------------------------


@pytest.mark.parametrize("nranks", RANKS)
def test_peer_writes_arrive_exactly_in_the_peer(nranks):
    count = 3000  # 12000 bytes: several KiB, not a multiple of the page size

    def body(rank, n, uid):
        right, left = (rank + 1) % n, (rank + n - 1) % n
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            mem = comm.alloc_mem(count * 4)
            win = comm.register_window(mem.ptr, mem.size)
            assert isinstance(win, RegisteredWindow) and win.handle != 0
            assert win.local_ptr == mem.ptr == comm.peer_ptr(win, rank)
            assert win.size == mem.size == count * 4
            peer = uint32_view(comm.peer_ptr(win, right), count)
            for i in range(count):
                peer[i] = rank * 1000 + i
            comm.barrier()
            mine = uint32_view(mem.ptr, count)
            assert list(mine) == [left * 1000 + i for i in range(count)]

            # The size-only form: the window owns its memory; offsets reach inside it.
            owned = comm.alloc_window(5000)
            assert owned.owns_memory and owned.local_ptr != 0 and isinstance(owned, cco.AllocatedWindow)
            assert comm.nranks == comm.world_size == n
            uint32_view(comm.peer_ptr(owned, right, offset=4 * 7), 1)[0] = 0xC0DE0000 + rank
            comm.barrier()
            assert uint32_view(owned.local_ptr + 4 * 7, 1)[0] == 0xC0DE0000 + left
            comm.barrier()  # everyone has read before anyone's teardown
        return True

    assert all(run_ranks(nranks, body))


@pytest.mark.parametrize("nranks", [2])
def test_stale_windows_and_device_communicators_name_nothing(nranks):
    """A window or device communicator kept after its release names nothing, though the next
    one made takes its place (before, the window handle was reused at once: deregistering the
    stale one again tore down the live one); the communicator and what is live go on."""
    def body(rank, n, uid):
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            a = comm.alloc_window(4096)
            comm.deregister_window(a)
            b = comm.alloc_window(8192)
            assert b.handle != a.handle
            for stale in (lambda: comm.peer_ptr(a, 1 - rank, 5000), lambda: comm.deregister_window(a)):
                with pytest.raises(CCOError) as e:
                    stale()
                assert e.value.code_name == "ccoInvalidArgument" and "not a live window" in str(e.value)
            comm.peer_ptr(b, 1 - rank, 5000)
            first = comm.create_dev_comm()
            kept = DevCommHandle(type(first.struct).from_buffer_copy(first.struct))
            comm.destroy_dev_comm(first)
            second = comm.create_dev_comm()
            assert second.ptr != kept.ptr  # device copies are quarantined: a stale one names no live one
            with pytest.raises(CCOError) as e:
                comm.destroy_dev_comm(kept)
            assert "not a live device communicator" in str(e.value)
            comm.barrier()
            return b in comm._collective and second in comm._collective

    assert all(run_ranks(nranks, body))


@pytest.mark.parametrize("nranks", [2])
def test_explicit_release_and_tracked_release_do_not_collide(nranks):
    def body(rank, n, uid):
        comm = Communicator.init(n, rank, uid, per_rank_vmm=VMM)
        a = comm.alloc_mem(1 << 20)
        first = comm.register_window(a.ptr, 4096)
        comm.register_window(a.ptr + 8192, 65536)  # left for destroy()
        comm.alloc_register(4096)  # left for destroy() (alloc_window's older name)
        comm.create_dev_comm()  # left for destroy()
        b = comm.alloc_mem(4096)
        comm.alloc_mem(4096)  # left for destroy()
        # `a` still has a window: the library refuses to free it, and says why.
        with pytest.raises(CCOError) as refused:
            comm.free_mem(a)
        assert refused.value.code_name == "ccoInvalidUsage" and "registered window" in str(refused.value)
        comm.deregister_window(first)
        comm.free_mem(b.ptr)  # by address works too
        with pytest.raises(CCOError) as twice:
            comm.free_mem(b)
        assert twice.value.code_name == "ccoInvalidArgument"
        # Windows and the device communicator go first, in reverse, then memory: freeing
        # `a` before its window would fail, so a clean destroy shows the order.
        comm.destroy()
        comm.destroy()  # idempotent
        return comm.destroyed

    assert all(run_ranks(nranks, body))


# --- device communicator --------------------------------------------------------------------


@pytest.mark.parametrize("nranks", RANKS)
def test_dev_comm_fields_and_destroy(nranks):
    def body(rank, n, uid):
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            reqs = CCODevCommRequirements()
            reqs.gda_connection_type = GDA_CONNECTION_NONE
            reqs.lsa_barrier_count = 1
            dc = comm.create_dev_comm(reqs)
            assert isinstance(dc, DevCommHandle) and dc.alive
            assert (dc.rank, dc.world_size, dc.lsa_rank, dc.lsa_size) == (rank, n, rank, n)
            assert dc.ptr != 0 and dc.ptr == dc.struct.ptr
            s = dc.struct
            assert (s.magic, s.abiVersion, s.size) == (_abi.DEV_COMM_MAGIC, _abi.ABI_VERSION, 328)
            assert (s.lsaBarrierCount, s.gdaConnectionType, s.gdaSignalCount) == (1, GDA_CONNECTION_NONE, 16)
            assert (s.teamWorld.nRanks, s.teamWorld.rank) == (n, rank)
            assert s.abortFlag != 0 and s.lsaFlatBase != 0

            comm.destroy_dev_comm(dc)
            assert not dc.alive  # the library clears the magic of a destroyed struct
            with pytest.raises(CCOError) as twice:
                comm.destroy_dev_comm(dc)
            assert twice.value.code_name == "ccoInvalidArgument"

            # Defaults (reqs=None) are the C initializer's: CROSSNODE needs nothing on one node.
            assert comm.create_dev_comm().struct.gdaConnectionType == cco.GDA_CONNECTION_CROSSNODE
            # GDA among the ranks of this host: rings for every peer (the local backend).
            full = comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_FULL))
            assert full.struct.gdaPeerCount == n and full.struct.gdaRingSlots != 0 and full.struct.gdaSignals != 0
            # The direct path's bounds, by default and as asked (the keywords reach the library).
            assert (full.struct.gdaDirectMaxBytes, full.struct.gdaDirectGroupMaxBytes) == (4096, 65536)
            comm.destroy_dev_comm(full)
            bounds = comm.create_dev_comm(CCODevCommRequirements(
                gda_connection_type=GDA_CONNECTION_FULL, gda_direct_max_bytes=256, gda_direct_group_max_bytes=8192))
            assert (bounds.struct.gdaDirectMaxBytes, bounds.struct.gdaDirectGroupMaxBytes) == (256, 8192)
            comm.destroy_dev_comm(bounds)
            with pytest.raises(CCOError, match="gdaDirectGroupMaxBytes"):
                comm.create_dev_comm(CCODevCommRequirements(gda_direct_group_max_bytes=(1 << 20) + 1))
            with pytest.raises(CCOError) as off:  # SDMA queues without CCO_ENABLE_SDMA: an error, not a no-op
                comm.create_dev_comm(CCODevCommRequirements(sdma_queue_count=1))
            assert off.value.code_name == "ccoInvalidUsage" and "CCO_ENABLE_SDMA" in str(off.value)
            with pytest.raises(TypeError):
                comm.create_dev_comm({"lsa_barrier_count": 1})
            comm.barrier()
        return True

    assert all(run_ranks(nranks, body))


# --- the unique id --------------------------------------------------------------------------


def test_unique_id_is_picklable_bytes_that_work_after_pickling():
    # run_ranks already hands rank 1 the id through pickle; rank 0 round-trips it too,
    # and the two ranks pass it in different bytes-like forms.
    def body(rank, n, uid):
        assert isinstance(uid, bytes) and len(uid) == 128
        copy = pickle.loads(pickle.dumps(uid))
        assert copy == uid
        form = copy if rank == 0 else memoryview(bytearray(copy))
        with Communicator.init(n, rank, form, per_rank_vmm=VMM) as comm:
            comm.barrier()
        return uid

    first, second = run_ranks(2, body)
    assert first == second


def test_bad_unique_ids_are_refused_with_a_reason():
    def body(rank, n, uid):
        for wrong in (uid[:127], uid + b"\0", b"", None, "x" * 128, 12345):
            with pytest.raises(ValueError, match="128 bytes"):
                Communicator.init(1, 0, wrong)
        corrupted = bytearray(uid)
        corrupted[40] ^= 0xFF  # inside the id's address: only the checksum can tell
        with pytest.raises(CCOError) as bad:
            Communicator.init(1, 0, bytes(corrupted))
        assert bad.value.code == 1 and bad.value.code_name == "ccoInvalidArgument"
        assert "corrupted" in str(bad.value) and "corrupted" in bad.value.detail
        # The genuine id is still good after the failed attempt.
        with Communicator.init(1, 0, uid, per_rank_vmm=VMM) as comm:
            assert comm.world_size == 1
        return True

    assert run_ranks(1, body) == [True]


# --- bad arguments --------------------------------------------------------------------------


def test_rank_out_of_range():
    def body(rank, n, uid):
        for bad_rank, bad_n in ((1, 1), (5, 2), (-1, 1)):
            with pytest.raises(CCOError) as bad:
                Communicator.init(bad_n, bad_rank, uid)
            assert bad.value.code_name == "ccoInvalidArgument"
            assert f"rank={bad_rank}" in str(bad.value)
        with pytest.raises(ValueError, match="C int"):
            Communicator.init(1, 2**40, uid)
        return True

    assert run_ranks(1, body) == [True]


def test_alloc_mem_of_nothing_or_nonsense():
    def body(rank, n, uid):
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            with pytest.raises(CCOError) as zero:
                comm.alloc_mem(0)
            assert zero.value.code_name == "ccoInvalidArgument" and "size is 0" in str(zero.value)
            with pytest.raises(ValueError):
                comm.alloc_mem(-1)
            with pytest.raises(TypeError):
                comm.alloc_mem("4096")
            with pytest.raises(CCOError) as huge:
                comm.alloc_mem(VMM * 2)
            assert huge.value.code_name == "ccoOutOfMemory"
            assert comm.alloc_mem(4096).size == 4096  # still usable
        return True

    assert run_ranks(1, body) == [True]


def test_register_of_a_foreign_pointer_fails_on_every_rank():
    def body(rank, n, uid):
        foreign = ctypes.create_string_buffer(4096)
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            with pytest.raises(CCOError) as bad:
                comm.register_window(ctypes.addressof(foreign), 4096)
            assert "not memory of this communicator" in str(bad.value)
            comm.barrier()  # ranks failed together: still in step
            return bad.value.code_name

    # Each rank reports its own bad argument first (both passed one here).
    assert run_ranks(2, body) == ["ccoInvalidArgument", "ccoInvalidArgument"]


def test_mismatched_register_sizes_fail_on_every_rank_naming_the_sizes():
    def body(rank, n, uid):
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            mem = comm.alloc_mem(8192)
            with pytest.raises(CCOError) as bad:
                comm.register_window(mem.ptr, 4096 if rank == 0 else 8192)
            message = str(bad.value)
            assert bad.value.code_name == "ccoInvalidUsage"
            assert "size 4096" in message and "size 8192" in message
            win = comm.register_window(mem.ptr, 8192)  # agreeing sizes work
            assert win.handle != 0
            comm.barrier()
        return True

    assert all(run_ranks(2, body))


def test_use_after_destroy_raises_never_crashes():
    def body(rank, n, uid):
        comm = Communicator.init(n, rank, uid, per_rank_vmm=VMM)
        mem = comm.alloc_mem(4096)
        win = comm.register_window(mem.ptr, mem.size)
        dc = comm.create_dev_comm()
        comm.destroy()
        comm.destroy()  # idempotent
        uses = [
            lambda: comm.rank,
            lambda: comm.platform,
            lambda: comm.alloc_mem(4096),
            lambda: comm.free_mem(mem),
            lambda: comm.register_window(mem.ptr, mem.size),
            lambda: comm.peer_ptr(win, 0),
            lambda: comm.deregister_window(win),
            lambda: comm.create_dev_comm(),
            lambda: comm.destroy_dev_comm(dc),
            lambda: comm.barrier(),
            lambda: comm.abort(),
            lambda: comm.__enter__(),
        ]
        for use in uses:
            with pytest.raises(CCOError) as used:
                use()
            assert used.value.code_name == "ccoInvalidUsage" and "destroyed" in str(used.value)
        return True

    assert run_ranks(1, body) == [True]


def test_direct_construction_points_to_init():
    with pytest.raises(TypeError, match="Communicator.init"):
        Communicator(1, 0, b"\0" * 128)


# --- teardown when things go wrong ----------------------------------------------------------


@pytest.mark.parametrize("who_raises", ["every rank", "rank 0 only"])
def test_context_manager_cleanup_when_the_body_raises(who_raises):
    def body(rank, n, uid):
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="the body failed") as raised:
            with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
                mem = comm.alloc_mem(4096)
                comm.register_window(mem.ptr, mem.size)
                comm.alloc_window(4096)
                comm.create_dev_comm()
                comm.barrier()
                if rank == 0 or who_raises == "every rank":
                    raise RuntimeError("the body failed")
                # The survivor's next collective call fails instead of waiting for rank 0.
                with pytest.raises(CCOError) as peer_gone:
                    comm.barrier()
                assert peer_gone.value.code_name in ("ccoRemoteError", "ccoTimeout")
                raise RuntimeError("the body failed too")
        # The body's own exception got out (pytest.raises would see a teardown error
        # instead), and no collective teardown waited on peers: well within CCO_TIMEOUT_MS.
        assert comm.destroyed and "failed" in str(raised.value)
        return time.monotonic() - started

    timeout_s = int(RANK_ENV["CCO_TIMEOUT_MS"]) / 1000
    assert all(elapsed < timeout_s / 2 for elapsed in run_ranks(2, body))


def test_abort_breaks_a_blocking_barrier_and_destroy_stays_local():
    def body(rank, n, uid):
        started = time.monotonic()
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            comm.alloc_window(4096)  # tracked: must not be deregistered collectively
            if rank == 0:
                threading.Timer(0.3, comm.abort).start()
                with pytest.raises(CCOAbortedError) as aborted:
                    comm.barrier()  # rank 1 never comes
                assert aborted.value.code_name == "ccoAborted"
                with pytest.raises(CCOAbortedError):
                    comm.alloc_mem(4096)
            else:
                time.sleep(1.0)
                comm.abort()
        assert comm.destroyed
        return time.monotonic() - started

    assert all(elapsed < 5 for elapsed in run_ranks(2, body))


def test_a_timeout_is_a_ccotimeouterror_and_destroy_stays_local():
    def body(rank, n, uid):
        with Communicator.init(n, rank, uid, per_rank_vmm=VMM) as comm:
            comm.alloc_window(4096)
            if rank == 0:
                with pytest.raises(CCOTimeoutError) as timed_out:
                    comm.barrier()  # rank 1 is late
                assert timed_out.value.code_name == "ccoTimeout" and "CCO_TIMEOUT_MS" in str(timed_out.value)
            else:
                time.sleep(1.5)
                comm.abort()  # rank 0 is gone: nothing collective can follow
        return comm.destroyed

    assert all(run_ranks(2, body, env={"CCO_TIMEOUT_MS": "400"}))


# --- whole processes: a normal interpreter exit, and the guide's Quick Reference ------------


def _package_env(**extra):
    """The environment a child Python needs to import this tree's cco."""
    bindings = os.path.dirname(os.path.dirname(os.path.abspath(cco.__file__)))  # not resolved: stay in runfiles
    env = dict(os.environ, **RANK_ENV, **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (bindings, os.environ.get("PYTHONPATH")) if p)
    return env


RAISING_SCRIPT = """
import sys
from cco import Communicator
uid = Communicator.get_unique_id()
try:
    with Communicator.init(1, 0, uid, per_rank_vmm=64 << 20) as comm:
        comm.register_window(comm.alloc_mem(4096).ptr, 4096)
        comm.create_dev_comm()
        raise KeyError("from the body")
except KeyError:
    print("caught")
if sys.argv[1] == "uncaught":
    with Communicator.init(1, 0, Communicator.get_unique_id()) as comm:
        comm.alloc_mem(4096)
        raise KeyError("from the body, uncaught")
"""


@pytest.mark.parametrize("mode", ["caught", "uncaught"])
def test_process_exits_cleanly_after_the_body_raised(mode):
    done = subprocess.run([sys.executable, "-c", RAISING_SCRIPT, mode], env=_package_env(), capture_output=True,
                          text=True, timeout=60)
    assert "caught" in done.stdout
    if mode == "caught":
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode == 1 and "KeyError: 'from the body, uncaught'" in done.stderr
        assert "CCOError" not in done.stderr


def _quick_reference_path():
    for root in (Path.cwd(), Path(__file__).resolve().parents[2]):  # Bazel runfiles, then a checkout
        path = root / "examples" / "python" / "quick_reference.py"
        if path.exists():
            return path
    pytest.fail("examples/python/quick_reference.py not found")


def test_the_guides_quick_reference_runs_with_four_ranks(tmp_path):
    example = _quick_reference_path()
    nranks = 4
    ranks = [
        subprocess.Popen(
            [sys.executable, str(example)],
            env=_package_env(RANK=str(rank), WORLD_SIZE=str(nranks), CCO_BCAST_DIR=str(tmp_path)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(nranks)
    ]
    results = []
    deadline = time.monotonic() + 90
    for process in ranks:
        try:
            out, err = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        results.append((process.returncode, out, err))
    for rank, (code, out, err) in enumerate(results):
        assert code == 0, f"rank {rank} exited with {code}:\n{err}"
        assert f"rank {rank} of {nranks}: quick reference done" in out


def test_the_guides_barrier_example_runs_under_the_launcher():
    """examples/python/01_barrier.py (the guide's python/01_barrier) with 3 ranks through
    `python -m cco.launch`, on the cpu platform."""
    example = _quick_reference_path().parent / "01_barrier.py"
    done = subprocess.run([sys.executable, "-m", "cco.launch", "-n", "3", "--timeout", "90", str(example)],
                          env=_package_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for rank in range(3):
        assert f"rank {rank}/3: 10 barriers" in done.stdout


def test_the_guides_quick_reference_runs_under_the_launcher():
    """The same file under `python -m cco.launch`: the launcher shared the id already
    (cco.runtime.launched), so its four ranks form one job rather than four jobs of one."""
    done = subprocess.run([sys.executable, "-m", "cco.launch", "-n", "4", "--timeout", "90",
                           str(_quick_reference_path())], env=_package_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    for rank in range(4):
        assert f"rank {rank} of 4: quick reference done" in done.stdout
