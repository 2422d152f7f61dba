# SPDX-License-Identifier: MIT
"""`cco doctor`: whether this machine can run CCO, each finding with what to do about it.

Checks, in order: the host library loads and speaks the package's ABI version; a one-rank
communicator runs its whole lifecycle here (bootstrap socket, platform, memory, a window, a
device communicator, the barrier); the device bitcode for this machine's GPU is found and
stamped with the same ABI version; Triton imports (and is the version CCO was tested with);
the GPUs reach each other; the descriptor limit fits a job's windows; no CCO_*/MORI_* variable
is set that CCO does not read (a typo would otherwise be silently ignored); CUDA_DEVICE_MAX_CONNECTIONS
leaves the proxy's streams hardware queues of their own. Exit status 1 when
a check failed, 0 when everything passed or only warned.
"""

import difflib
import json
import os
import resource

OK, WARN, FAIL, SKIP = "ok", "warn", "FAIL", "skip"
TESTED_TRITON = "3.6"
# A job's windows travel as one descriptor per (window, peer): 64 windows with 8 ranks, and
# the communicator's own, fit well under this.
MIN_OPEN_FILES = 4096


def add_parser(sub):
    p = sub.add_parser("doctor", help="check that this machine can run CCO, and say what to fix")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=lambda ns, argv: run(ns))


def host_library():
    from cco import _lib, _resources
    from cco.device import ABI_VERSION

    try:
        found = _lib.abi_version()
    except Exception as e:
        return FAIL, f"cannot load the host library: {e}", "reinstall cco, or set CCO_LIBRARY to its libcco.so"
    where = _resources.host_library_path()
    if found != ABI_VERSION:
        return (FAIL, f"{where} speaks ABI version {found}, the package's table {ABI_VERSION}",
                "install the library and the package from one build")
    return OK, f"{where} (ABI version {found})", ""


def one_rank_job():
    from cco import GDA_CONNECTION_NONE, CCODevCommRequirements, Communicator

    try:
        with Communicator.init(1, 0, Communicator.get_unique_id(), per_rank_vmm=64 << 20) as comm:
            win = comm.alloc_window(4096)
            comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_NONE))
            comm.barrier()
            where = f"platform {comm.platform}, device {comm.device}, window at 0x{win.local_ptr:x}"
    except Exception as e:
        return (FAIL, f"a one-rank communicator failed: {e}",
                "CCO_PLATFORM picks cuda, hip or cpu; CCO_SOCKET_IFNAME the bootstrap's interface")
    return OK, f"a one-rank communicator, window and device communicator: {where}", ""


def _gpu_target():
    try:
        from triton.runtime import driver

        return driver.active.get_current_target()
    except Exception:
        return None


def bitcode():
    from cco import _env
    from cco.device import bitcode as lookup

    explicit = _env.get("CCO_DEVICE_BC")
    target = _gpu_target()
    if explicit is None and target is None:
        return SKIP, "no GPU that Triton sees: kernels need no bitcode here", ""
    try:
        if target is not None:
            path = lookup.find_cco_bitcode(target)  # CCO_DEVICE_BC first, as kernels find it
        elif not os.path.isfile(explicit):
            raise lookup.BitcodeError(f"CCO_DEVICE_BC={explicit} does not exist")
        else:
            path = lookup.check_abi(explicit)
    except Exception as e:
        return FAIL, str(e), "bash tools/build_cco_bitcode.sh, or unset CCO_DEVICE_BC"
    return OK, f"{path} ({lookup.bitcode_variant(path)})", ""


def triton():
    try:
        import triton as t
    except Exception as e:
        return WARN, f"Triton does not import ({e})", "pip install triton (CCO's kernels and `cco perf` use it)"
    if not t.__version__.startswith(TESTED_TRITON):
        return WARN, f"Triton {t.__version__}; CCO was tested with {TESTED_TRITON}", "pip install 'triton==3.6.*'"
    return OK, f"Triton {t.__version__}", ""


def gpus():
    try:
        import torch
    except Exception:
        return SKIP, "torch does not import: GPUs not inspected", ""
    if not torch.cuda.is_available():
        return SKIP, "no GPU that torch sees", ""
    n = torch.cuda.device_count()
    missing = [(a, b) for a in range(n) for b in range(n) if a != b and not torch.cuda.can_device_access_peer(a, b)]
    names = ", ".join(sorted({torch.cuda.get_device_name(i) for i in range(n)}))
    if missing:
        return (WARN, f"{n} x {names}; no peer access between {missing[:4]}",
                "LSA and SDMA need peer access (NVLink / xGMI); GDA's tcp backend does not")
    from cco.runtime import mps_serves

    mps = mps_serves()
    return OK, f"{n} x {names}, every pair reaches the other; MPS {'running' if mps else 'not running'}", ""


def open_files():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < MIN_OPEN_FILES:
        return (WARN, f"open-file limit {soft} (hard {hard})",
                f"ulimit -n {min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536}: each window takes a "
                f"descriptor per peer")
    return OK, f"open-file limit {soft}", ""


def environment():
    from cco import _env

    unknown = sorted(k for k in os.environ if k.startswith(("CCO_", "MORI_")) and k not in _env.KNOWN)
    if not unknown:
        return OK, "every CCO_*/MORI_* variable set is one CCO reads", ""
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(_env.KNOWN), n=1)
        hints.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return WARN, f"set but never read: {', '.join(hints)}", "README, Environment variables, lists every one"


# Fewer hardware work queues than this and the proxy's streams share them with the kernels that
# wait for their copies (docs/gda.md, "Streams and threads"; 4 and 8 measured good under MPS).
MIN_CONNECTIONS = 4


def hardware_queues():
    from cco.runtime import mps_serves

    value = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS")
    if value is None:
        if mps_serves():
            return OK, ("CUDA_DEVICE_MAX_CONNECTIONS unset under MPS: `cco launch` and cco.runtime.bootstrap() set 8 "
                        "for the ranks (4 beyond 8)"), ""
        return OK, "CUDA_DEVICE_MAX_CONNECTIONS unset (CUDA's default, 8)", ""
    fix = (f"{MIN_CONNECTIONS} or more before the CUDA context is made (CCO's launcher sets 8 under MPS); 1, as some "
           "tensor-parallel frameworks set, only where no kernel waits on GDA or SDMA")
    if not value.strip().isdigit():
        return WARN, f"CUDA_DEVICE_MAX_CONNECTIONS={value!r} is not a number", fix
    if int(value) < MIN_CONNECTIONS:
        return (WARN, f"CUDA_DEVICE_MAX_CONNECTIONS={int(value)}: the GDA proxy's and the SDMA queues' streams share "
                      "hardware queues with kernels that wait for their copies, which then wait until their timeout",
                fix)
    return OK, f"CUDA_DEVICE_MAX_CONNECTIONS={int(value)}", ""


def gda_network():
    from cco_tools.info import network_backend

    return OK, f"GDA between hosts: {network_backend()}", ""


CHECKS = [("host library", host_library), ("one-rank job", one_rank_job), ("bitcode", bitcode),
          ("triton", triton), ("gpus", gpus), ("open files", open_files), ("environment", environment),
          ("hardware queues", hardware_queues), ("network", gda_network)]


def run(opts):
    findings = []
    for name, check in CHECKS:
        try:
            status, what, fix = check()
        except Exception as e:  # a check that breaks is itself a finding
            status, what, fix = FAIL, f"the check raised {type(e).__name__}: {e}", ""
        findings.append({"check": name, "status": status, "found": what, "fix": fix})
    if opts.json:
        print(json.dumps(findings, indent=2))
    else:
        for f in findings:
            print(f"[{f['status']:4}] {f['check']:13} {f['found']}")
            if f["fix"] and f["status"] in (WARN, FAIL):
                print(f"{'':21}-> {f['fix']}")
    return 1 if any(f["status"] == FAIL for f in findings) else 0
