# SPDX-License-Identifier: MIT
"""`cco info`: versions, targets, where the bitcode and the host library are, and which
backend GDA would use between ranks of different hosts."""

import json
import os


def add_parser(sub):
    p = sub.add_parser("info", help="versions, targets, bitcode, host library")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=lambda ns, argv: run(ns))


def network_backend(sysfs="/sys/class/infiniband"):
    """What carries GDA between hosts here (host/src/net/select.h): CCO_NET's choice, else
    verbs where this machine has an RDMA device (and every rank must), else tcp."""
    choice = os.environ.get("CCO_NET") or ""
    try:
        devices = sorted(os.listdir(sysfs))
    except OSError:
        devices = []
    if choice == "tcp":
        return "tcp (CCO_NET=tcp)"
    if choice == "verbs":
        return f"verbs (CCO_NET=verbs; RDMA devices: {', '.join(devices) or 'none: GDA across hosts will fail'})"
    if choice:
        return f"invalid CCO_NET={choice!r} (tcp or verbs)"
    if devices:
        return f"verbs if every rank has an active port (RDMA devices here: {', '.join(devices)}), else tcp"
    return "tcp (no RDMA device here)"


def run(opts):
    from cco import _resources
    from cco.device import ABI_VERSION, TARGETS, bitcode

    facts = {"abi_version": ABI_VERSION, "host_library": _resources.host_library_path(),
             "abi_table": _resources.abi_table_path(), "targets": {}}
    try:
        from cco import _lib

        facts["host_abi_version"] = _lib.abi_version()
    except Exception as e:  # report, do not fail: info is for diagnosing exactly this
        facts["host_abi_version"] = f"unavailable: {e}"
    for t in TARGETS:
        facts["targets"][t["name"]] = bitcode._prebuilt(t["name"])
    facts["gda_network"] = network_backend()
    if opts.json:
        print(json.dumps(facts, indent=2))
    else:
        for k, v in facts.items():
            if k != "targets":
                print(f"{k:18} {v}")
        for name, path in facts["targets"].items():
            print(f"  {name:28} {path or '(not built)'}")
    return 0
