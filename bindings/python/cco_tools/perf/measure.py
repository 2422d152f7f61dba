# SPDX-License-Identifier: MIT
"""How `cco perf` turns repeated runs into a figure: the sizes a sweep goes through, and the
time of an operation measured over several trials (each trial one timed run of many
operations), of which the figure is the median and the spread the distance between the
fastest and the slowest."""

import statistics


class Timing(float):
    """Seconds per operation: the median of the trials' means, a float like any other time
    (arithmetic on it gives plain floats), with the trials kept for the spread."""

    def __new__(cls, trials):
        trials = tuple(float(t) for t in trials)
        if not trials:
            raise ValueError("cco perf: a timing needs one trial at least")
        self = super().__new__(cls, statistics.median(trials))
        self.trials = trials
        return self

    @property
    def spread(self):
        """(slowest - fastest) / median, in %; None for a single trial (no spread measured)."""
        if len(self.trials) < 2 or not float(self) > 0:
            return None
        return 100 * (max(self.trials) - min(self.trials)) / float(self)

    @classmethod
    def of(cls, timings):
        """One timing from several (each a trial, or a Timing whose trials count)."""
        trials = []
        for t in timings:
            trials.extend(getattr(t, "trials", (t,)))
        return cls(trials)


def spread_of(value):
    """The spread of a Timing (None for any other figure)."""
    return getattr(value, "spread", None)


def sweep(lo, hi, factor=4):
    sizes = []
    n = lo
    while n <= hi:
        sizes.append(n)
        n *= factor
    if sizes and sizes[-1] != hi and hi > lo:
        sizes.append(hi)
    return sizes
