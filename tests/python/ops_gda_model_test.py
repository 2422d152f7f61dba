# SPDX-License-Identifier: MIT
"""cco.ops over GDA on the CPU: each kernel's GDA path modelled on numpy, several calls in a
row, with the plan's own layout (cco.ops.planning, transport="gda") and the kernels' index
arithmetic: what a rank stores goes into its outbox (or its own slot / result area), a put
copies the bytes into the receiver's slot, and a signal is a sum to which the sender adds
(epoch - the epoch it last announced there). Every wait asserts its signal reads the call's
epoch, every raise that the signal then reads exactly the epoch, and each call's results
equal the torch semantics (new inputs every call, so a stale half or a wrong offset shows).
Also ag_gemm and a2a_gemm over SDMA: copies landing in order, each chunk read only once the
count of copies from its sender says it landed, counted across calls whose splits differ."""

from collections import defaultdict

import numpy as np
import pytest

from cco.ops import planning
from ops_model import cdiv, tile_coords
from ops_model import rand_ints as _rand

TILES = planning.TileConfig(bm=4, bn=8, bk=4, warps=4, stages=1, group_m=2)
ES = 2   # bytes per element (bf16): offsets in bytes, as the kernels pass them


class Ranks:
    """Every rank's workspace areas (elements), signals and records, and the GDA moves."""

    def __init__(self, plans):
        self.plans = plans
        self.world = len(plans)
        self.areas = [{name: np.full(p.layout.nbytes(name) // ES, np.nan)
                       for name in ("slots", "outbox", "result") if name in p.layout.areas} for p in plans]
        self.signals = [defaultdict(int) for _ in plans]     # receiver's view: the sum of what was added
        self.sent = [defaultdict(int) for _ in plans]        # sender's record: (peer, signal) -> epoch
        self.arrivals = [defaultdict(int) for _ in plans]
        self.local_flags = [defaultdict(int) for _ in plans]
        self.nsig = plans[0].consts["NSIG"]

    def signal(self, me, peer, sig, epoch):
        assert 0 <= sig < self.nsig and peer != me
        add = epoch - self.sent[me][(peer, sig)]
        assert add > 0, "a signal announced twice in one call"
        self.sent[me][(peer, sig)] = epoch
        self.signals[peer][sig] += add
        assert self.signals[peer][sig] == epoch

    def put(self, me, peer, dst_area, dst_off, src_area, src_off, nbytes, sig, epoch):
        """dst_off, src_off, nbytes in bytes relative to the areas (the kernel's off_* + at * ES);
        src_area: an area of this rank's workspace, or an array (a tensor in a pool's window)."""
        assert dst_off % ES == src_off % ES == nbytes % ES == 0 and nbytes > 0
        src = src_area if isinstance(src_area, np.ndarray) else self.areas[me][src_area]
        dst = self.areas[peer][dst_area]
        s, d, n = src_off // ES, dst_off // ES, nbytes // ES
        assert s + n <= src.size and d + n <= dst.size, "a put outside its area"
        assert not np.isnan(src[s:s + n]).any(), "a put of bytes never stored"
        dst[d:d + n] = src[s:s + n]
        self.signal(me, peer, sig, epoch)

    def wait(self, me, sig, epoch):
        assert self.signals[me][sig] >= epoch, f"rank {me} would wait forever for signal {sig} (epoch {epoch})"

    def count(self, me, index):
        """count_tile: the count before this arrival."""
        before = self.arrivals[me][index]
        self.arrivals[me][index] += 1
        return before

    def hellos(self, epoch):
        par = epoch % 2
        for me in range(self.world):
            for d in range(1, self.world):
                self.signal(me, (me + d) % self.world, par * self.world + me, epoch)
        for me in range(self.world):
            for d in range(1, self.world):
                self.wait(me, par * self.world + (me + d) % self.world, epoch)


def _scatter_ranks(op, world, m, k, n):
    """gemm_ag / gemm_a2a over GDA: (consts, the ranks, elements of one sender's slot)."""
    plans = [planning.scatter_plan(op, world, q, m, k, n, "bfloat16", "bfloat16", TILES, 132, 1, transport="gda")
             for q in range(world)]
    return plans[0].consts, Ranks(plans), n * plans[0].consts["CAP"]


def gemm_ag_calls(world, m, k, n, calls=3):
    c, ranks, slot_elems = _scatter_ranks("gemm_ag", world, m, k, n)
    mt_, nt_ = c["MT"], c["NT"]
    bm, bn = TILES.bm, TILES.bn
    for epoch in range(1, calls + 1):
        par = epoch % 2
        a = [_rand((m, k), 10 * epoch + q) for q in range(world)]
        b = _rand((k, n), epoch)
        ranks.hellos(epoch)
        outs = [np.full((m * world, n), np.nan) for _ in range(world)]
        for me in range(world):
            own = ranks.areas[me]["slots"]
            for g in range(mt_ * nt_):
                mt, nt = tile_coords(g, mt_, nt_, TILES.group_m)
                row0, nrows = mt * bm, min(bm, m - mt * bm)
                cols = slice(nt * bn, min(n, nt * bn + bn))
                value = a[me][row0:row0 + nrows] @ b[:, cols]
                outs[me][me * m + row0:me * m + row0 + nrows, cols] = value
                if world > 1:
                    at = (par * world + me) * slot_elems + row0 * n
                    own[at:at + nrows * n].reshape(nrows, n)[:, cols] = value
                    if ranks.count(me, par * mt_ + mt) == nt_ - 1:
                        ranks.arrivals[me][par * mt_ + mt] = 0
                        for d in range(1, world):
                            peer = (me + world - d) % world
                            ranks.put(me, peer, "slots", at * ES, "slots", at * ES, nrows * n * ES,
                                      c["SIG_FLAGS"] + (par * world + me) * mt_ + mt, epoch)
        for me in range(world):
            slots = ranks.areas[me]["slots"]
            for u in range((world - 1) * mt_ * nt_):
                g = u // (world - 1)
                src = (me + 1 + u % (world - 1)) % world
                mt, nt = tile_coords(g, mt_, nt_, TILES.group_m)
                row0, nrows = mt * bm, min(bm, m - mt * bm)
                ranks.wait(me, c["SIG_FLAGS"] + (par * world + src) * mt_ + mt, epoch)
                at = (par * world + src) * slot_elems + row0 * n
                cols = slice(nt * bn, min(n, nt * bn + bn))
                outs[me][src * m + row0:src * m + row0 + nrows, cols] = \
                    slots[at:at + nrows * n].reshape(nrows, n)[:, cols]
        want = np.concatenate([x @ b for x in a])
        for out in outs:
            np.testing.assert_array_equal(out, want)


def reduce_calls(op, world, m_rows, k, n, calls=3):
    plans = [planning.reduce_plan(op, world, q, m_rows, k, n, "bfloat16", "bfloat16", TILES, 132, 1,
                                  transport="gda") for q in range(world)]
    c = plans[0].consts
    owned_mt, nt_, mt_total, slot_rows = c["OWNED_MT"], c["NT"], c["MT"], c["SLOT_ROWS"]
    owned = owned_mt * nt_
    bm, bn = TILES.bm, TILES.bn
    all_reduce = op == "gemm_ar"
    m_own = m_rows // world
    slot_elems = n * slot_rows
    result_elems = m_rows * n
    ranks = Ranks(plans)

    def owned_rows(owner, omt):
        if all_reduce:
            row0 = (owner + omt * world) * bm
            return row0, min(bm, m_rows - row0), omt * bm
        return owner * m_own + omt * bm, min(bm, m_own - omt * bm), omt * bm

    for epoch in range(1, calls + 1):
        par = epoch % 2
        a = [_rand((m_rows, k), 10 * epoch + q) for q in range(world)]
        b = [_rand((k, n), 50 * epoch + q) for q in range(world)]
        ranks.hellos(epoch)
        # 1. partial tiles
        for me in range(world):
            for g in range(world * owned):
                owner, t = (me + 1 + g // owned) % world, g % owned
                omt, nt = tile_coords(t, owned_mt, nt_, TILES.group_m)
                row0, nrows, slot_row = owned_rows(owner, omt)
                if nrows <= 0:
                    continue
                cols = slice(nt * bn, min(n, nt * bn + bn))
                value = a[me][row0:row0 + nrows] @ b[me][:, cols]
                at = (par * world + me) * slot_elems + slot_row * n
                if owner != me:
                    box = (par * world + owner) * slot_elems + slot_row * n
                    ranks.areas[me]["outbox"][box:box + nrows * n].reshape(nrows, n)[:, cols] = value
                    index = (par * world + owner) * owned_mt + omt
                    if ranks.count(me, index) == nt_ - 1:
                        ranks.arrivals[me][index] = 0
                        ranks.put(me, owner, "slots", at * ES, "outbox", box * ES, nrows * n * ES,
                                  c["SIG_FLAGS"] + (par * world + me) * owned_mt + omt, epoch)
                else:
                    ranks.areas[me]["slots"][at:at + nrows * n].reshape(nrows, n)[:, cols] = value
                    ranks.local_flags[me][(par * world + me) * owned + t] = epoch
        # 2. the owned tiles
        outs = [np.full((m_rows if all_reduce else m_own, n), np.nan) for _ in range(world)]
        for me in range(world):
            for t in range(owned):
                omt, nt = tile_coords(t, owned_mt, nt_, TILES.group_m)
                row0, nrows, slot_row = owned_rows(me, omt)
                if nrows <= 0:
                    continue
                cols = slice(nt * bn, min(n, nt * bn + bn))
                total = 0
                for r in range(world):
                    if r != me:
                        ranks.wait(me, c["SIG_FLAGS"] + (par * world + r) * owned_mt + omt, epoch)
                    else:
                        assert ranks.local_flags[me][(par * world + r) * owned + t] == epoch
                    at = (par * world + r) * slot_elems + slot_row * n
                    total = total + ranks.areas[me]["slots"][at:at + nrows * n].reshape(nrows, n)[:, cols]
                if not all_reduce:
                    outs[me][omt * bm:omt * bm + nrows, cols] = total
                    continue
                outs[me][row0:row0 + nrows, cols] = total
                if world > 1:
                    at = par * result_elems + row0 * n
                    ranks.areas[me]["result"][at:at + nrows * n].reshape(nrows, n)[:, cols] = total
                    index = 2 * world * owned_mt + par * owned_mt + omt
                    if ranks.count(me, index) == nt_ - 1:
                        ranks.arrivals[me][index] = 0
                        for d in range(1, world):
                            ranks.put(me, (me + d) % world, "result", at * ES, "result", at * ES, nrows * n * ES,
                                      c["SIG_RFLAGS"] + par * mt_total + row0 // bm, epoch)
        # 3. gemm_ar: the tiles the others own
        if all_reduce:
            for me in range(world):
                for u in range(mt_total * nt_):
                    mt, nt = u // nt_, u % nt_
                    if mt % world == me:
                        continue
                    ranks.wait(me, c["SIG_RFLAGS"] + par * mt_total + mt, epoch)
                    row0, nrows = mt * bm, min(bm, m_rows - mt * bm)
                    cols = slice(nt * bn, min(n, nt * bn + bn))
                    at = par * result_elems + row0 * n
                    outs[me][row0:row0 + nrows, cols] = \
                        ranks.areas[me]["result"][at:at + nrows * n].reshape(nrows, n)[:, cols]
        total = sum(x @ y for x, y in zip(a, b))
        for me, out in enumerate(outs):
            np.testing.assert_array_equal(out, total if all_reduce else total[me * m_own:(me + 1) * m_own])


def gather_calls(world, m, k, n, sends, calls=3, in_place=False):
    """ag_gemm (sends None: every rank's m rows to everyone) or a2a_gemm (sends[r][q] rows of
    rank r to rank q), several calls; puts from `a` (in_place: a pool tensor) or the plan's
    staging area (the host's copy of `a`), at the source's offset + first row x K x ES."""
    broadcast = sends is None
    plans = [planning.gather_plan("ag_gemm" if broadcast else "a2a_gemm", world, q, m, k, n, "bfloat16",
                                  "bfloat16", TILES, 132, 1, transport="gda") for q in range(world)]
    c = plans[0].consts
    cap, chunks, bm = c["CAP"], c["CHUNKS"], TILES.bm
    ranks = Ranks(plans)
    send = [(m,) * world] * world if broadcast else sends
    recv = [tuple(send[r][q] for r in range(world)) for q in range(world)]
    tables = [planning.gather_table(world, q, send[q], recv[q], TILES, n, broadcast)[0] for q in range(world)]
    f = planning.gather_table_offsets(world)
    for epoch in range(1, calls + 1):
        par = epoch % 2
        a = [_rand((m, k), 10 * epoch + q) for q in range(world)]
        b = [_rand((k, n), 50 * epoch + q) for q in range(world)]
        ranks.hellos(epoch)
        source = []
        for me in range(world):
            if in_place:
                source.append(a[me].reshape(-1))
            else:   # the host's copy on the stream, before the kernel
                stage = np.full(plans[me].layout.nbytes("stage") // ES, np.nan)
                stage[:m * k] = a[me].reshape(-1)
                source.append(stage)
        for me in range(world):
            t = tables[me]
            for u in range(t[f["UPRE"] + world - 1]):
                d = sum(u >= t[f["UPRE"] + j] for j in range(1, world - 1))
                dest, ch = t[f["DST"] + d], u - t[f["UPRE"] + d]
                first = t[f["SOFF"] + d] + ch * bm
                nrows = min(bm, t[f["SCNT"] + d] - ch * bm)
                flag = (par * world + me) * chunks + ch
                at = ((par * world + me) * cap + ch * bm) * k
                ranks.put(me, dest, "slots", at * ES, source[me], first * k * ES, nrows * k * ES,
                          c["SIG_FLAGS"] + flag, epoch)
        for me in range(world):
            t = tables[me]
            gathered = []
            for i in range(world):
                src, cnt = t[f["SRC"] + i], t[f["CNT"] + i]
                if i == 0:
                    local = t[f["LOCAL"]]
                    gathered.append((t[f["OUT"] + i], a[me][local:local + cnt]))
                    continue
                rows = np.full((cnt, k), np.nan)
                for ch in range(cdiv(cnt, bm)):
                    ranks.wait(me, c["SIG_FLAGS"] + (par * world + src) * chunks + ch, epoch)
                    nrows = min(bm, cnt - ch * bm)
                    at = ((par * world + src) * cap + ch * bm) * k
                    rows[ch * bm:ch * bm + nrows] = ranks.areas[me]["slots"][at:at + nrows * k].reshape(nrows, k)
                gathered.append((t[f["OUT"] + i], rows))
            out = np.full((sum(recv[me]), n), np.nan)
            for first, rows in gathered:
                out[first:first + rows.shape[0]] = rows @ b[me]
            blocks = [a[r][sum(send[r][:me]) if not broadcast else 0:][:send[r][me]] for r in range(world)]
            np.testing.assert_array_equal(out, np.concatenate(blocks) @ b[me])


def gemm_a2a_calls(world, m, k, n, sends, calls=3):
    """gemm_a2a: each tile's rows into this rank's result or its outbox for their receiver;
    the tile that completes a receiver's count puts all its rows; then the copies."""
    c, ranks, slot_elems = _scatter_ranks("gemm_a2a", world, m, k, n)
    mt_, nt_ = c["MT"], c["NT"]
    bm, bn = TILES.bm, TILES.bn
    recv = [tuple(sends[r][q] for r in range(world)) for q in range(world)]
    tables = [planning.scatter_table(world, q, sends[q], recv[q], TILES, n)[0] for q in range(world)]
    f = planning.scatter_table_offsets(world)
    for epoch in range(1, calls + 1):
        par = epoch % 2
        a = [_rand((m, k), 10 * epoch + q) for q in range(world)]
        b = _rand((k, n), epoch)
        ranks.hellos(epoch)
        outs = [np.full((sum(recv[q]), n), np.nan) for q in range(world)]
        for me in range(world):
            t = tables[me]
            for g in range(mt_ * nt_):
                mt, nt = tile_coords(g, mt_, nt_, TILES.group_m)
                row0, nrows = mt * bm, min(bm, m - mt * bm)
                cols = slice(nt * bn, min(n, nt * bn + bn))
                value = a[me][row0:row0 + nrows] @ b[:, cols]
                for r in range(nrows):
                    row = row0 + r
                    dest = sum(row >= t[f["DOFF"] + j] for j in range(1, world))
                    if dest == me:
                        outs[me][t[f["OUT"]] + row - t[f["DOFF"] + me], cols] = value[r]
                    else:
                        at = (par * world + dest) * slot_elems + (row - t[f["DOFF"] + dest]) * n
                        ranks.areas[me]["outbox"][at:at + n][cols] = value[r]
                for j in range(world):
                    lo, hi = t[f["DOFF"] + j], t[f["DOFF"] + j + 1]
                    if me != j and lo < hi and lo <= row0 + nrows - 1 and hi > row0:
                        if ranks.count(me, par * world + j) == t[f["DTILES"] + j] - 1:
                            ranks.arrivals[me][par * world + j] = 0
                            ranks.put(me, j, "slots", (par * world + me) * slot_elems * ES, "outbox",
                                      (par * world + j) * slot_elems * ES, t[f["SENDR"] + j] * n * ES,
                                      c["SIG_FLAGS"] + par * world + me, epoch)
        for me in range(world):
            t = tables[me]
            for i in range(1, world):
                src, cnt, first = t[f["SRC"] + i], t[f["CNT"] + i], t[f["OUT"] + i]
                if cnt:
                    ranks.wait(me, c["SIG_FLAGS"] + par * world + src, epoch)
                    at = (par * world + src) * slot_elems
                    outs[me][first:first + cnt] = ranks.areas[me]["slots"][at:at + cnt * n].reshape(cnt, n)
        products = [x @ b for x in a]
        for q in range(world):
            blocks = [products[r][sum(sends[r][:q]):sum(sends[r][:q]) + sends[r][q]] for r in range(world)]
            np.testing.assert_array_equal(outs[q], np.concatenate(blocks))


def gather_sdma_calls(world, m, k, sends_per_call):
    """ag_gemm (sends_per_call[e] None: every rank's m rows to everyone) or a2a_gemm
    (sends_per_call[e][r][q] rows of rank r to rank q, other splits each call) over SDMA, one call
    per entry: program d posts receiver DST[d]'s chunks in chunk order on one queue; copies land
    one at a time, in order; after each landing, every chunk whose wait (landed[sender] + c + 1
    copies from its sender, landed being what the calls before counted) is satisfied must be in
    the slot, with this call's rows. At the call's end the last program adds each sender's
    copies of the call (the rows it announced, or the table's) to landed, which must then equal
    the copies that landed: what the next call's waits start from."""
    op = "ag_gemm" if sends_per_call[0] is None else "a2a_gemm"
    plans = [planning.gather_plan(op, world, q, m, k, 8, "bfloat16", "bfloat16", TILES, 132, 1, transport="sdma")
             for q in range(world)]
    c = plans[0].consts
    assert c["SDMA"] and not c["GDA"]
    assert all(p.layout.nbytes("landed") >= world * 8 + 4 for p in plans)   # W int64, then the programs done
    cap, bm, nqueues = c["CAP"], TILES.bm, c["QUEUES"]
    assert nqueues == max(1, min(world - 1, planning.SDMA_QUEUES))
    f = planning.gather_table_offsets(world)
    slots = [np.full(p.layout.nbytes("slots") // ES, np.nan) for p in plans]
    landed = defaultdict(int)        # (sender, receiver) -> copies landed on the queue so far
    counted = defaultdict(int)       # (sender, receiver) -> the receiver's landed[sender] (zeroed workspace)
    for epoch, sends in enumerate(sends_per_call, start=1):
        par = epoch % 2
        broadcast = sends is None
        send = [(m,) * world] * world if broadcast else sends
        recv = [tuple(send[r][q] for r in range(world)) for q in range(world)]
        tables = [planning.gather_table(world, q, send[q], recv[q], TILES, 8, broadcast)[0] for q in range(world)]
        a = [_rand((m, k), 10 * epoch + q) for q in range(world)]
        queues = defaultdict(list)   # (sender, receiver) -> copies posted, in order
        for me in range(world):
            t = tables[me]
            for d in range(world - 1):
                dest, count, first = t[f["DST"] + d], t[f["SCNT"] + d], t[f["SOFF"] + d]
                # the queue the sender posts on is the one the receiver reads
                assert d % nqueues == ((me - 1 - dest + 2 * world) % world) % nqueues
                for ch in range(cdiv(count, bm)):
                    nrows = min(bm, count - ch * bm)
                    at = ((par * world + me) * cap + ch * bm) * k
                    queues[(me, dest)].append((at, a[me][first + ch * bm:first + ch * bm + nrows].reshape(-1)))
        for receiver in range(world):
            t = tables[receiver]
            for i in range(1, world):
                sender, rows = t[f["SRC"] + i], t[f["CNT"] + i]   # what the receiver's table expects
                before = counted[(sender, receiver)]
                copies = queues[(sender, receiver)]
                for step in range(len(copies) + 1):   # before the first copy lands, then after each
                    if step:
                        at, values = copies[step - 1]
                        slots[receiver][at:at + values.size] = values
                        landed[(sender, receiver)] += 1
                    for ch in range(cdiv(rows, bm)):
                        ready = landed[(sender, receiver)] >= before + ch + 1
                        nrows = min(bm, rows - ch * bm)
                        there = ((par * world + sender) * cap + ch * bm) * k
                        first = sum(send[sender][:receiver]) if not broadcast else 0
                        want = a[sender][first + ch * bm:first + ch * bm + nrows].reshape(-1)
                        assert not ready or np.array_equal(slots[receiver][there:there + nrows * k], want), \
                            f"call {epoch}: chunk {ch} from {sender} read before it landed"
                # every wait of the call is satisfied once the sender's copies are in
                assert landed[(sender, receiver)] >= before + cdiv(rows, bm)
                announced = rows if broadcast else send[sender][receiver]   # (the same here)
                counted[(sender, receiver)] += cdiv(announced, bm)
                assert counted[(sender, receiver)] == landed[(sender, receiver)]


def gemm_a2a_sdma_calls(world, m, n, sends_per_call, seed):
    """gemm_a2a over SDMA: a sender's rows for a receiver go as one copy (from its outbox, laid
    out as the receiver's slot), on the queue the receiver reads; a sender with no rows for a
    receiver sends none. Copies of one call land in any order across senders; a receiver's wait
    (landed[sender] + 1 copies) is satisfied exactly once this call's copy from that sender is
    in its slot, whatever the earlier calls sent (some nothing); at the call's end landed
    counts a copy per sender that announced rows (cdiv(rows, CAP)), and equals what landed."""
    plans = [planning.scatter_plan("gemm_a2a", world, q, m, 6, n, "bfloat16", "bfloat16", TILES, 132, 1,
                                   transport="sdma") for q in range(world)]
    c = plans[0].consts
    assert c["SDMA"] and not c["GDA"]
    cap, nqueues = c["CAP"], c["QUEUES"]
    for p in plans:   # the outbox is laid out as the slots; landed holds W int64 and the programs done
        assert p.layout.nbytes("outbox") == p.layout.nbytes("slots") and p.layout.nbytes("landed") >= world * 8 + 4
    slot_elems = n * cap
    slots = [np.full(p.layout.nbytes("slots") // ES, np.nan) for p in plans]
    landed = defaultdict(int)        # (sender, receiver) -> copies landed so far
    counted = defaultdict(int)       # the receiver's landed[sender]
    rng = np.random.default_rng(seed)
    for epoch, sends in enumerate(sends_per_call, start=1):
        par = epoch % 2
        rows = [_rand((m, n), 10 * epoch + q) for q in range(world)]   # each rank's product
        copies = []
        for me in range(world):
            first = 0
            for j in range(world):
                count = sends[me][j]
                if j != me and count:
                    queue = ((me - j + world) % world - 1) % nqueues          # the sender's choice
                    assert queue == ((me - j + world) % world - 1) % nqueues  # the receiver's (src = me)
                    copies.append((me, j, (par * world + me) * slot_elems, rows[me][first:first + count].reshape(-1)))
                first += count
        for step in rng.permutation(len(copies)):
            sender, receiver, at, values = copies[step]
            ready_before = landed[(sender, receiver)] >= counted[(sender, receiver)] + 1
            assert not ready_before, f"call {epoch}: the wait for {sender} was satisfied before its copy landed"
            slots[receiver][at:at + values.size] = values
            landed[(sender, receiver)] += 1
            assert landed[(sender, receiver)] >= counted[(sender, receiver)] + 1
            np.testing.assert_array_equal(slots[receiver][at:at + values.size], values)
        for receiver in range(world):
            for sender in range(world):
                if sender != receiver:
                    counted[(sender, receiver)] += cdiv(sends[sender][receiver], cap)
                    assert counted[(sender, receiver)] == landed[(sender, receiver)]


def reduce_sdma_calls(op, world, m_rows, n, seed, calls=3):
    """gemm_rs / gemm_ar over SDMA: every partial tile row a sender owes an owner goes as one
    copy on queue _queue(sender, owner, 0), gemm_ar's summed tile rows from each owner to every
    peer on _queue(owner, peer, 1); copies land in any order (an owner's sums only once all of
    its partials landed). A sum's wait (epoch x _tile_rows_owned(owner) copies from a sender on
    the partials' queue) is satisfied exactly when every partial of the call from that sender
    is in the slot, and phase 3's (the same count of the owner's sums on the other queues) when
    every sum is in the result area: the kernel's formulas (mirrored here) against the copies
    actually posted, and the two phases never counted on one queue."""
    plans = [planning.reduce_plan(op, world, q, m_rows, 6, n, "bfloat16", "bfloat16", TILES, 132, 1,
                                  transport="sdma") for q in range(world)]
    c = plans[0].consts
    assert c["SDMA"] and not c["GDA"]
    all_reduce = op == "gemm_ar"
    nq = c["QUEUES"]
    assert c["SDMA_QUEUE_COUNT"] == nq * (2 if all_reduce else 1)
    assert plans[0].layout.nbytes("outbox") == plans[0].layout.nbytes("slots")
    owned_mt, slot_rows = c["OWNED_MT"], c["SLOT_ROWS"]
    bm, m_own = TILES.bm, m_rows // world

    def queue(sender, receiver, phase):   # cco.ops.kernels.reduce._queue
        return phase * nq + ((receiver - sender + world) % world - 1) % nq

    def tile_rows_owned(owner):           # cco.ops.kernels.reduce._tile_rows_owned
        return max(0, cdiv(cdiv(m_rows, bm) - owner, world)) if all_reduce else cdiv(m_own, bm)

    def rows_of(owner, omt):              # (first row, rows) of owner's tile row omt
        if all_reduce:
            row0 = (owner + omt * world) * bm
            return row0, min(bm, m_rows - row0)
        return owner * m_own + omt * bm, min(bm, m_own - omt * bm)

    for s in range(world):
        for r in range(world):
            if s != r:   # every queue the device communicator has; gemm_ar's phases never share one
                assert queue(s, r, 0) < nq and queue(r, s, 0) == ((s - r + world) % world - 1) % nq
                if all_reduce:
                    assert nq <= queue(s, r, 1) < c["SDMA_QUEUE_COUNT"]
    rng = np.random.default_rng(seed)
    landed = defaultdict(int)   # (sender, receiver, queue) -> copies landed so far
    slots = [np.full(world * 2 * slot_rows * n, np.nan) for _ in range(world)]
    results = [np.full(2 * m_rows * n, np.nan) for _ in range(world)]
    for epoch in range(1, calls + 1):
        par = epoch % 2
        partial = [_rand((m_rows, n), 10 * epoch + q) for q in range(world)]
        total = sum(partial)
        phase1 = [(s, o, omt) for s in range(world) for o in range(world) for omt in range(owned_mt)
                  if s != o and rows_of(o, omt)[1] > 0]
        for o in range(world):   # the copies posted to an owner: what its waits count
            assert sum(1 for s_, o_, _ in phase1 if o_ == o) == (world - 1) * tile_rows_owned(o)
        for step in rng.permutation(len(phase1)):
            s, o, omt = phase1[step]
            row0, nrows = rows_of(o, omt)
            at = ((par * world + s) * slot_rows + omt * bm) * n
            slots[o][at:at + nrows * n] = partial[s][row0:row0 + nrows].reshape(-1)
            landed[(s, o, queue(s, o, 0))] += 1
            for s2 in range(world):   # owner o's waits: ready only with every partial of s2 in
                if s2 != o and landed[(s2, o, queue(s2, o, 0))] >= epoch * tile_rows_owned(o):
                    for omt2 in range(owned_mt):
                        r0, nr = rows_of(o, omt2)
                        if nr > 0:
                            there = ((par * world + s2) * slot_rows + omt2 * bm) * n
                            np.testing.assert_array_equal(slots[o][there:there + nr * n],
                                                          partial[s2][r0:r0 + nr].reshape(-1))
        if not all_reduce:
            continue
        phase3 = [(o, p, omt) for o in range(world) for p in range(world) for omt in range(owned_mt)
                  if o != p and rows_of(o, omt)[1] > 0]
        for step in rng.permutation(len(phase3)):
            o, p, omt = phase3[step]
            row0, nrows = rows_of(o, omt)
            at = par * m_rows * n + row0 * n
            results[p][at:at + nrows * n] = total[row0:row0 + nrows].reshape(-1)
            landed[(o, p, queue(o, p, 1))] += 1
            if landed[(o, p, queue(o, p, 1))] >= epoch * tile_rows_owned(o):   # p copies o's rows out
                for omt2 in range(owned_mt):
                    r0, nr = rows_of(o, omt2)
                    if nr > 0:
                        np.testing.assert_array_equal(results[p][par * m_rows * n + r0 * n:][:nr * n],
                                                      total[r0:r0 + nr].reshape(-1))


def _a2a_sends(world, m, rng):
    sends = []
    for _ in range(world):
        cuts = np.sort(rng.integers(0, m + 1, size=world - 1))
        sends.append(tuple(int(x) for x in np.diff(np.concatenate([[0], cuts, [m]]))))
    return sends


def gemm_ag_sdma_calls(world, m, n, seed, calls=3):
    """gemm_ag over SDMA: the program that completes a row block copies it to every peer, on
    the queue it uses for that peer; copies from different programs land in any order (here
    shuffled per queue); a receiver reads a sender's rows only once its copies there number
    every row block of every call so far (epoch x MT), and then they are all this call's."""
    plans = [planning.scatter_plan("gemm_ag", world, q, m, 6, n, "bfloat16", "bfloat16", TILES, 132, 1,
                                   transport="sdma") for q in range(world)]
    c = plans[0].consts
    assert c["SDMA"] and not c["GDA"]
    mt_, cap, bm, nqueues = c["MT"], c["CAP"], TILES.bm, c["QUEUES"]
    slot_elems = n * cap
    slots = [np.full(p.layout.nbytes("slots") // ES, np.nan) for p in plans]
    landed = defaultdict(int)        # (sender, receiver, queue) -> copies landed so far
    rng = np.random.default_rng(seed)
    for epoch in range(1, calls + 1):
        par = epoch % 2
        rows = [_rand((m, n), 10 * epoch + q) for q in range(world)]   # the products, row blocks
        posted = defaultdict(list)
        for me in range(world):
            for mt in rng.permutation(mt_):                            # row blocks complete in any order
                row0, nrows = mt * bm, min(bm, m - mt * bm)
                at = (par * world + me) * slot_elems + row0 * n
                for d in range(1, world):
                    peer = (me + world - d) % world
                    posted[(me, peer, (d - 1) % nqueues)].append((at, rows[me][row0:row0 + nrows].reshape(-1)))
        for (sender, receiver, queue), copies in sorted(posted.items()):
            assert queue == ((sender - receiver + world) % world - 1) % nqueues   # the queue the receiver reads
            for at, values in copies:
                slots[receiver][at:at + values.size] = values
                landed[(sender, receiver, queue)] += 1
                if landed[(sender, receiver, queue)] >= epoch * mt_:
                    there = (par * world + sender) * slot_elems
                    np.testing.assert_array_equal(slots[receiver][there:there + m * n], rows[sender].reshape(-1))
            assert landed[(sender, receiver, queue)] == epoch * mt_


WORLDS = [1, 2, 3, 4]


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("m", [8, 7, 1])
def test_gemm_ag_over_gda(world, m):
    gemm_ag_calls(world, m, 6, 13)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("m_rows", [24, 13, 2])
def test_gemm_ar_over_gda(world, m_rows):
    reduce_calls("gemm_ar", world, m_rows, 5, 17)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("m_own", [8, 5, 1])
def test_gemm_rs_over_gda(world, m_own):
    reduce_calls("gemm_rs", world, m_own * world, 5, 17)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("m", [8, 7, 1])
def test_ag_gemm_over_gda(world, m):
    gather_calls(world, m, 6, 13, None)
    gather_calls(world, m, 6, 13, None, in_place=True)


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_all_to_all_pair_over_gda(world, seed):
    m = 11
    sends = _a2a_sends(world, m, np.random.default_rng(seed))
    sends[0] = (m,) + (0,) * (world - 1)       # everything to rank 0, nothing elsewhere
    gather_calls(world, m, 6, 13, sends)
    gather_calls(world, m, 6, 13, sends, in_place=True)
    gemm_a2a_calls(world, m, 6, 13, sends)


@pytest.mark.parametrize("world", [2, 3, 4, 6, 8])   # from 6, receivers share queues
@pytest.mark.parametrize("m", [8, 7, 1])
def test_ag_gemm_over_sdma_waits_for_its_chunks_in_order(world, m):
    gather_sdma_calls(world, m, 6, [None] * 3)


@pytest.mark.parametrize("world", [2, 3, 4, 6])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a2a_gemm_over_sdma_counts_what_each_call_landed(world, seed):
    """Splits that change from call to call (one rank sending everything to rank 0, then
    nothing to it): a wait counts from what the earlier calls' copies numbered, not from the
    call's epoch, which only a fixed split would allow."""
    m = 11
    rng = np.random.default_rng(seed)
    calls = [_a2a_sends(world, m, rng) for _ in range(4)]
    calls[1][0] = (m,) + (0,) * (world - 1)
    calls[2][0] = (0,) * (world - 1) + (m,)
    gather_sdma_calls(world, m, 6, calls)


@pytest.mark.parametrize("world", [2, 3, 4, 6])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gemm_a2a_over_sdma_counts_one_copy_per_sender_with_rows(world, seed):
    m = 11
    rng = np.random.default_rng(seed)
    calls = [_a2a_sends(world, m, rng) for _ in range(4)]
    for q in range(1, world):   # call 2: nothing to rank 0 from anyone, so its count stands still
        calls[1][q] = (0,) + calls[1][q][1:]
        calls[1][q] = calls[1][q][:q] + (m - sum(calls[1][q][:q]) - sum(calls[1][q][q + 1:]),) + calls[1][q][q + 1:]
    gemm_a2a_sdma_calls(world, m, 13, calls, seed)


@pytest.mark.parametrize("world", [2, 3, 4, 6])
@pytest.mark.parametrize("m_rows", [24, 13, 2])
def test_gemm_ar_over_sdma_waits_for_every_partial_and_sum(world, m_rows):
    reduce_sdma_calls("gemm_ar", world, m_rows, 13, seed=world + m_rows)


@pytest.mark.parametrize("world", [2, 3, 4, 6])
@pytest.mark.parametrize("m_own", [8, 5, 1])
def test_gemm_rs_over_sdma_waits_for_every_partial(world, m_own):
    reduce_sdma_calls("gemm_rs", world, m_own * world, 13, seed=world + m_own)


@pytest.mark.parametrize("world", [2, 3, 4, 6, 8])   # from 6, receivers share queues
@pytest.mark.parametrize("m", [8, 7, 1])
def test_gemm_ag_over_sdma_reads_a_sender_once_all_its_copies_landed(world, m):
    gemm_ag_sdma_calls(world, m, 13, seed=world * 10 + m)
