# SPDX-License-Identifier: MIT
"""What the operators keep per communicator: a device communicator, a small window through
which ranks agree once per shape, the plans (one workspace window each), and the launch.

Everything collective happens when a plan is made, at the first call of an operator at a
shape, which every rank makes together: the ranks compare what they were called with (a
mismatch fails on every rank, naming both sides), allocate and register the workspace, zero
it and load the kernel. Later calls at that shape only check their operands on the host and
launch one kernel: no host synchronisation, no collective, nothing a CUDA graph could not
capture.
"""

import pickle
import threading
import weakref
from collections import OrderedDict

from cco.ops import checks, planning
from cco.ops.checks import OperandError

AGREE_BYTES = 60 << 10     # what one rank puts into an agreement (the bootstrap carries 64 KiB)
TABLES_KEPT = 64           # split patterns whose tables stay on the device, per plan


class NotPlannedError(RuntimeError):
    """An operator's first call at a shape came inside a CUDA graph capture."""


def _torch():
    import torch

    return torch


def gpu_features(device):
    """(fp8, tma) of GPU `device`: e4m3 inputs (NVIDIA sm_90+, AMD gfx950) and the tensor memory
    accelerator the GEMM core reads tiles with (NVIDIA sm_90+)."""
    torch = _torch()
    nvidia_sm90 = not getattr(torch.version, "hip", None) and torch.cuda.get_device_capability(device)[0] >= 9
    arch = getattr(torch.cuda.get_device_properties(device), "gcnArchName", "")
    return nvidia_sm90 or "gfx950" in arch, nvidia_sm90


def operand(t, device):
    """The checks' record of a tensor."""
    return checks.Operand(tuple(t.shape), str(t.dtype).replace("torch.", ""), tuple(t.stride()),
                          t.is_cuda and t.device.index == device, t.data_ptr() % 16 == 0)


class Workspace:
    """A plan's symmetric workspace: `size` bytes at the same offset in every rank's window."""

    def __init__(self, comm, size):
        self.mem = comm.alloc_mem(size)
        self.win = comm.register_window(self.mem.ptr, size)
        self.size = size

    def view(self, offset, count, dtype):
        from cco.memview import torch_view

        return torch_view(self.win.local_ptr + offset, (count,), dtype)


class OpsContext:
    _by_comm = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    @classmethod
    def of(cls, comm):
        with cls._lock:
            ctx = cls._by_comm.get(comm)
        if ctx is None or ctx.comm is not comm:
            ctx = cls(comm)
            with cls._lock:
                cls._by_comm[comm] = ctx
        if comm.destroyed:
            raise RuntimeError("cco.ops: the communicator was destroyed")
        return ctx

    def __init__(self, comm):
        torch = _torch()
        from cco import CCODevCommRequirements, GDA_CONNECTION_NONE
        from cco.ir.triton import cco as cco_ir

        self.comm = comm
        self.rank, self.world = comm.rank, comm.world_size
        self.lsa_rank, self.lsa_size = comm.lsa_rank, comm.lsa_size
        self.device = torch.cuda.current_device()
        self.backend = "hip" if getattr(torch.version, "hip", None) else "cuda"
        props = torch.cuda.get_device_properties(self.device)
        self.sm_count = props.multi_processor_count
        self.fp8, self.tma = gpu_features(self.device)
        reqs = CCODevCommRequirements(lsa_barrier_count=1, gda_connection_type=GDA_CONNECTION_NONE)
        self.dc = comm.create_dev_comm(reqs)
        self.libs = cco_ir.get_extern_libs()
        # A wait's bound on the GPU's clock: every device wait's (CCO_TIMEOUT_MS as the
        # communicator read it, ccoDevComm.waitTimeoutMs; 0: none).
        self.wait_ticks = planning.wait_ticks(self.backend, self.dc.struct.waitTimeoutMs)
        self.plans = {}
        self.workspaces = []
        uuid = str(getattr(props, "uuid", props.name)) + f"/{props.pci_bus_id if hasattr(props, 'pci_bus_id') else ''}"
        gpus = self.allgather(("gpu", uuid))
        self.ranks_per_gpu = sum(1 for g in gpus if g == ("gpu", uuid))

    # --- agreement: compare values across the ranks, collectively ----------------------

    def allgather(self, value):
        """Every rank's `value` (picklable, small), in rank order; collective (through the
        bootstrap, across nodes), so only when a plan is made."""
        payload = pickle.dumps(value)
        if len(payload) > AGREE_BYTES:
            raise OperandError(f"cco.ops: {len(payload)} bytes to agree on, more than {AGREE_BYTES}")
        return [pickle.loads(part) for part in self.comm.allgather_host(payload)]

    def agree(self, op, what):
        """Raises on every rank unless every rank has the same `what`."""
        values = self.allgather(what)
        odd = [r for r, v in enumerate(values) if v != values[0]]
        if odd:
            raise OperandError(f"cco.ops.{op}: the ranks were called with different operands: rank 0 with {values[0]}, "
                               f"rank {odd[0]} with {values[odd[0]]} (every rank must pass the same shapes and dtypes)")
        return values

    # --- plans --------------------------------------------------------------------------

    def plan(self, key, op, make):
        """The plan for `key`, made collectively on first use by make(ctx) -> (plan, kernel
        warm-up)."""
        found = self.plans.get(key)
        if found is not None:
            return found
        torch = _torch()
        if torch.cuda.is_current_stream_capturing():
            raise NotPlannedError(f"cco.ops.{op}: first call at this shape inside a CUDA graph capture; call it once "
                                  "(on every rank) before capturing: the first call agrees on the shape and allocates "
                                  "the workspace, collectively")
        plan = make(self)
        ws = Workspace(self.comm, plan.layout.size)
        ws.view(0, plan.layout.size // 4, torch.int32).zero_()
        torch.cuda.synchronize(self.device)
        plan.workspace = ws
        plan.dc = self._dev_comm_for(plan)
        plan.tables = OrderedDict()
        self.plans[key] = plan
        return plan

    def _dev_comm_for(self, plan):
        """LSA plans share the context's device communicator. A GDA plan gets one of its own,
        connected to every rank, with a signal per flag of its workspace (they start at 0, as
        the epochs the kernel announces with them assume); an SDMA plan one with the queues its
        receivers are spread over (gemm_ar: twice as many, its sums on their own; its copy counts
        start at 0, as the kernel's waits assume).
        They live as long as the communicator, which releases them when it is destroyed."""
        from cco import GDA_CONNECTION_FULL, GDA_CONNECTION_NONE, CCODevCommRequirements

        if plan.consts.get("GDA"):   # one context, signals only
            reqs = CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_FULL, gda_context_count=1,
                                          gda_signal_count=plan.consts["NSIG"], gda_counter_count=0)
        elif plan.consts.get("SDMA"):
            reqs = CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_NONE,
                                          sdma_queue_count=plan.consts["SDMA_QUEUE_COUNT"])
        else:
            return self.dc
        return self.comm.create_dev_comm(reqs)

    def loaded(self, plan, warm_up):
        """Runs warm_up() (a launch that returns at once) the first time, then waits until
        every rank got there: every binary is loaded before any rank's kernel waits for a
        peer (loading a module while a peer's kernel spins could wait for that kernel)."""
        if getattr(plan, "ready", False):
            return
        torch = _torch()
        warm_up()
        torch.cuda.synchronize(self.device)
        self.comm.barrier()
        plan.ready = True

    def table(self, plan, key, values):
        """The device copy of an int32 table for one split pattern (kept for TABLES_KEPT
        patterns); made outside graph capture."""
        found = plan.tables.get(key)
        if found is not None:
            plan.tables.move_to_end(key)
            return found
        torch = _torch()
        if torch.cuda.is_current_stream_capturing():
            raise NotPlannedError("cco.ops: a split pattern first seen inside a CUDA graph capture; call the operator "
                                  "with these splits once before capturing")
        t = torch.tensor(values, dtype=torch.int32, device=f"cuda:{self.device}")
        plan.tables[key] = t
        if len(plan.tables) > TABLES_KEPT:
            plan.tables.popitem(last=False)
        return t

    def status(self):
        """(gave up, counts mismatched, what a wait that ran out of time waited for and what a
        failed GDA or SDMA call returned, or "") over every plan; waits for this rank's work."""
        torch = _torch()
        torch.cuda.synchronize(self.device)
        gave_up = mismatch = False
        waited = ""
        for key, plan in self.plans.items():
            words, what = self.plan_status(plan)
            gave_up |= bool(words[0])
            mismatch |= bool(words[1])
            if what and not waited:
                waited = f"{key[0]}: {what}"
        return gave_up, mismatch, waited

    @staticmethod
    def plan_status(plan):
        """One plan's status words (planning.STATUS_WORDS), and what a wait of it that ran out
        of time waited for and what a GDA or SDMA call of it that failed returned ("" if
        neither); the caller synchronised."""
        torch = _torch()
        words = plan.workspace.view(plan.layout["status"], planning.STATUS_WORDS, torch.int32).cpu().tolist()
        said = []
        if words[2]:
            said.append(planning.describe_wait(words, plan.layout, plan.workspace.win.local_ptr))
        if words[7]:
            said.append(planning.describe_failed_call(words[7]))
        return words, "; ".join(said)


def check(comm):
    """Raises if an operator call on `comm` so far gave up waiting for a peer (a rank that
    never made the same call, or an abort) or received other row counts than out_splits
    said; waits for this rank's queued work. The results of such a call and of every later
    one are void."""
    from cco.errors import RESULT_CODES, CCOTimeoutError

    ctx = OpsContext._by_comm.get(comm)
    if ctx is None:
        return
    gave_up, mismatch, waited = ctx.status()
    if gave_up:
        comm.check_async_error()
        raise CCOTimeoutError(RESULT_CODES["ccoTimeout"],
                              "cco.ops: a call gave up waiting for a peer's tiles (a rank that never made the "
                              "same call, the communicator was aborted, or a GDA or SDMA call failed); its result "
                              "and every later one are void"
                              + (f" ({waited})" if waited else ""))
    if mismatch:
        raise OperandError("cco.ops: a peer sent another number of rows than out_splits said")
