# SPDX-License-Identifier: MIT
"""Where an SDMA put's microseconds go, from the device-side trace: rank 0 runs `cco perf`'s
put_quiet kernel in a few shapes (one put waited for each time, a stream of puts from one
program, the same from 8 programs), each timed with CUDA events and traced into a file of its
own; then, for each, the steps of every put:

    post      the device call (reserve, write the descriptor, ring)
    gap       one post's beginning to the next one's in the same program (the device's rate)
    pickup    the post's end to the proxy taking the descriptor
    issue     the proxy's host time queueing the copy (a held copy is submitted later)
    done      queued to the proxy seeing the ring's `consumed` pass it (the copy landed and
              the stream's write of `consumed` reached host memory)
    quiet     the device's quiet_queue call (after every put, or once at the end)

Device and proxy stamps share the host's CLOCK_MONOTONIC after the trace writer aligned them,
so steps across that line carry its error (`pickup` can read slightly negative).

    CCO_ENABLE_SDMA=1 CCO_TRACE=/tmp/tr python -m cco.launch -n 2 tools/perf/sdma_timeline_probe.py OUT_DIR
    python3 tools/perf/sdma_timeline_probe.py --report OUT_DIR      (the tables again, from the files)
"""

import json
import os
import statistics
import sys

SPAN = 16 << 20
# (name, bytes a put, puts, programs, quiet after each put)
CASES = (("latency 4 KiB", 4096, 100, 1, True), ("latency 1 MiB", 1 << 20, 50, 1, True),
         ("stream 4 KiB", 4096, 200, 1, False), ("stream 1 MiB", 1 << 20, 100, 1, False),
         ("stream 1 MiB x8", 1 << 20, 96, 8, False))


def events_of(path):
    with open(path) as f:
        return [e for e in json.load(f).get("traceEvents", []) if e.get("ph") == "X"]


def steps(events):
    """{step: [us]} of one case's trace: every sdma.put the proxy took."""
    posts, issues, done, quiets = [], {}, {}, []
    for e in events:
        name, cat, args = e.get("name"), e.get("cat"), e.get("args", {})
        begin, end = float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))
        if cat == "device" and name == "sdma.put":
            posts.append((begin, end, args.get("record"), e.get("tid")))
        elif cat == "device" and name == "sdma.quiet":
            quiets.append(end - begin)
        elif cat == "proxy" and name == "issue sdma.put":
            issues[args["record"]] = (begin, end)
        elif cat == "proxy" and name == "sdma.put":
            done[args["record"]] = end
    out = {k: [] for k in ("post", "gap", "pickup", "issue", "done", "quiet")}
    out["quiet"] = quiets
    last_begin = {}
    for begin, end, record, tid in sorted(posts):
        out["post"].append(end - begin)
        if tid in last_begin:
            out["gap"].append(begin - last_begin[tid])
        last_begin[tid] = begin
        if record in issues:
            taken, queued = issues[record]
            out["pickup"].append(taken - end)
            out["issue"].append(queued - taken)
            if record in done:
                out["done"].append(done[record] - queued)
    return out


def table(name, per_put_us, figures):
    print(f"\n{name}: {per_put_us:.2f} us a put (CUDA events, traced)")
    print(f"{'step':<8} {'count':>6} {'median us':>10} {'p10 us':>8} {'p90 us':>8}")
    for step, values in figures.items():
        if not values:
            continue
        values = sorted(values)
        p10, p90 = values[len(values) // 10], values[(len(values) * 9) // 10]
        print(f"{step:<8} {len(values):6d} {statistics.median(values):10.2f} {p10:8.2f} {p90:8.2f}")


def report(folder):
    with open(os.path.join(folder, "cases.json")) as f:
        timed = json.load(f)
    for name, per_put_us in timed.items():
        path = os.path.join(folder, name.replace(" ", "-") + ".json")
        if os.path.exists(path):
            table(name, per_put_us, steps(events_of(path)))


def run(folder):
    import torch

    from cco import CCODevCommRequirements, Communicator, GDA_CONNECTION_NONE
    from cco.ir.triton import cco
    from cco.runtime import bootstrap
    from cco_tools.perf.kernels import sdma as S

    os.environ.setdefault("CCO_ENABLE_SDMA", "1")
    if not os.environ.get("CCO_TRACE"):
        print("sdma_timeline_probe: set CCO_TRACE to a folder (the device communicator must trace)", file=sys.stderr)
        return 2
    rank, world, uid = bootstrap()
    with Communicator.init(world, rank, uid, per_rank_vmm=1 << 30) as comm:
        mem = comm.alloc_mem(2 * SPAN)
        win = comm.register_window(mem.ptr, mem.size)
        dc = comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_NONE, sdma_queue_count=2))
        status = torch.zeros(1, dtype=torch.int32, device="cuda")
        libs = cco.get_extern_libs()
        timed = {}
        os.makedirs(folder, exist_ok=True)
        for name, size, count, programs, each in CASES:
            def launch(n=count):
                S.put_quiet[(programs,)](dc.ptr, win.handle, status, 1, n, 0, SPAN, size, 0, max(1, SPAN // size),
                                         EACH=each, num_warps=4, extern_libs=libs)
            comm.barrier()
            if rank == 0:
                launch(8)  # compiled and loaded; its records are dropped with the flush below
                torch.cuda.synchronize()
                comm.trace_flush(dc, os.path.join(folder, "warm-up.json"))
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                launch()
                end.record()
                end.synchronize()
                timed[name] = start.elapsed_time(end) * 1e3 / count
                comm.trace_flush(dc, os.path.join(folder, name.replace(" ", "-") + ".json"))
            comm.barrier()
        if rank == 0:
            if int(status.item()) != 0:
                print(f"sdma_timeline_probe: {int(status.item())} calls failed", file=sys.stderr)
                return 1
            with open(os.path.join(folder, "cases.json"), "w") as f:
                json.dump(timed, f, indent=1)
            report(folder)
        comm.destroy_dev_comm(dc)
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--report":
        report(argv[2])
        return 0
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    from cco.runtime import run_script

    return run_script(run, argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
