"""What the perf back ends share: running ranks on threads at once, and size sweeps."""

import threading


def on_threads(n, body):
    """body(i) for i in range(n) on n threads at once (ranks rendezvous with each other,
    so they cannot be created one after the other); re-raises the first failure."""
    results, errors = [None] * n, []

    def run(i):
        try:
            results[i] = body(i)
        except BaseException as e:  # re-raised below, after every thread ended
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def sweep(lo, hi, factor=4):
    sizes = []
    n = lo
    while n <= hi:
        sizes.append(n)
        n *= factor
    if sizes and sizes[-1] != hi and hi > lo:
        sizes.append(hi)
    return sizes
