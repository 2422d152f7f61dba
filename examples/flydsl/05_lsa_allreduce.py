# SPDX-License-Identifier: MIT
"""The guide's python/05_flydsl_lsa_allreduce: a one-shot all-reduce of float32 over LSA, in
FlyDSL: after an LSA barrier (every rank's input is in place), each thread sums element i of
every rank's window through the peers' LSA pointers into its own output, and a second barrier
keeps inputs until all have read. Compiles and links for gfx942/gfx950; never run (no AMD GPU).
"""

from _runner import build, compile_only, job  # first: it says what is missing
import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.primitive import inttoptr, ptrtoint, range_constexpr

import cco.device.flydsl as cco

THREADS = 256


@flyc.kernel
def allreduce_kernel(dev_comm: fx.Int64, win: fx.Int64, out: fx.Pointer, n: fx.Int32, ranks: fx.Constexpr[int]):
    barrier = cco.DevComm(dev_comm).lsa_barrier()
    window = cco.Window(win)
    barrier.sync(0, coop=cco.CoopScope.BLOCK)  # every rank's input is in its window
    i = fx.block_idx.x * THREADS + fx.thread_idx.x
    if i < n:
        total = fx.Float32(0.0)
        for peer in range_constexpr(ranks):  # unrolled: one load per rank
            src = type(out)(inttoptr(out.type, window.lsa_ptr(peer, fx.Int64(i) * 4)))
            total = total + fx.generic_load(src, dtype=fx.Float32)
        dst = type(out)(inttoptr(out.type, fx.Int64(ptrtoint(out)) + fx.Int64(i) * 4))
        fx.generic_store(dst, total)
    barrier.sync(1, coop=cco.CoopScope.BLOCK)  # inputs stay until every rank has read them


@flyc.jit
def launch(dev_comm: fx.Int64, win: fx.Int64, out: fx.Pointer, n: fx.Int32, ranks: fx.Constexpr[int],
           stream: fx.Stream = fx.Stream(None)):
    blocks = (n + THREADS - 1) // THREADS
    allreduce_kernel(dev_comm, win, out, n, ranks).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1), stream=stream)


def main():
    if compile_only():
        return build(launch, fx.Int64(0), fx.Int64(0), flyc.from_c_void_p(fx.Int64, None), fx.Int32(4096), 8)
    from cco import GDA_CONNECTION_NONE, CCODevCommRequirements, Communicator

    rank, world, uid = job()
    n = 1 << 20
    with Communicator.init(world, rank, uid, per_rank_vmm=256 << 20) as comm:
        mem, out = comm.alloc_mem(4 * n), comm.alloc_mem(4 * n)
        win = comm.register_window(mem.ptr, 4 * n)
        dc = comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_NONE, lsa_barrier_count=2))
        launch(dc.ptr, win.handle, flyc.from_c_void_p(fx.Float32, out.ptr), n, world)
        comm.barrier()


if __name__ == "__main__":
    main()
