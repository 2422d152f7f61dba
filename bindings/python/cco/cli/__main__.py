"""cco perf | cco info | cco doctor — see `python -m cco.cli -h`."""

import argparse
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(prog="cco", description="CCO: GPU-initiated communication")
    sub = ap.add_subparsers(dest="command", required=True)
    from cco.cli import doctor, info, perf

    perf.add_parser(sub)
    info.add_parser(sub)
    doctor.add_parser(sub)
    if argv is None:
        argv = sys.argv[1:]
    opts = ap.parse_args(argv)
    opts.argv = list(argv)  # `cco perf` hands them on to the ranks it starts
    return opts.run(opts)


if __name__ == "__main__":
    sys.exit(main())
