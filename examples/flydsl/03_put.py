# SPDX-License-Identifier: MIT
"""The guide's python/03_flydsl_put: a FlyDSL kernel puts its rank's window into the next
rank's with a signal, waits for the previous rank's signal, and flushes (GDA, FULL connections:
the guide's "GDA on one node"). Compiles and links for gfx942/gfx950; never run (no AMD GPU here).

CCO_GDA_CONN (the guide's MORI_CCO_GDA_CONN) = none | crossnode | full (default) | rail picks
the device communicator's GDA connection type; the example reads it, the library does not.
"""
import os

from _runner import build, compile_only, job  # first: it says what is missing
import flydsl.compiler as flyc
import flydsl.expr as fx

import cco.device.flydsl as cco

NBYTES = 4096


@flyc.kernel
def put_kernel(dev_comm: fx.Int64, send_win: fx.Int64, recv_win: fx.Int64, nbytes: fx.Int64, peer: fx.Int32):
    gda = cco.DevComm(dev_comm).gda(0)  # build the handle once
    gda.put(peer, recv_win, 0, send_win, 0, nbytes, signal_op=cco.SignalOp.INC, signal_id=0,
            coop=cco.CoopScope.BLOCK)
    gda.wait_signal(0, 1, 64, coop=cco.CoopScope.BLOCK)
    gda.flush(coop=cco.CoopScope.BLOCK)


@flyc.jit
def launch(dev_comm: fx.Int64, send_win: fx.Int64, recv_win: fx.Int64, nbytes: fx.Int64, peer: fx.Int32,
           stream: fx.Stream = fx.Stream(None)):
    put_kernel(dev_comm, send_win, recv_win, nbytes, peer).launch(grid=(1, 1, 1), block=(256, 1, 1), stream=stream)


def main():
    if compile_only():
        return build(launch, fx.Int64(0), fx.Int64(0), fx.Int64(0), fx.Int64(NBYTES), fx.Int32(1))
    import cco as host

    name = os.environ.get("CCO_GDA_CONN", os.environ.get("MORI_CCO_GDA_CONN", "full")).lower()
    connection = getattr(host, f"GDA_CONNECTION_{name.upper()}", None) if name.isalpha() else None
    if connection is None:
        raise SystemExit(f"CCO_GDA_CONN={name!r}: none, crossnode, full or rail")
    rank, world, uid = job()
    with host.Communicator.init(world, rank, uid, per_rank_vmm=256 << 20) as comm:
        send, recv = comm.alloc_mem(NBYTES), comm.alloc_mem(NBYTES)
        send_win, recv_win = comm.register_window(send.ptr, NBYTES), comm.register_window(recv.ptr, NBYTES)
        dc = comm.create_dev_comm(host.CCODevCommRequirements(gda_connection_type=connection))
        launch(dc.ptr, send_win.handle, recv_win.handle, NBYTES, (rank + 1) % world)
        comm.barrier()


if __name__ == "__main__":
    main()
