# SPDX-License-Identifier: MIT
"""Several communicators on two GPUs (skipped with fewer), as the guide promises them: two
and three communicators alive at once in each rank, ranks as one process per GPU and as one
thread per GPU, the guide's lsa_copy on every communicator with exact data, in several
orders of creation, use and destruction. After every CCO call the caller's current device
must be the one it chose: a call that left another GPU current would send the next kernel
launch (or torch's next allocation) to a GPU that cannot reach the memory ("an illegal memory
access was encountered")."""

import importlib.util
import multiprocessing as mp
import os
import threading
import traceback

import pytest
import torch

N = 256
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "triton")

# Each order is a list of steps; "A+" creates communicator A with a window and a device
# communicator, "A*" creates A alone, "A=" gives A its window and device communicator,
# "copyA" runs lsa_copy on A and checks it, "A-" destroys A.
ORDERS = {
    "one_after_the_other": ["A+", "B+", "copyA", "copyB"],
    "creates_first": ["A*", "B*", "A=", "B=", "copyA", "copyB"],
    "copy_right_after_a_create": ["A+", "B*", "copyA", "B=", "copyB", "copyA"],
    "interleaved_create_destroy": ["A+", "B+", "copyA", "A-", "C+", "copyB", "copyC", "B-", "copyC", "A+", "copyA"],
}


pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                                reason="needs two GPUs")


def load_lsa_copy():
    spec = importlib.util.spec_from_file_location("lsa_copy", os.path.join(EXAMPLES, "lsa_copy.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lsa_copy


class Rank:
    """One rank (2 in all) on its own GPU, driving the communicators named in an order."""

    def __init__(self, rank, device, uids):
        from cco.ir.triton import cco

        self.rank, self.device = rank, device
        self.uids = {name: list(ids) for name, ids in uids.items()}  # this rank's own queues
        self.comms = {}
        self.libs = cco.get_extern_libs()
        self.lsa_copy = load_lsa_copy()
        torch.cuda.set_device(device)
        torch.zeros(1, device=f"cuda:{device}")

    def check_device(self, after):
        assert torch.cuda.current_device() == self.device, (
            f"rank {self.rank}: after {after} the current device is {torch.cuda.current_device()}, "
            f"not {self.device}")

    def create(self, name):
        from cco import Communicator

        uid = self.uids[name].pop(0)
        self.comms[name] = {"comm": Communicator.init(2, self.rank, uid, per_rank_vmm=256 << 20)}
        self.check_device(f"creating {name}")

    def give_window(self, name):
        from cco import CCODevCommRequirements, GDA_CONNECTION_NONE

        entry = self.comms[name]
        entry["win"] = entry["comm"].alloc_window(2 * N * 4)
        self.check_device(f"{name}.alloc_window")
        reqs = CCODevCommRequirements()
        reqs.gda_connection_type = GDA_CONNECTION_NONE
        reqs.lsa_barrier_count = 1
        entry["dc"] = entry["comm"].create_dev_comm(reqs)
        self.check_device(f"{name}.create_dev_comm")

    def copy(self, name, round_):
        from cco.memview import torch_view

        entry = self.comms[name]
        comm, win, dc = entry["comm"], entry["win"], entry["dc"]
        mine = torch_view(win.local_ptr, (2 * N,), torch.int32, device=f"cuda:{self.device}")
        tag = (ord(name) * 31 + round_) * 10000  # the same on every rank (no str hash: it is salted per process)
        mine[:N] = torch.arange(N, dtype=torch.int32, device=mine.device) + tag + self.rank * 1000
        mine[N:] = -1
        torch.cuda.synchronize()
        comm.barrier()
        self.check_device(f"{name}.barrier")
        self.lsa_copy[(1,)](dc.ptr, win.handle, peer=1 - self.rank, N=N, extern_libs=self.libs)
        torch.cuda.synchronize()
        comm.barrier()
        want = torch.arange(N, dtype=torch.int32, device=mine.device) + tag + (1 - self.rank) * 1000
        assert torch.equal(mine[N:], want), f"rank {self.rank}: {name} round {round_}: wrong data"

    def destroy(self, name):
        self.comms.pop(name)["comm"].destroy()
        self.check_device(f"destroying {name}")

    def run(self, order):
        for i, step in enumerate(order):
            if step.startswith("copy"):
                self.copy(step[4:], i)
            elif step.endswith("+"):
                self.create(step[0])
                self.give_window(step[0])
            elif step.endswith("*"):
                self.create(step[0])
            elif step.endswith("="):
                self.give_window(step[0])
            elif step.endswith("-"):
                self.destroy(step[0])
        for name in list(self.comms):
            self.destroy(name)


def mint_uids(order):
    """One fresh id per creation in `order`, per communicator name, minted here (this process
    hosts every rendezvous and outlives the ranks' creates)."""
    from cco import Communicator

    uids = {}
    for step in order:
        if step.endswith("+") or step.endswith("*"):
            uids.setdefault(step[0], []).append(Communicator.get_unique_id())
    return uids


def _process_rank(rank, uids, order, queue):
    os.environ["CCO_PLATFORM"] = "cuda"
    try:
        Rank(rank, rank, uids).run(order)
        queue.put((rank, "ok"))
    except BaseException as e:  # reported to the parent
        queue.put((rank, f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"))


@pytest.mark.parametrize("order", list(ORDERS), ids=list(ORDERS))
def test_one_process_per_gpu(order):
    steps = ORDERS[order]
    uids = mint_uids(steps)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_process_rank, args=(r, uids, steps, queue)) for r in range(2)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=240) for _ in range(2))
    for p in procs:
        p.join(timeout=60)
    assert results == {0: "ok", 1: "ok"}, results


@pytest.mark.parametrize("order", list(ORDERS), ids=list(ORDERS))
def test_one_thread_per_gpu(order):
    os.environ["CCO_PLATFORM"] = "cuda"
    steps = ORDERS[order]
    uids = mint_uids(steps)
    errors = {}

    def body(rank):
        try:
            Rank(rank, rank, uids).run(steps)
        except BaseException as e:
            errors[rank] = f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"

    threads = [threading.Thread(target=body, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    assert errors == {}, errors
