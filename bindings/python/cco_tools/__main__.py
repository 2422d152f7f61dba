# SPDX-License-Identifier: MIT
"""cco perf | cco info | cco doctor | cco trace | cco launch — see `cco -h` (or `python -m cco_tools -h`)."""

import argparse
import sys


def _perf(ns, argv):
    from cco_tools.perf.options import Options, UsageError
    from cco_tools.perf.run import main

    try:
        options = Options.from_args(ns, argv)
    except UsageError as e:
        print(f"cco perf: {e}", file=sys.stderr)
        return 2
    return main(options)


def parser():
    from cco_tools import doctor, info, trace
    from cco_tools.perf import options

    ap = argparse.ArgumentParser(prog="cco", description="CCO: GPU-initiated communication")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("perf", help="benchmark every transport on this machine's GPUs (or the cpu platform)")
    options.add_arguments(p)
    p.set_defaults(run=_perf)
    info.add_parser(sub)
    doctor.add_parser(sub)
    trace.add_parser(sub)
    # Parsed by cco.launch itself (its script's arguments are not cco's): listed for -h.
    sub.add_parser("launch", help="run a script as N ranks (cco launch -n N script.py ...; see cco launch -h)",
                   add_help=False)
    return ap


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["launch"]:
        from cco.launch import main as launch

        return launch(argv[1:], prog="cco launch")
    ns = parser().parse_args(argv)
    return ns.run(ns, argv)


if __name__ == "__main__":
    sys.exit(main())
