# SPDX-License-Identifier: MIT
"""`cco perf`, the benchmark: options.py reads the command line once, run.py decides where the
ranks run (ranks.py) and runs the suites (suites/, one module each) into a report
(report.py: tables and JSON), which plot.py draws and targets.py judges against the
project's targets; kernels/ holds the Triton kernels it measures."""
