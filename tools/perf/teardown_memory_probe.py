# SPDX-License-Identifier: MIT
"""Which teardown keeps GPU memory: three rank processes on GPU 0 (run it under MPS) make and
destroy communicators with a window and a device communicator, each way a communicator can end
without a death: destroyed whole, destroyed with its device communicator still alive, aborted
then destroyed, aborted while a kernel waits on it. Each rank prints the GPU memory the driver
lists for its process after each step (nvidia-smi, as tests/gpu/test_fail_bounded_gpu.py
counts it). A way that keeps memory shows as a destroyed figure that grows.

    python3 tools/perf/teardown_memory_probe.py      (from the repository root, the wheel installed)
"""

import multiprocessing as mp
import os
import sys
import time

WAYS = ["whole", "dc-alive", "abort-then-destroy", "abort-then-destroy", "whole", "abort-while-waiting", "whole"]


def _rank(rank, uids, results):
    try:
        import torch

        sys.path.insert(0, os.path.join(os.getcwd(), "tests", "gpu"))
        import test_fail_bounded_gpu as t

        from cco import Communicator
        from cco.ir.triton import cco

        os.environ["CCO_PLATFORM"] = "cuda"
        os.environ.setdefault("CCO_TIMEOUT_MS", "5000")
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
        t._warm_up()  # the kernels' modules, before the first figure
        figures = []

        def census(label):
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            time.sleep(0.3)
            figures.append((label, t._census()["gpu_mib"]))

        census("start")
        libs = cco.get_extern_libs()
        for i, way in enumerate(WAYS):
            comm = Communicator.init(3, rank, uids[i], per_rank_vmm=64 << 20)
            comm.alloc_window(1 << 20)
            dc = comm.create_dev_comm(t._requirements("gda-signal"))
            status = torch.full((1,), -1, dtype=torch.int32, device="cuda")
            t.lsa_barrier[(1,)](dc.ptr, status, extern_libs=libs)
            torch.cuda.synchronize()
            comm.barrier()
            census(f"{i} {way}: live")
            if way == "whole":
                comm.destroy_dev_comm(dc)
            elif way == "abort-while-waiting":  # a signal nobody sends; the abort ends the wait
                t.wait_gda_signal[(1,)](dc.ptr, status, extern_libs=libs)
                time.sleep(0.2)
                comm.abort()
                torch.cuda.synchronize()
                figures.append((f"{i} {way}: the kernel's status", int(status.item())))
            elif way == "abort-then-destroy":
                comm.abort()
            try:
                comm.destroy()
            except Exception as e:  # a collective step of the teardown may fail after an abort
                figures.append((f"{i} {way}: destroy said", str(e)[:80]))
            census(f"{i} {way}: destroyed")
        results.put((rank, figures))
    except BaseException as e:
        import traceback

        results.put((rank, f"{e}\n{traceback.format_exc()}"))


def main():
    from cco import Communicator

    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    uids = [Communicator.get_unique_id() for _ in WAYS]
    procs = [ctx.Process(target=_rank, args=(r, uids, results)) for r in range(3)]
    for p in procs:
        p.start()
    for _ in procs:
        rank, figures = results.get(timeout=300)
        print(f"rank {rank}")
        if isinstance(figures, str):
            print(figures)
            continue
        for label, value in figures:
            print(f"  {label:45s} {value}")
    for p in procs:
        p.join(30)


if __name__ == "__main__":
    main()
