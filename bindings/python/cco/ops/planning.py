# SPDX-License-Identifier: MIT
"""Tiles, programs, workspace layouts and the per-call tables of the operators: pure
arithmetic (no torch, no GPU), shared by the host side and the unit tests.

Every operator's kernel is one persistent launch of `programs` programs over BM x BN tiles.
Data and flags another rank writes into this rank live in a workspace that every rank
allocates the same way at the same offset (a plan per shape, made collectively once), in
two halves: call e uses half e % 2. A rank starts call e + 2, which writes half e % 2 of its
peers again, only after it finished call e + 1, which needed data every peer sent in call
e + 1, after that peer had finished call e (its reads of half e % 2) - so no flag has to be
reset and no acknowledgement flows back. Flags hold the epoch (call number, from 1) of the
data they announce; per-program call counters in the workspace count epochs on the device,
so a CUDA graph replays with fresh epochs.
"""

from dataclasses import dataclass, field

ALIGN = 256
INT32 = 4
ITEMSIZE = {"bfloat16": 2, "float16": 2, "float8_e4m3fn": 1, "float32": 4}
# [0]: a wait gave up (a peer that never came, or an abort); [1]: row counts disagreed; [2..6]:
# what a wait that ran out of time waited for (cco.ops.kernels.signals._note_wait, describe_wait)
STATUS_WORDS = 8
COUNT_BYTES = 8    # a row count's word in the workspace (a GDA put_value writes 8 bytes)


# The GPU clock the kernels' waits read (cco.ops.kernels.signals.device_clock), in ticks a
# millisecond: NVIDIA's %globaltimer counts nanoseconds, AMD CDNA's s_memrealtime 100 MHz.
CLOCK_TICKS_PER_MS = {"cuda": 1_000_000, "hip": 100_000}


NO_WAIT_BOUND = 2**63 - 1   # ticks no wait reaches: what an int64 kernel argument holds at most


def wait_ticks(backend, timeout_ms):
    """A wait's bound in device_clock ticks on `backend`: timeout_ms as a device communicator
    carries it (ccoDevComm.waitTimeoutMs: 0 is none)."""
    if timeout_ms <= 0:
        return NO_WAIT_BOUND
    return min(NO_WAIT_BOUND, int(timeout_ms) * CLOCK_TICKS_PER_MS[backend])


def describe_wait(words, layout, base):
    """Status words 2-6 of a plan (a wait that ran out of time: what it waited for, the value
    wanted and the value read, low 32 bits) in words; base: the workspace's address here,
    where an LSA flag's address is placed in its area."""
    kind, wanted, read = words[2], words[5], words[6]
    if kind == 1:
        address = (words[3] & 0xFFFFFFFF) | (words[4] & 0xFFFFFFFF) << 32
        what = f"the LSA flag at 0x{address:x}"
        for name, (start, nbytes) in layout.areas.items():
            if start <= address - base < start + nbytes:
                what = f"LSA flag word {(address - base - start) // INT32} of the workspace's {name} area"
    elif kind == 2:
        what = f"GDA signal {words[3]}"
    elif kind == 3:
        what = f"the SDMA copies from rank {words[3]} on queue {words[4]}"
    else:
        what = f"a wait of kind {kind}"
    return f"a wait that ran out of time: {what}, wanted {wanted}, read {read}"


# ccoDeviceStatus (abi/enums.h) as a failed GDA or SDMA call of a kernel leaves it in status
# word 7 (cco.ops.kernels.signals.note_failure), and what each means there.
FAILED_CALLS = {1: "TIMEOUT (its ring stayed full, or its queue's copies did not complete, in time)",
                2: "ABORTED (the proxy failed its ring: a peer lost or a transfer refused; or the communicator "
                   "was aborted)",
                3: "INVALID_ARGUMENT (a queue, peer, window or range the device refused)"}


def describe_failed_call(code):
    """Status word 7 of a plan (the device status a failed GDA or SDMA call returned) in words."""
    return f"a GDA or SDMA call returned {FAILED_CALLS.get(code, f'device status {code}')}"


def cdiv(a, b):
    return -(-a // b)


def round_up(n, to=ALIGN):
    return cdiv(n, to) * to


@dataclass(frozen=True)
class TileConfig:
    """The GEMM core's tile and launch shape for one target."""

    bm: int
    bn: int
    bk: int
    warps: int
    stages: int
    group_m: int = 8


# NVIDIA Hopper / Blackwell: 128x256x64, 8 warps, 4 stages (192 KiB of shared memory, and 32 KiB
# more to stage half a tile of the result for its TMA store: 224 of the 227 a block may have) is
# the shape that keeps a plain Triton GEMM within a few percent of cuBLAS at the layers' shapes.
# AMD CDNA3/4 has 64 KiB of LDS: 128x128x64 double-buffered.
TILE_CONFIGS = {
    "cuda": {"bfloat16": TileConfig(128, 256, 64, 8, 4), "float16": TileConfig(128, 256, 64, 8, 4),
             "float8_e4m3fn": TileConfig(128, 256, 128, 8, 4)},
    "hip": {"bfloat16": TileConfig(128, 128, 64, 8, 2), "float16": TileConfig(128, 128, 64, 8, 2),
            "float8_e4m3fn": TileConfig(128, 128, 128, 8, 2)},
}


def tile_config(backend, in_dtype, small_m=None):
    """The tile shape for a backend ("cuda" / "hip") and input dtype. small_m: rows of the
    largest M block a rank multiplies; below 128 the tile is 64 rows high."""
    config = TILE_CONFIGS[backend][in_dtype]
    if small_m is not None and small_m <= 64 and backend == "cuda":
        config = TileConfig(64, config.bn, config.bk, 4, config.stages, config.group_m)
    return config


# Multiprocessors a GPU keeps free of the operators' programs where the proxy carries their
# transfers out as copies (GDA, SDMA): a device-to-device copy runs on the SMs, not on a copy
# engine (tools/perf/copy_busy_sms_probe.cu on an H100: no cuMemcpyAsync, and no
# cuMemcpyBatchAsync with the PREFER_OVERLAP_WITH_COMPUTE hint, made progress at any size while
# a spinning kernel held every SM), so programs that held every SM while they waited for a copy
# would wait for ever.
COPY_SMS = 2


def resident_programs(sm_count, ranks_per_gpu, reserved=0):
    """Programs per rank that are resident at once with `ranks_per_gpu` ranks sharing a GPU of
    `sm_count` multiprocessors, `reserved` of them kept free: one per multiprocessor split among
    the ranks (a program that waits for a peer holds its SM, and a peer's programs that are not
    resident would never come), and where ranks share the GPU, few enough that the programs of
    all but one rank leave a pair of multiprocessors whole.

    That pair is for what a late rank runs before its programs (a torch.matmul, say): its
    peers' programs spin until it comes, and it must still find room. On an H100 with four ranks
    (results/h100/README.md, ops-split-4ranks-diag-*), 33 programs a rank (every SM) left a
    rank's matmul, and so its programs, waiting until its peers' waits timed out, while 16 a rank
    ran clean. Why a pair: cuBLAS's kernels run in clusters of two SMs of one TPC, which programs
    spread one to an SM over every TPC leave none of; (ranks - 1) * programs < SMs / 2 leaves one."""
    usable = sm_count - reserved
    ranks = max(1, ranks_per_gpu)
    share = usable // ranks
    if ranks > 1:
        share = min(share, (usable // 2 - 1) // (ranks - 1))
    return max(1, share)


def programs_for(sm_count, ranks_per_gpu, tiles, transport="lsa"):
    """Persistent programs per rank: every program of every rank sharing the GPU resident at
    once (resident_programs), COPY_SMS left free where copies carry the transfers, at most one
    per tile."""
    reserved = COPY_SMS if transport in ("gda", "sdma") else 0
    return max(1, min(tiles, resident_programs(sm_count, ranks_per_gpu, reserved)))


class Layout:
    """Byte offsets of named areas in a workspace, each ALIGN-aligned."""

    def __init__(self):
        self.areas = {}
        self.size = 0

    def add(self, name, nbytes):
        self.areas[name] = (self.size, nbytes)
        self.size += round_up(max(nbytes, 1))
        return self.areas[name][0]

    def __getitem__(self, name):
        return self.areas[name][0]

    def nbytes(self, name):
        return self.areas[name][1]

    def __repr__(self):
        return f"Layout({self.size} bytes: {', '.join(f'{k}@{v[0]}' for k, v in self.areas.items())})"


@dataclass
class Plan:
    """One operator at one shape on one rank: the kernel's tiles, the workspace layout, the
    int32 table the kernel reads (`table`) and the constants it is compiled with."""

    op: str
    world: int
    rank: int
    tiles: TileConfig
    programs: int
    layout: Layout
    table: list = field(default_factory=list)
    consts: dict = field(default_factory=dict)
    out_rows: int = 0


def _header(layout, programs, world):
    """Per-program call counters (then one word: the programs that ended the call's sends,
    cco.ops.kernels.signals.quiet_when_last), the status words, and the start flags: at the start of a
    call every rank raises its start flag on every peer (with the rows it sends that peer),
    and a call ends only once every peer's start flag of that call is up. So a rank is at
    most one call ahead of any peer even where it receives nothing from it (an empty
    all-to-all split), which is what the two workspace halves need."""
    layout.add("counters", (programs + 1) * INT32)
    layout.add("status", STATUS_WORDS * INT32)
    layout.add("hello", 2 * world * INT32)
    layout.add("counts", 2 * world * COUNT_BYTES)


def _gda_areas(layout, consts, world, flags, rflags=0, outbox=0):
    """What the GDA transport adds (cco.ops.kernels.signals): its signals are the start flags
    (2 W: half x sender), then the operator's flags (`flags`), then gemm_ar's (`rflags`); a
    `sent` record per peer and signal (the epoch last announced); an outbox where what a peer
    receives is laid out before it is put (`outbox` bytes; none where the operator puts from
    its own receiving area)."""
    consts.update(GDA=True, SDMA=False, QUEUES=1, SIG_FLAGS=2 * world, SIG_RFLAGS=2 * world + flags,
                  NSIG=2 * world + flags + rflags)
    layout.add("sent", world * consts["NSIG"] * INT32)
    if outbox:
        layout.add("outbox", outbox)


SDMA_QUEUES = 4   # the most copy-engine queues an SDMA plan spreads its receivers over (the kernels say which)


def _lsa_consts(consts, world=1, sdma=False):
    """LSA's and SDMA's constants; SDMA_QUEUE_COUNT: the queues the plan's device communicator
    gets (QUEUES, which a kernel spreads its receivers over; gemm_ar doubles it)."""
    queues = max(1, min(world - 1, SDMA_QUEUES)) if sdma else 1
    consts.update(GDA=False, SDMA=sdma, QUEUES=queues, SDMA_QUEUE_COUNT=queues, SIG_FLAGS=0, SIG_RFLAGS=0, NSIG=1)


def _landed_area(layout, world):
    """SDMA's count of the copies each sender's earlier calls landed here (W int64, see
    cco.ops.kernels.signals.count_landed), then the call's count of programs done (int32)."""
    layout.add("landed", world * 8 + INT32)


def rotated(rank, world):
    """Ranks in the order a rank consumes their data: itself first (nothing to wait for),
    then rank + 1, rank + 2, ... The peer that needs this rank's data first is rank - 1."""
    return [(rank + i) % world for i in range(world)]


def prefix(counts):
    out = [0]
    for c in counts:
        out.append(out[-1] + c)
    return out


# --- gather, then GEMM: ag_gemm and a2a_gemm ------------------------------------------------
#
# Each rank pushes rows of its `a` into a slot of every receiver's workspace (slot = sender's
# rank, `cap` rows), BM rows a chunk, and raises that chunk's flag. The receiver multiplies
# blocks in rotated order: its own rows straight from `a`, then each sender's slot, tile rows
# waiting for their chunk's flag. Table (int32), position i = 0..W-1 in rotated order:
#   SRC[i] rank, CNT[i] rows from it, OUT[i] first result row, TPRE[i] first tile (W+1),
#   then for push order d = 0..W-2 (receiver rank - 1 - d): DST[d], SOFF[d] first row of a
#   sent, SCNT[d] rows sent, UPRE[d] first push unit (W entries), then LOCAL_OFF: the first
#   row of a that this rank keeps; SENDR[j] / RECVR[j]: rows sent to / received from rank j.

GATHER_FIELDS = ("SRC", "CNT", "OUT", "TPRE", "DST", "SOFF", "SCNT", "UPRE", "LOCAL", "SENDR", "RECVR")


def gather_table_offsets(world):
    """Where each field of the gather table starts (in int32 words)."""
    sizes = {"SRC": world, "CNT": world, "OUT": world, "TPRE": world + 1, "DST": max(world - 1, 1),
             "SOFF": max(world - 1, 1), "SCNT": max(world - 1, 1), "UPRE": world, "LOCAL": 1,
             "SENDR": world, "RECVR": world}
    return dict(zip(GATHER_FIELDS, prefix([sizes[f] for f in GATHER_FIELDS])))


def gather_plan(op, world, rank, a_rows, k, n, in_dtype, out_dtype, tiles, sm_count, ranks_per_gpu,
                return_gathered=False, transport="lsa"):
    """The workspace of ag_gemm / a2a_gemm at one shape: a slot of `cap` = a_rows rows per
    sender (the most one sender can send one receiver) and a flag per chunk of BM rows; GDA: a
    signal per chunk; SDMA: the count of copies from each sender that earlier calls landed
    (the copy engines' counts never reset; a call's splits may differ from the last's). GDA
    and SDMA read `a` from a window: a staging area holds a copy of an `a` that lies in none."""
    cap = a_rows
    nt = cdiv(n, tiles.bn)
    chunks = cdiv(cap, tiles.bm)
    layout = Layout()
    programs = programs_for(sm_count, ranks_per_gpu, world * chunks * nt, transport)
    _header(layout, programs, world)
    layout.add("flags", 2 * world * chunks * INT32)
    layout.add("slots", 2 * world * cap * k * ITEMSIZE[in_dtype])
    consts = dict(CAP=cap, CHUNKS=chunks, NT=nt, RETURN_GATHERED=bool(return_gathered))
    if transport == "gda":
        _gda_areas(layout, consts, world, flags=2 * world * chunks)
    else:
        _lsa_consts(consts, world, sdma=transport == "sdma")
    if transport == "sdma":
        _landed_area(layout, world)
    if transport != "lsa":
        layout.add("stage", cap * k * ITEMSIZE[in_dtype])
    return Plan(op, world, rank, tiles, programs, layout, [], consts)


def gather_table(world, rank, send, recv, tiles, n, broadcast=False):
    """The int32 table of one split pattern (see above); (table, result rows). broadcast:
    every receiver gets the same rows, all of a (ag_gemm), instead of consecutive blocks."""
    bm, nt = tiles.bm, cdiv(n, tiles.bn)
    order = rotated(rank, world)
    counts = [recv[r] for r in order]
    out_first = prefix(recv)
    tile_pre = prefix([cdiv(c, bm) * nt for c in counts])
    send_first = [0] * (world + 1) if broadcast else prefix(send)
    dests = [(rank - 1 - d) % world for d in range(world - 1)]
    unit_pre = prefix([cdiv(send[j], bm) for j in dests])
    table = (order + counts + [out_first[r] for r in order] + tile_pre +
             (dests or [0]) + ([send_first[j] for j in dests] or [0]) + ([send[j] for j in dests] or [0]) +
             unit_pre + [send_first[rank]] + list(send) + list(recv))
    return table, sum(recv)


# --- GEMM, then scatter: gemm_ag and gemm_a2a -----------------------------------------------
#
# Each rank multiplies its own rows; a tile's epilogue stores its rows where they belong: into
# this rank's result directly for rows it keeps, into a slot of the receiver's workspace for
# the others (slot = sender's rank, `cap` rows x n). gemm_ag sends every row to every rank
# and flags each tile; gemm_a2a sends each row to one rank and flags a receiver once the last
# tile with rows for it is stored (a per-receiver arrival count). Then every program copies
# flagged slots into the result. Table (int32): DOFF[j] first row of a for rank j (W+1),
# DTILES[j] tiles holding rows for rank j (W), then receiver side in rotated order: SRC[i],
# CNT[i], OUT[i] (W each).

SCATTER_FIELDS = ("DOFF", "DTILES", "SRC", "CNT", "OUT", "SENDR", "RECVR")


def scatter_table_offsets(world):
    sizes = {"DOFF": world + 1, "DTILES": world, "SRC": world, "CNT": world, "OUT": world, "SENDR": world,
             "RECVR": world}
    return dict(zip(SCATTER_FIELDS, prefix([sizes[f] for f in SCATTER_FIELDS])))


def tiles_touching(first, count, bm, nt):
    """Tiles of BM rows (x nt columns) that hold any of rows [first, first + count)."""
    if count == 0:
        return 0
    return (((first + count - 1) // bm) - (first // bm) + 1) * nt


def scatter_plan(op, world, rank, a_rows, k, n, in_dtype, out_dtype, tiles, sm_count, ranks_per_gpu, transport="lsa"):
    """The workspace of gemm_ag / gemm_a2a at one shape: a slot of `cap` = a_rows rows x n per
    sender, a flag per tile (gemm_ag) or per sender (gemm_a2a), arrival counts per receiver.
    GDA: gemm_ag flags per row block (its puts carry whole rows) and counts the tiles of each
    (2 x mt arrivals); gemm_a2a lays out each receiver's rows in an outbox first. SDMA: the same
    as copies; gemm_a2a also keeps the count of copies each sender's earlier calls landed."""
    cap = a_rows
    bm, nt = tiles.bm, cdiv(n, tiles.bn)
    mt = cdiv(a_rows, bm)
    layout = Layout()
    programs = programs_for(sm_count, ranks_per_gpu, mt * nt, transport)
    _header(layout, programs, world)
    broadcast = op == "gemm_ag"
    gda = transport == "gda"
    flags_per_source = (mt if gda else mt * nt) if broadcast else 1
    layout.add("flags", 2 * world * flags_per_source * INT32)
    layout.add("arrivals", 2 * max(world, mt if transport != "lsa" and broadcast else 0) * INT32)
    slots = 2 * world * cap * n * ITEMSIZE[out_dtype]
    layout.add("slots", slots)
    consts = dict(CAP=cap, MT=mt, NT=nt, BROADCAST=broadcast, FLAGS_PER_SOURCE=flags_per_source)
    if gda:
        _gda_areas(layout, consts, world, flags=2 * world * flags_per_source, outbox=0 if broadcast else slots)
    else:
        _lsa_consts(consts, world, sdma=transport == "sdma")
        if transport == "sdma" and not broadcast:
            layout.add("outbox", slots)
            _landed_area(layout, world)
    return Plan(op, world, rank, tiles, programs, layout, [], consts)


def scatter_table(world, rank, send, recv, tiles, n):
    """The int32 table of one split pattern (see above); (table, result rows)."""
    bm, nt = tiles.bm, cdiv(n, tiles.bn)
    doff = prefix(send)
    dtiles = [tiles_touching(doff[j], send[j], bm, nt) for j in range(world)]
    order = rotated(rank, world)
    out_first = prefix(recv)
    return (doff + dtiles + order + [recv[r] for r in order] + [out_first[r] for r in order] + list(send) +
            list(recv)), sum(recv)


# --- GEMM, then reduce: gemm_rs and gemm_ar -------------------------------------------------
#
# Rows are owned by tile rows: gemm_rs gives rank q the rows [q M/W, (q+1) M/W), cut in tiles
# of its own; gemm_ar gives rank q the tile rows q, q + W, q + 2W, ... of the whole M. A rank
# computes its partial tiles owner by owner, starting with rank + 1 and ending with itself,
# and stores each into the owner's slot for it (slot = sender's rank); the owner sums the W
# partials of a tile in rank order once their flags are up. gemm_ar's owner then stores the
# sum into its result and into every peer's result area, flagging each tile, and every rank
# copies the flagged tiles of the others into its result.

def reduce_plan(op, world, rank, m_rows, k, n, in_dtype, out_dtype, tiles, sm_count, ranks_per_gpu, transport="lsa"):
    """GDA: partials go through an outbox laid out as the slots and travel as tile rows (a
    flag per sender and tile row, 2 x W x owned_mt arrival counts); gemm_ar's sums travel from
    the own result area as tile rows (2 x owned_mt more counts, a flag per tile row). SDMA: the
    same tile rows as copies, gemm_ar's sums on a second set of queues."""
    bm, nt = tiles.bm, cdiv(n, tiles.bn)
    layout = Layout()
    if op == "gemm_rs":
        m = m_rows // world
        owned_mt = cdiv(m, bm)        # tile rows of one owner's block
        total_mt = owned_mt * world
        slot_rows = m
    else:
        total_mt = cdiv(m_rows, bm)
        owned_mt = cdiv(total_mt, world)   # the most tile rows one owner holds
        slot_rows = owned_mt * bm
    tiles_total = total_mt * nt
    programs = programs_for(sm_count, ranks_per_gpu, tiles_total, transport)
    _header(layout, programs, world)
    layout.add("flags", 2 * world * owned_mt * nt * INT32)
    slots = 2 * world * slot_rows * n * ITEMSIZE[out_dtype]
    layout.add("slots", slots)
    if op == "gemm_ar":
        layout.add("rflags", 2 * total_mt * nt * INT32)
        layout.add("result", 2 * m_rows * n * ITEMSIZE[out_dtype])
    consts = dict(MT=total_mt, OWNED_MT=owned_mt, NT=nt, SLOT_ROWS=slot_rows, ALL_REDUCE=op == "gemm_ar")
    if transport != "lsa":
        layout.add("arrivals", 2 * (world + 1) * owned_mt * INT32)
    if transport == "gda":
        _gda_areas(layout, consts, world, flags=2 * world * owned_mt,
                   rflags=2 * total_mt if op == "gemm_ar" else 0, outbox=slots)
    else:
        _lsa_consts(consts, world, sdma=transport == "sdma")
        if transport == "sdma":   # gemm_ar's sums on queues of their own
            layout.add("outbox", slots)
            consts["SDMA_QUEUE_COUNT"] *= 2 if op == "gemm_ar" else 1
    out_rows = m_rows if op == "gemm_ar" else m_rows // world
    return Plan(op, world, rank, tiles, programs, layout, [0], consts, out_rows=out_rows)


def owned_rows_ar(owner, world, m_rows, bm):
    """gemm_ar: the rows rank `owner` reduces (its tile rows owner, owner + W, ...)."""
    rows = []
    for t in range(owner, cdiv(m_rows, bm), world):
        rows.extend(range(t * bm, min(m_rows, (t + 1) * bm)))
    return rows


def signature(problem, tiles, transport):
    """What every rank must agree on before the first call at a shape: compared once, by
    value, when the plan is made. Rows sent per rank may differ (all-to-all); what each rank
    receives follows from everyone's, exchanged at the same time."""
    return (problem.op, problem.world, problem.a_rows, problem.k, problem.n, problem.in_dtype, problem.out_dtype,
            tiles.bm, tiles.bn, transport, "b column-major" if problem.b_kmajor else "b row-major")


def uses_tma(tma_hardware, problem):
    """Whether the GEMM core reads its tiles by TMA (cco.ops.kernels.core): on hardware that has
    it, where every row it reads starts a multiple of 16 bytes after the one before, the
    descriptors' rule: rows of a and of a slot (K elements), of b (N elements, K where b is
    column-major). cco.ops.common.prepare lays the operands out so."""
    size = ITEMSIZE[problem.in_dtype]
    b_row = problem.k if problem.b_kmajor else problem.n
    return bool(tma_hardware) and problem.k * size % 16 == 0 and b_row * size % 16 == 0


def stores_by_tma(tma_hardware, problem):
    """Whether the GEMM core stores the tiles of this rank's own result by TMA (cco.ops.kernels.
    core.store_out): on hardware that has it, where a result row is a multiple of 16 bytes long
    (the result is contiguous and starts on 16 bytes: cco.ops.checks)."""
    return bool(tma_hardware) and problem.n * ITEMSIZE[problem.out_dtype] % 16 == 0


def recv_from_sends(sends, rank):
    """Rows rank `rank` receives from each rank, given every rank's send vector."""
    return tuple(s[rank] for s in sends)
