"""Where `cco perf`'s ranks run, and how they agree on a figure.

  threads    every rank is a thread of this process with its own communicator. Ranks that
             share a GPU run their kernels at once on separate streams, which processes on
             one GPU cannot do without MPS.
  processes  this process is one rank of a launched job: `cco perf` itself (one process
             per GPU), `python -m cco.launch`, torchrun or mpirun. Every process runs the
             same suites and makes the same calls on its group in the same order.

A suite sees one interface either way: `local` maps the ranks held here to their objects,
`on(ranks, make)` builds work for those of them held here, `align()` lines every rank up
(a host barrier between processes) and `slowest(x)` gives every rank the largest x that
any rank measured, so all processes build the same report and rank 0 prints it.

Each rank object has `comm`, `win` and `scratch` (an offset past the window's payload)
and reads / writes one float64 there with `write_f64(value)` / `read_f64(peer)`.
"""

from cco.cli.timing import on_threads

SCRATCH_BYTES = 4096   # per rank, after the payload: one float64 for `slowest`


class Ranks:
    def __init__(self, world, make, joined=None):
        """make(rank, uid) builds one rank; joined = (rank, uid) of this process in a
        launched job of `world` processes, or None to hold every rank on threads here."""
        self.world = world
        self.spread = joined is not None
        if joined is None:
            from cco import Communicator

            uid = Communicator.get_unique_id()
            self.local = dict(enumerate(on_threads(world, lambda r: make(r, uid))))
        else:
            rank, uid = joined
            if world < 2:
                raise RuntimeError(f"cco perf: the launcher started {world} rank; the suites need 2 or more")
            self.local = {rank: make(rank, uid)}
        for rk in self.local.values():
            if rk.comm.lsa_size != world:
                raise RuntimeError(f"cco perf: rank {rk.comm.rank} reaches {rk.comm.lsa_size} of {world} ranks "
                                   "by load/store; the suites need every rank on one host")

    @property
    def ranks(self):
        """The ranks held here, in rank order."""
        return [self.local[r] for r in sorted(self.local)]

    def held(self, ranks):
        """The rank objects of `ranks` that are held here."""
        return [self.local[r] for r in ranks if r in self.local]

    def on(self, ranks, make):
        """{r: make(rank object)} for each r in `ranks` held here."""
        return {r: make(self.local[r]) for r in ranks if r in self.local}

    def each(self, body):
        """body(rank object) for every rank held here, at once (the calls may be collective)."""
        order = sorted(self.local)
        if len(order) == 1:
            return {order[0]: body(self.local[order[0]])}
        return dict(zip(order, on_threads(len(order), lambda i: body(self.local[order[i]]))))

    def align(self):
        """Every rank reaches this point before any goes on (threads share one timeline)."""
        if self.spread:
            self._one().comm.barrier()

    def slowest(self, value):
        """The largest `value` over all ranks, the same on every rank."""
        if not self.spread:
            return value
        rk = self._one()
        rk.write_f64(float(value))
        rk.comm.barrier()
        result = max(rk.read_f64(peer) for peer in range(self.world))
        rk.comm.barrier()  # nobody writes the next value before everyone has read this one
        return result

    def close(self):
        self.each(lambda rk: rk.comm.destroy())

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and self.spread:
            # The other processes are not at the same teardown calls: abort, so this
            # rank's teardown is local, and its exit ends their next host barrier at once.
            for rk in self.local.values():
                rk.comm.abort()
        self.close()
        return False

    def _one(self):
        (rk,) = self.local.values()
        return rk

