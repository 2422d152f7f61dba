"""`cco info`: versions, targets, where the bitcode and the host library are."""

import json


def add_parser(sub):
    p = sub.add_parser("info", help="versions, targets, bitcode, host library")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


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
    if opts.json:
        print(json.dumps(facts, indent=2))
    else:
        for k, v in facts.items():
            if k != "targets":
                print(f"{k:18} {v}")
        for name, path in facts["targets"].items():
            print(f"  {name:28} {path or '(not built)'}")
    return 0
