"""Size sweeps and robust timing helpers shared by the perf back ends."""

import statistics
import time


def sweep(lo, hi, factor=4):
    sizes = []
    n = lo
    while n <= hi:
        sizes.append(n)
        n *= factor
    if sizes and sizes[-1] != hi and hi > lo:
        sizes.append(hi)
    return sizes


def best_of(fn, repeats):
    """Median of `repeats` calls of fn() (each returns seconds)."""
    return statistics.median(fn() for _ in range(repeats))


def wall(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
