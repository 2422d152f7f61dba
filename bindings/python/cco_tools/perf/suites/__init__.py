# SPDX-License-Identifier: MIT
"""The suites of `cco perf`, one module each, every one `run(ctx)`: it adds its tables to
ctx.report, reads its settings from ctx.options, measures on ctx.group (the job's ranks,
perf/ranks.py; None for the suites that start processes of their own) and says what it is
doing through ctx.progress.

A suite's name is what `--suites` takes; on the cpu platform some names are other suites
(host memory, no kernels) than on a GPU.
"""

import importlib
import sys
import time
from dataclasses import dataclass, field

# name -> module, in the order the suites run and their tables print
MODULES = {
    "cuda": {"host": "host", "put": "lsa_put", "get": "lsa_get", "barrier": "lsa_barrier", "allreduce": "allreduce",
             "launch": "launch", "gda": "gda", "sdma": "sdma", "ops": "ops"},
    "cpu": {"host": "host", "barrier": "cpu_barrier", "put": "cpu_put", "tcp": "tcp"},
}
# The modules of suites no platform runs by name: what several suites share.
SHARED = ("pair",)


def module(platform, name):
    return importlib.import_module(f"{__name__}.{MODULES[platform][name]}")


def every_module_name():
    return sorted({m for names in MODULES.values() for m in names.values()} | set(SHARED))


class Progress:
    """One line per step on stderr, so a slow or stuck step is visible while it runs; quiet
    in every process but the one that prints the report."""

    def __init__(self, quiet=False):
        self.quiet = quiet

    def __call__(self, *what):
        if not self.quiet:
            print(f"[cco perf {time.strftime('%H:%M:%S')}]", *what, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Context:
    options: object        # perf/options.py Options
    report: object         # perf/report.py Report
    group: object = None   # perf/ranks.py Ranks
    progress: Progress = field(default_factory=Progress)
