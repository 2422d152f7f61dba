# SPDX-License-Identifier: MIT
"""SDMA from Triton (the guide's "Triton SDMA put between 2 GPUs"): each rank puts a chunk of
its window into the next rank's window on every queue, with a signal, and gets a chunk of the
previous rank's window; it waits for its pools (the signal from the left rank on each queue,
its own gets landed) and checks every byte. Copy engines move the data: the kernel only posts.
With --pointers the same transfers name resolved pointers (Window.lsa_ptr) instead of
window offsets (Sdma.put_ptr / get_ptr).

  CCO_ENABLE_SDMA=1 python -m cco.launch -n 2 examples/triton/sdma_put.py [--pointers]

Status: compiled ahead of time for sm_90, sm_100, gfx942 and gfx950 in CI; runs on an H200
with 2 and 4 ranks (tests/gpu/run_all.sh sdma); --pointers compiled in CI, not yet run.
"""

import os

import triton
import triton.language as tl

from cco.ir.triton import cco

CHUNK = 1 << 20  # bytes per queue and direction
QUEUES = 2


@triton.jit
def sdma_exchange(dc, win, status, right, left, QUEUES: tl.constexpr, CHUNK: tl.constexpr,
                  POINTERS: tl.constexpr = False):
    BLOCK: tl.constexpr = cco.CoopScope.BLOCK
    me = cco.DevComm.lsa_rank(dc)
    bad = 0
    for q in range(QUEUES):
        # mine [q*CHUNK) -> right's inbox [(QUEUES+q)*CHUNK); left's [q*CHUNK) -> my gotbox [(2*QUEUES+q)*CHUNK)
        if POINTERS:  # a put's dst in the peer's copy of the window, its src in mine; a get the other way
            bad += cco.Sdma.put_ptr(dc, right, cco.Window.lsa_ptr(win, right, (QUEUES + q) * CHUNK),
                                    cco.Window.lsa_ptr(win, me, q * CHUNK), CHUNK, q, 0, coop=BLOCK,
                                    signal=cco.SdmaSignal.ON)
            bad += cco.Sdma.get_ptr(dc, left, cco.Window.lsa_ptr(win, me, (2 * QUEUES + q) * CHUNK),
                                    cco.Window.lsa_ptr(win, left, q * CHUNK), CHUNK, q, 0, coop=BLOCK,
                                    signal=cco.SdmaSignal.ON)
        else:
            bad += cco.Sdma.put(dc, right, win, (QUEUES + q) * CHUNK, win, q * CHUNK, CHUNK, q, 0, coop=BLOCK,
                                signal=cco.SdmaSignal.ON)
            bad += cco.Sdma.get(dc, left, win, (2 * QUEUES + q) * CHUNK, win, q * CHUNK, CHUNK, q, 0, coop=BLOCK,
                                signal=cco.SdmaSignal.ON)
    for q in range(QUEUES):
        bad += cco.Sdma.wait_signal(dc, left, q, 1, coop=BLOCK)   # left's put landed here
        bad += cco.Sdma.wait_local(dc, left, q, 1, coop=BLOCK)    # my get from left landed
    bad += cco.Sdma.quiet(dc, right, coop=BLOCK)
    tl.atomic_add(status, bad)


def main():
    import sys

    from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_NONE
    from cco.memview import torch_view
    from cco.runtime import bootstrap, gpu_torch

    torch = gpu_torch("examples/triton/sdma_put.py")

    pointers = "--pointers" in sys.argv[1:]
    os.environ.setdefault("CCO_ENABLE_SDMA", "1")
    rank, nranks, uid = bootstrap()
    with Communicator.init(nranks, rank, uid, per_rank_vmm=256 * 1024 * 1024) as comm:
        mem = comm.alloc_mem(3 * QUEUES * CHUNK)
        win = comm.register_window(mem.ptr, mem.size)
        dc = comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_NONE,
                                                         sdma_queue_count=QUEUES))
        words = QUEUES * CHUNK // 4
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            mine = torch_view(mem.ptr, (3 * words,), torch.int32)
            mine[:words] = torch.arange(words, dtype=torch.int32, device=mine.device) + rank * 1_000_000
            mine[words:] = -1
            status = torch.zeros(1, dtype=torch.int32, device=mine.device)
        stream.synchronize()
        comm.barrier()
        right, left = (comm.lsa_rank + 1) % comm.lsa_size, (comm.lsa_rank - 1) % comm.lsa_size
        with torch.cuda.stream(stream):
            sdma_exchange[(1,)](dc.ptr, win.handle, status, right, left, QUEUES=QUEUES, CHUNK=CHUNK,
                                POINTERS=pointers, num_warps=4, extern_libs=cco.get_extern_libs())
        stream.synchronize()
        comm.barrier()
        with torch.cuda.stream(stream):
            want = torch.arange(words, dtype=torch.int32, device=mine.device) + left * 1_000_000
            ok = (int(status.item()) == 0 and torch.equal(mine[words:2 * words], want)
                  and torch.equal(mine[2 * words:], want))
        print(f"rank {rank}/{nranks}: SDMA put from and get of rank {left} on {QUEUES} queues"
              f"{' (resolved pointers)' if pointers else ''}: "
              f"{'OK' if ok else 'WRONG'} (status {int(status.item())})", flush=True)
        return 0 if ok else 1


if __name__ == "__main__":
    from cco.runtime import run_script

    raise SystemExit(run_script(main))
