# SPDX-License-Identifier: MIT
"""The host SDK on the cuda platform, ranks as processes on the one GPU: creation,
symmetric memory, windows whose peers' copies are reached through the flat virtual range
(each rank writes its right neighbour's copy with cuMemcpyHtoD to the flat VA and reads
its own with cuMemcpyDtoH), device communicators; and the host-side timings."""

import ctypes
import multiprocessing as mp
import os

import pytest

N_WORDS = 1 << 20  # 4 MiB per rank


def _cuda():
    """libcuda with device 0's primary context current on this thread, as a driver-API
    caller sets it up itself (CCO binds a device only inside its own calls)."""
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
    lib.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
    ctx, dev = ctypes.c_void_p(), ctypes.c_int()
    assert lib.cuInit(0) == 0 and lib.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and lib.cuCtxSetCurrent(ctx) == 0
    return lib


def _rank(rank, n, uid, queue):
    os.environ["CCO_PLATFORM"] = "cuda"
    try:
        from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_NONE

        cuda = _cuda()
        with Communicator.init(n, rank, uid, per_rank_vmm=1 << 30) as comm:
            assert comm.platform == "cuda" and comm.lsa_size == n and comm.lsa_rank == rank
            mem = comm.alloc_mem(4 * N_WORDS)
            win = comm.register_window(mem.ptr, mem.size)
            right, left = (rank + 1) % n, (rank - 1) % n
            payload = (ctypes.c_uint32 * N_WORDS)(*[rank * 1000 + i for i in range(N_WORDS)])
            peer = comm.peer_ptr(win, right, 0)
            # The flat VA: peer = base + right * stride + offset, the same arithmetic as the kernel's.
            assert peer - comm.peer_ptr(win, rank, 0) == (right - rank) * (comm.peer_ptr(win, 1 % n, 0) -
                                                                           comm.peer_ptr(win, 0, 0))
            assert cuda.cuMemcpyHtoD_v2(peer, payload, 4 * N_WORDS) == 0
            assert cuda.cuCtxSynchronize() == 0  # a copy from pageable memory may return before it lands
            comm.barrier()
            got = (ctypes.c_uint32 * N_WORDS)()
            assert cuda.cuMemcpyDtoH_v2(got, mem.ptr, 4 * N_WORDS) == 0
            bad = sum(1 for i in range(0, N_WORDS, 997) if got[i] != left * 1000 + i)
            assert bad == 0 and got[N_WORDS - 1] == left * 1000 + N_WORDS - 1
            # A window over the middle of an allocation: peers reach it at their peer pointer.
            # (Nothing reads outside it: a copy from an unmapped device address is a sticky
            # illegal-address error that ends the context.)
            gran = 2 << 20
            mem2 = comm.alloc_mem(4 * gran)
            win2 = comm.register_window(mem2.ptr + gran, 2 * gran)
            block = (ctypes.c_uint32 * 1024)(*[rank * 7 + i for i in range(1024)])
            rc = cuda.cuMemcpyHtoD_v2(comm.peer_ptr(win2, right, 0), block, 4096)
            assert rc == 0, f"a copy into the peer's sub-window: CUresult {rc}"
            assert cuda.cuCtxSynchronize() == 0
            comm.barrier()
            mine = (ctypes.c_uint32 * 1024)()
            rc = cuda.cuMemcpyDtoH_v2(mine, mem2.ptr + gran, 4096)
            assert rc == 0, f"reading the sub-window back: CUresult {rc}"
            assert list(mine) == [left * 7 + i for i in range(1024)], f"sub-window holds {list(mine[:4])}..."
            comm.barrier()
            comm.deregister_window(win2)
            comm.free_mem(mem2)
            reqs = CCODevCommRequirements()
            reqs.gda_connection_type = GDA_CONNECTION_NONE
            reqs.lsa_barrier_count = 4
            dc = comm.create_dev_comm(reqs)
            assert dc.rank == rank and dc.world_size == n and dc.lsa_rank == rank and dc.lsa_size == n
            size = ctypes.sizeof(dc.struct)
            raw = (ctypes.c_uint8 * size)()
            assert cuda.cuMemcpyDtoH_v2(raw, dc.ptr, size) == 0  # the device copy equals the returned struct
            assert bytes(raw) == bytes(dc.struct)
            comm.barrier()
        queue.put((rank, "ok"))
    except BaseException as e:  # reported to the parent
        import traceback

        queue.put((rank, f"{type(e).__name__}: {e} {traceback.format_exc()[-600:]}"))


@pytest.mark.parametrize("n", [2, 4])
def test_ranks_as_processes_on_one_gpu(n):
    from cco import Communicator

    ctx = mp.get_context("spawn")
    uid = Communicator.get_unique_id()
    queue = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, n, uid, queue)) for r in range(n)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=180) for _ in range(n))
    for p in procs:
        p.join(timeout=60)
    assert results == {r: "ok" for r in range(n)}


def test_gpu_platform_round_trip_binary():
    """The C++ platform test (built on the CPU machine, staged) on the real driver."""
    import subprocess

    binary = os.path.join(os.environ.get("CCO_STAGE", "stage"), "bin", "gpu_platform_test")
    if not os.path.exists(binary):
        pytest.skip("stage/bin/gpu_platform_test not staged")
    # Twice: copies one by one, and as launches of prepared graphs (CCO_COPY_GRAPHS=1).
    for graphs in ("0", "1"):
        env = dict(os.environ, CCO_COPY_GRAPHS=graphs)
        r = subprocess.run([binary], capture_output=True, text=True, timeout=300, env=env)
        print(r.stdout[-3000:])
        assert r.returncode == 0, f"CCO_COPY_GRAPHS={graphs}: " + r.stdout[-3000:] + r.stderr[-2000:]
    # Copies between device allocations, as the proxy's runs: the prepared graphs take every
    # run's new operands (the driver said no refusal), and every byte lands (the test's own check).
    env = dict(os.environ, CCO_COPY_GRAPHS="1")
    r = subprocess.run([binary, "--gtest_filter=CudaPlatformTest.CopyRunsLandExactly"], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "CCO_COPY_GRAPHS:" not in r.stderr, r.stderr[-2000:]
