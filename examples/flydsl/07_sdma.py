# SPDX-License-Identifier: MIT
"""The guide's python/07_flydsl_sdma: a FlyDSL kernel puts through an SDMA queue (the copy
engine) into the next LSA rank's window with a signal, waits for the previous rank's, and
quiets the queue. Needs CCO_ENABLE_SDMA=1 at run time. Compiles and links for gfx942/gfx950;
never run (no AMD GPU here).
"""

from _runner import build, compile_only, job  # first: it says what is missing
import flydsl.compiler as flyc
import flydsl.expr as fx

import cco.device.flydsl as cco

NBYTES = 1 << 20


@flyc.kernel
def sdma_kernel(dev_comm: fx.Int64, win: fx.Int64, peer: fx.Int32, prev: fx.Int32):
    sdma = cco.DevComm(dev_comm).sdma()
    sdma.put(peer, win, NBYTES, win, 0, NBYTES, 0, 0, coop=cco.CoopScope.BLOCK, signal=cco.SdmaSignal.ON)
    sdma.wait_signal(prev, 0, 1, coop=cco.CoopScope.BLOCK)
    sdma.quiet(peer, coop=cco.CoopScope.BLOCK)


@flyc.jit
def launch(dev_comm: fx.Int64, win: fx.Int64, peer: fx.Int32, prev: fx.Int32, stream: fx.Stream = fx.Stream(None)):
    sdma_kernel(dev_comm, win, peer, prev).launch(grid=(1, 1, 1), block=(256, 1, 1), stream=stream)


def main():
    if compile_only():
        return build(launch, fx.Int64(0), fx.Int64(0), fx.Int32(1), fx.Int32(1))
    from cco import GDA_CONNECTION_NONE, CCODevCommRequirements, Communicator

    rank, world, uid = job()
    with Communicator.init(world, rank, uid, per_rank_vmm=256 << 20) as comm:
        mem = comm.alloc_mem(2 * NBYTES)
        win = comm.register_window(mem.ptr, 2 * NBYTES)
        dc = comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_NONE, sdma_queue_count=0))
        launch(dc.ptr, win.handle, (rank + 1) % world, (rank + world - 1) % world)
        comm.barrier()


if __name__ == "__main__":
    main()
