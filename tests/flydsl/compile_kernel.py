# SPDX-License-Identifier: MIT
"""Compiles one FlyDSL kernel ahead of time (COMPILE_ONLY=1, ARCH set by the caller) and
writes its code object: compile_kernel.py KIND OUT.hsaco [PART PARTS], KIND one of
  every    a kernel that calls every function of the ABI table through cco.device.flydsl
           (namespaces), and the guide's put example through the handles; with PART and PARTS,
           every PARTS-th function from the PART-th (the guide's example in part 0): the AMD
           backend's time grows faster than a kernel's size, so parts compile in a fraction of
           the time of the whole
  dynamic_coop  a kernel whose coop is a run-time value (must be refused while tracing)
"""
import sys

import flydsl.compiler as flyc
import flydsl.expr as fx

import cco.device.flydsl as cco
from cco.device import CCO_DEVICE_FUNCTIONS


def argument(name, dc, win):
    """What a call passes for an argument named `name` (in the table's spelling)."""
    if name == "dc":
        return dc
    if name.lower().endswith("win") or name == "window":
        return win
    return {"peer": 1, "worldPeer": 1, "bytes": 64, "least": 1, "bits": 64, "timeoutNs": 1000000, "value": 3,
            "team": cco.TeamKind.LSA, "leaderOnly": 1}.get(name, 0)


# Which share of the table `every` calls (set from the command line before tracing).
PART, PARTS = 0, 1


def call_everything(dc, win):
    """Every symbol of this part once: each DSL name with each of its axis combinations."""
    for entry in CCO_DEVICE_FUNCTIONS[PART::PARTS]:
        space, _, name = entry["dsl"].rpartition(".")
        fn = getattr(getattr(cco, space), name) if space else getattr(cco, name)
        fn(*[argument(a, dc, win) for a in entry["arg_names"]], **entry["axes"])


@flyc.kernel
def every(dc: fx.Int64, win: fx.Int64, send_win: fx.Int64, nbytes: fx.Int64):
    call_everything(dc, win)
    if PART != 0:
        return
    # The guide's FlyDSL example, through the handles.
    gda = cco.DevComm(dc).gda(0)
    gda.put(1, win, 0, send_win, 0, nbytes, signal_op=cco.SignalOp.INC, signal_id=0, coop=cco.CoopScope.THREAD)
    gda.flush(coop=cco.CoopScope.BLOCK)
    # The guide's call form through the namespaces: ctx and defaults by name, a GDA-team peer,
    # SDMA's signal= and aggregate=.
    cco.Gda.put(dc, 0, win, 0, send_win, 0, nbytes, signal_op=cco.SignalOp.INC, signal_id=1, team=cco.Team.GDA)
    cco.Gda.signal(dc, 0, signal_val=2, ctx=0, team=cco.Team.GDA)
    gda.wait_signal(1, 1)
    cco.Sdma.put(dc, 1, win, 0, send_win, 0, nbytes, 0, signal=False, aggregate=True)
    cco.DevComm(dc).sdma().commit(1)


@flyc.kernel
def dynamic_coop(dc: fx.Int64, coop: fx.Int32):
    cco.Gda.flush(dc, 0, coop=coop)


KERNELS = {"every": (every, 4), "dynamic_coop": (dynamic_coop, 2)}


def main():
    global PART, PARTS
    kind, out = sys.argv[1], sys.argv[2]
    if len(sys.argv) == 5:
        PART, PARTS = int(sys.argv[3]), int(sys.argv[4])
    kernel, arity = KERNELS[kind]

    if arity == 4:
        @flyc.jit
        def launch(a: fx.Int64, b: fx.Int64, c: fx.Int64, d: fx.Int64, stream: fx.Stream = fx.Stream(None)):
            kernel(a, b, c, d).launch(grid=(1, 1, 1), block=(256, 1, 1), stream=stream)

        flyc.compile(launch, fx.Int64(0), fx.Int64(0), fx.Int64(0), fx.Int64(64))
    else:
        @flyc.jit
        def launch(a: fx.Int64, b: fx.Int32, stream: fx.Stream = fx.Stream(None)):
            kernel(a, b).launch(grid=(1, 1, 1), block=(64, 1, 1), stream=stream)

        flyc.compile(launch, fx.Int64(0), fx.Int32(2))

    # FlyDSL 0.4.2 keeps the last compile on the jit function (its code object in gpu.binary).
    from flydsl._mlir import ir
    from flydsl._mlir.dialects import gpu
    from flydsl.compiler.jit_function import _create_mlir_context

    _, artifact = launch._last_compiled
    with _create_mlir_context():
        module = ir.Module.parse(artifact._ir_text)
        binary = next(op for op in module.body.operations if op.operation.name == "gpu.binary")
        with open(out, "wb") as f:
            f.write(gpu.ObjectAttr(binary.attributes["objects"][0]).object)
    print("linked:", " ".join(sorted(cco.LINKED)))


if __name__ == "__main__":
    main()
