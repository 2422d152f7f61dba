# SPDX-License-Identifier: MIT
"""The guide's python/04_flydsl_lsa_put: a FlyDSL kernel stores straight into the next rank's
window through its LSA pointer (no CCO data movement: a plain store), then meets the other
ranks at the LSA barrier. Compiles and links for gfx942/gfx950; never run (no AMD GPU here).
"""

from _runner import build, compile_only, job  # first: it says what is missing
import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.primitive import inttoptr

import cco.device.flydsl as cco


@flyc.kernel
def lsa_put_kernel(dev_comm: fx.Int64, win: fx.Int64, out: fx.Pointer):
    dc = cco.DevComm(dev_comm)
    me, size = dc.lsa_rank(), dc.lsa_size()
    peer = (me + 1) % size
    address = cco.Window(win).lsa_ptr(peer, 0)            # the peer's copy of the window
    target = type(out)(inttoptr(out.type, address))        # ... as a pointer of the kernel's kind
    fx.generic_store(target, fx.Int64(me) + 1000)
    status = dc.lsa_barrier().sync(0, coop=cco.CoopScope.BLOCK)
    fx.generic_store(out, fx.Int64(status))


@flyc.jit
def launch(dev_comm: fx.Int64, win: fx.Int64, out: fx.Pointer, stream: fx.Stream = fx.Stream(None)):
    lsa_put_kernel(dev_comm, win, out).launch(grid=(1, 1, 1), block=(64, 1, 1), stream=stream)


def main():
    if compile_only():
        return build(launch, fx.Int64(0), fx.Int64(0), flyc.from_c_void_p(fx.Int64, None))
    from cco import GDA_CONNECTION_NONE, CCODevCommRequirements, Communicator

    rank, world, uid = job()
    with Communicator.init(world, rank, uid, per_rank_vmm=256 << 20) as comm:
        mem, status = comm.alloc_mem(4096), comm.alloc_mem(4096)
        win = comm.register_window(mem.ptr, 4096)
        dc = comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_NONE, lsa_barrier_count=1))
        launch(dc.ptr, win.handle, flyc.from_c_void_p(fx.Int64, status.ptr))
        comm.barrier()


if __name__ == "__main__":
    main()
