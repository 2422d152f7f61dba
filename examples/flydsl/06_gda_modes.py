# SPDX-License-Identifier: MIT
"""The guide's python/06_flydsl_gda_modes: GDA from FlyDSL across (thread_mode, coop) x signal
action, plus the DEFERRED and CALLER_ORDERED handles, then waits for what the peer sent.
Compiles and links for gfx942/gfx950; never run (no AMD GPU here).
"""

from _runner import build, compile_only, job  # first: it says what is missing
import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.primitive import range_constexpr

import cco.device.flydsl as cco

CHUNK = 256


@flyc.kernel
def modes_kernel(dev_comm: fx.Int64, win: fx.Int64, peer: fx.Int32):
    dc = cco.DevComm(dev_comm)
    gda = dc.gda(0)
    S, C, T = cco.SignalOp, cco.CoopScope, cco.ThreadMode
    gda.put(peer, win, 8 * CHUNK, win, 0, CHUNK, signal_op=S.INC, signal_id=0, coop=C.THREAD,
            thread_mode=T.INDEPENDENT)
    gda.put(peer, win, 9 * CHUNK, win, CHUNK, CHUNK, signal_op=S.ADD, signal_id=1, signal_value=2, coop=C.THREAD,
            thread_mode=T.AGGREGATE)
    gda.put(peer, win, 10 * CHUNK, win, 2 * CHUNK, CHUNK, signal_op=S.INC, signal_id=2, coop=C.WARP)
    gda.put_value(peer, win, 11 * CHUNK, 0x5151, signal_op=S.ADD, signal_id=3, signal_value=5, coop=C.BLOCK)
    dc.gda_deferred(0).put(peer, win, 12 * CHUNK, win, 4 * CHUNK, CHUNK, coop=C.BLOCK)
    gda.signal(peer, 4, 1, signal_op=S.INC, coop=C.BLOCK)           # rings the deferred put too
    ordered = dc.gda_caller_ordered(0)
    ordered.put(peer, win, 13 * CHUNK, win, 5 * CHUNK, CHUNK, signal_op=S.INC, signal_id=5, coop=C.BLOCK)
    ordered.flush(coop=C.BLOCK)                                      # only its own flush releases it
    for signal in range_constexpr(6):  # unrolled while tracing (a plain range is a device loop)
        gda.wait_signal(signal, 1, 64, coop=C.BLOCK)
    gda.flush(coop=C.BLOCK)


@flyc.jit
def launch(dev_comm: fx.Int64, win: fx.Int64, peer: fx.Int32, stream: fx.Stream = fx.Stream(None)):
    modes_kernel(dev_comm, win, peer).launch(grid=(1, 1, 1), block=(256, 1, 1), stream=stream)


def main():
    if compile_only():
        return build(launch, fx.Int64(0), fx.Int64(0), fx.Int32(1))
    from cco import GDA_CONNECTION_FULL, CCODevCommRequirements, Communicator

    rank, world, uid = job()
    with Communicator.init(world, rank, uid, per_rank_vmm=256 << 20) as comm:
        mem = comm.alloc_mem(16 * CHUNK)
        win = comm.register_window(mem.ptr, 16 * CHUNK)
        dc = comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_FULL, gda_signal_count=8))
        launch(dc.ptr, win.handle, (rank + 1) % world)
        comm.barrier()


if __name__ == "__main__":
    main()
