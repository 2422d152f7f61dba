# SPDX-License-Identifier: MIT
"""GDA from Triton across its modes: (coop, thread mode) x signal action, plus the DEFERRED and
CALLER_ORDERED handles (the guide's "GDA modes" example, in Triton). Each rank puts six
chunks of its window into the next rank's window, one chunk per mode with its own signal,
then waits for the exact signal totals the left rank's posts add up to and checks the bytes.

In Triton every thread of a program runs a scalar call, so the coop decides who posts:
  coop=THREAD       every thread posts (THREADS posts of the same bytes);
                    thread_mode=AGGREGATE: the lanes of a warp reserve their slots at once
  coop=WARP         one post per warp
  coop=BLOCK        one post per program
Deferred posts do not ring: the next ring on their ring releases them (here an Immediate
signal). CallerOrdered posts carry their signal and are released by that mode's flush.

  python -m cco.launch -n 2 examples/triton/gda_modes.py

Status: compiled ahead of time for sm_90, sm_100, gfx942 and gfx950 in CI
(tests/python/perf_kernels_test.py); runs on an H200 with 2 ranks (tests/gpu/run_all.sh gda).
"""

import triton
import triton.language as tl

from cco.ir.triton import cco

CHUNK = 4096  # bytes per mode
MODES = 6


@triton.jit
def gda_modes(dc, win, status, peer, THREADS: tl.constexpr, WARPS: tl.constexpr, CHUNK: tl.constexpr):
    INC: tl.constexpr = cco.SignalOp.INC
    ADD: tl.constexpr = cco.SignalOp.ADD
    NONE: tl.constexpr = cco.SignalOp.NONE
    THREAD: tl.constexpr = cco.CoopScope.THREAD
    WARP: tl.constexpr = cco.CoopScope.WARP
    BLOCK: tl.constexpr = cco.CoopScope.BLOCK
    INDEPENDENT: tl.constexpr = cco.ThreadMode.INDEPENDENT
    AGGREGATE: tl.constexpr = cco.ThreadMode.AGGREGATE
    DST: tl.constexpr = 8 * CHUNK  # the received chunks, after the sources
    bad = 0
    # The guide's call form: the handle first, the context (0) left out, signal ids and
    # amounts by name.
    # Mode 0, coop THREAD, independent: signal 0 += 1 per thread.
    bad += cco.Gda.put(dc, peer, win, DST, win, 0, CHUNK, coop=THREAD, thread_mode=INDEPENDENT, signal_op=INC,
                       signal_id=0)
    # Mode 1, coop THREAD, aggregate: signal 1 += 2 per thread.
    bad += cco.Gda.put(dc, peer, win, DST + CHUNK, win, CHUNK, CHUNK, coop=THREAD, thread_mode=AGGREGATE,
                       signal_op=ADD, signal_id=1, signal_val=2)
    # Mode 2, coop WARP: signal 2 += 1 per warp.
    bad += cco.Gda.put(dc, peer, win, DST + 2 * CHUNK, win, 2 * CHUNK, CHUNK, coop=WARP, signal_op=INC, signal_id=2)
    # Mode 3, coop BLOCK: signal 3 += 5 once.
    bad += cco.Gda.put(dc, peer, win, DST + 3 * CHUNK, win, 3 * CHUNK, CHUNK, coop=BLOCK, signal_op=ADD,
                       signal_id=3, signal_val=5)
    # Mode 4, DEFERRED: a put with no signal, released by the Immediate signal behind it.
    bad += cco.GdaDeferred.put(dc, peer, win, DST + 4 * CHUNK, win, 4 * CHUNK, CHUNK, coop=BLOCK, signal_op=NONE)
    bad += cco.Gda.signal(dc, peer, signal_id=4, coop=BLOCK, signal_op=INC)
    # Mode 5, CALLER_ORDERED: the put carries signal 5; its mode's flush releases it. (The
    # ABI's order, every argument by position, the context second, is the same call.)
    bad += cco.GdaCallerOrdered.put(dc, 0, peer, win, DST + 5 * CHUNK, win, 5 * CHUNK, CHUNK, 5, 1, coop=BLOCK,
                                    thread_mode=INDEPENDENT, signal_op=INC)
    bad += cco.GdaCallerOrdered.flush(dc, coop=BLOCK)
    # What the left rank's posts add up to, exactly (a wait consumes what it waited for).
    bad += cco.Gda.wait_signal(dc, 0, THREADS, coop=BLOCK)
    bad += cco.Gda.wait_signal(dc, 1, 2 * THREADS, coop=BLOCK)
    bad += cco.Gda.wait_signal(dc, 2, WARPS, coop=BLOCK)
    bad += cco.Gda.wait_signal(dc, 3, 5, coop=BLOCK)
    bad += cco.Gda.wait_signal(dc, 4, 1, coop=BLOCK)
    bad += cco.Gda.wait_signal(dc, 5, 1, coop=BLOCK)
    bad += cco.Gda.flush(dc, coop=BLOCK)
    # Nothing more may arrive: every signal is back to zero once its total is consumed.
    for s in tl.static_range(6):
        bad += cco.Gda.read_signal(dc, s).to(tl.int32)
    tl.store(status, bad)


def main(warps=4):
    from cco import GDA_CONNECTION_FULL, CCODevCommRequirements, Communicator
    from cco.memview import torch_view
    from cco.runtime import bootstrap, gpu_torch

    torch = gpu_torch("examples/triton/gda_modes.py")  # here: the kernel also compiles ahead of time without torch

    rank, nranks, uid = bootstrap()
    with Communicator.init(nranks, rank, uid, per_rank_vmm=256 * 1024 * 1024) as comm:
        mem = comm.alloc_mem(16 * CHUNK)
        win = comm.register_window(mem.ptr, mem.size)
        dc = comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_FULL,
                                                         gda_context_count=1, gda_signal_count=8))
        # A stream of our own, waited on alone (docs/gda.md, "Streams and threads").
        stream = torch.cuda.Stream()
        words = MODES * CHUNK // 4
        with torch.cuda.stream(stream):
            mine = torch_view(mem.ptr, (16 * CHUNK // 4,), torch.int32)
            mine[:words] = torch.arange(words, dtype=torch.int32, device=mine.device) + rank * 1_000_000
            mine[8 * CHUNK // 4:] = -1
            status = torch.full((1,), -1, dtype=torch.int32, device=mine.device)
        stream.synchronize()
        comm.barrier()

        lanes = 64 if torch.version.hip else 32  # a wavefront on AMD, a warp on NVIDIA
        with torch.cuda.stream(stream):
            gda_modes[(1,)](dc.ptr, win.handle, status, (rank + 1) % nranks, THREADS=lanes * warps, WARPS=warps,
                            CHUNK=CHUNK, num_warps=warps, extern_libs=cco.get_extern_libs())
        stream.synchronize()
        comm.barrier()

        left = (rank - 1) % nranks
        with torch.cuda.stream(stream):
            want = torch.arange(words, dtype=torch.int32, device=mine.device) + left * 1_000_000
            got = mine[8 * CHUNK // 4:8 * CHUNK // 4 + words]
            ok = int(status.item()) == 0 and torch.equal(got, want)
        print(f"rank {rank}/{nranks}: six GDA modes from rank {left}: {'OK' if ok else 'WRONG'} "
              f"(status {int(status.item())})", flush=True)
        return 0 if ok else 1


if __name__ == "__main__":
    from cco.runtime import run_script

    raise SystemExit(run_script(main))
