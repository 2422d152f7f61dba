# SPDX-License-Identifier: MIT
"""cco.ops's kernels compiled (PyPI Triton, no GPU) for every target the bitcode has: each
operator's kernel for sm_90, sm_100, gfx942 and gfx950, the CCO calls fully inlined, the
flags' system-scope release / acquire in the code, and on NVIDIA the GEMM core's main loop
software-pipelined (its stages in shared memory). Arguments are specialised as a launch with
contiguous, 16-byte aligned tensors specialises them."""

import os
import re

import pytest
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from cco.ir.triton import cco
from cco.ops import planning
from cco.ops.kernels.gather import gather_gemm
from cco.ops.kernels.reduce import gemm_reduce
from cco.ops.kernels.scatter import gemm_scatter

TARGETS = {
    "cuda-sm_90": GPUTarget("cuda", 90, 32),
    "cuda-sm_100": GPUTarget("cuda", 100, 32),
    "hip-gfx942": GPUTarget("hip", "gfx942", 64),
    "hip-gfx950": GPUTarget("hip", "gfx950", 64),
}
TYPES = {"bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "fp8e4nv"}
CALL = {"cuda": r"^\s*call(\.uni)?\b", "hip": r"^\s*s_swappc_b64\b"}
MEMORY_MODEL = {"cuda": [r"atom\.global\.sys\.release|st\.release\.sys", r"\.sys\.acquire|\.acquire\.sys",
                         r"fence\.acq_rel\.sys"],
                "hip": [r"buffer_wbl2", r"buffer_inv"]}
# A wait's bound is read on the GPU's constant-rate clock (cco.ops.kernels.signals.device_clock).
CLOCK = {"cuda": r"%globaltimer", "hip": r"s_memrealtime"}
WORLD = 4   # the ranks the kernels are compiled for (test_every_world varies it)

# The checks read the PTX and Triton's metadata; ptxas only has to accept the code and make a binary,
# which it does without its optimiser in a fraction of the time.
os.environ.setdefault("DISABLE_PTXAS_OPT", "1")


def compile_kernel(kernel, ints, pointers, constexprs, target, in_dtype, world=None):
    """constexprs may set TMA (default: on NVIDIA, as on an sm_90+ GPU with rows of 16-byte
    multiples) and B_T (b's columns contiguous: its stride along K is the 1 Triton specialises,
    not its stride along N)."""
    world = WORLD if world is None else world
    tiles = planning.tile_config(target.backend, in_dtype)
    out_dtype = "bfloat16" if in_dtype == "float8_e4m3fn" else in_dtype
    signature = {"dc": "u64", "ws": "u64"}
    for name in pointers:
        signature[name] = "*i32" if name == "table" else f"*{TYPES[out_dtype if name == 'out' else in_dtype]}"
    wide = ("off_", "src_", "timeout")   # byte offsets and a wait's bound in clock ticks
    b_t = constexprs.get("B_T", False)
    unit, strided = ("stride_bk", "stride_bn") if b_t else ("stride_bn", "stride_bk")
    ints = [strided if name == "stride_bk" else name for name in ints]
    signature.update({name: ("i64" if name.startswith(wide) else "i32") for name in ints})
    nvidia = target.backend == "cuda"
    constexprs = dict(dict(TMA=nvidia, TMA_OUT=nvidia, B_T=False), **constexprs, WORLD=world, BM=tiles.bm,
                      BN=tiles.bn, BK=tiles.bk, GROUP_M=tiles.group_m, EVEN_K=True, EVEN_N=True, **{unit: 1})
    signature.update({name: "constexpr" for name in constexprs})
    aligned = [n for n in signature if signature[n].startswith("*") or n in ("K", "N", "stride_am", strided)
               or n.startswith("off_")]
    attrs = {(kernel.arg_names.index(n),): [["tt.divisibility", 16]] for n in aligned}
    source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=target, options={
        "extern_libs": tuple(cco.get_extern_libs(target).items()), "num_warps": tiles.warps,
        "num_stages": tiles.stages})


OFFSETS = ["off_counters", "off_status", "off_hello", "off_counts", "off_flags"]
LSA = dict(GDA=False, SIG_FLAGS=0, NSIG=1)
GDA = dict(GDA=True, SIG_FLAGS=2 * WORLD, NSIG=2 * WORLD + 2 * WORLD * 16 + 32)
SDMA = dict(LSA, SDMA=True, QUEUES=3)


def gather(target, in_dtype, world=None, transport=LSA, **over):
    ints = ["M_OUT", "K", "N", "stride_am", "stride_bk"] + OFFSETS + ["off_slots", "off_sent", "off_landed", "src_win",
                                                                      "src_off", "timeout", "active"]
    consts = dict(CAP=1024, CHUNKS=8, NT=14, RETURN_GATHERED=True, CHECK_COUNTS=True, BC=256,
                  ES=planning.ITEMSIZE[in_dtype], **dict(dict(SDMA=False, QUEUES=1), **transport),
                  **{f"T_{k}": v for k, v in planning.gather_table_offsets(WORLD).items()})
    consts.update(over)
    return compile_kernel(gather_gemm, ints, ["a", "b", "out", "gathered", "table"], consts, target, in_dtype, world)


def scatter(target, in_dtype, broadcast, world=None, transport=LSA, **over):
    ints = ["M", "K", "N", "stride_am", "stride_bk"] + OFFSETS + ["off_arrivals", "off_slots", "off_outbox", "off_sent",
                                                                  "off_landed", "timeout", "active"]
    consts = dict(CAP=1024, MT=8, NT=14, BROADCAST=broadcast, CHECK_COUNTS=not broadcast, BC=256, ES=2, ROWS16=True,
                  **dict(dict(SDMA=False, QUEUES=1), **transport),
                  **{f"T_{k}": v for k, v in planning.scatter_table_offsets(WORLD).items()})
    consts.update(over)
    return compile_kernel(gemm_scatter, ints, ["a", "b", "out", "table"], consts, target, in_dtype, world)


def reduce(target, in_dtype, all_reduce, world=None, transport=LSA, **over):
    ints = ["M", "K", "N", "stride_am", "stride_bk"] + OFFSETS + ["off_slots", "off_rflags", "off_result",
                                                                  "off_outbox", "off_sent", "off_arrivals",
                                                                  "timeout", "active"]
    consts = dict(OWNED_MT=4, SLOT_ROWS=512, MT=16, NT=14, ALL_REDUCE=all_reduce, ES=2,
                  **dict(dict(SDMA=False, QUEUES=1), **transport), SIG_RFLAGS=transport["SIG_FLAGS"] + 2 * WORLD * 4)
    consts.update(over)
    return compile_kernel(gemm_reduce, ints, ["a", "b", "out"], consts, target, in_dtype, world)


# The kernel of each operator (ag_gemm and a2a_gemm share gather_gemm, which the table
# steers; gemm_ag and gemm_a2a share gemm_scatter, apart by BROADCAST).
OPERATORS = {
    "ag_gemm": lambda t, d: gather(t, d),
    "a2a_gemm": lambda t, d: gather(t, d, RETURN_GATHERED=False),
    "gemm_ag": lambda t, d: scatter(t, d, True),
    "gemm_a2a": lambda t, d: scatter(t, d, False),
    "gemm_ar": lambda t, d: reduce(t, d, True),
    "gemm_rs": lambda t, d: reduce(t, d, False),
}


# Over GDA, one variant of each code path (ag_gemm's covers a2a_gemm's, gemm_ar's gemm_rs's).
GDA_OPERATORS = {
    "ag_gemm": lambda t, d: gather(t, d, transport=GDA),
    "gemm_ag": lambda t, d: scatter(t, d, True, transport=GDA),
    "gemm_a2a": lambda t, d: scatter(t, d, False, transport=GDA),
    "gemm_ar": lambda t, d: reduce(t, d, True, transport=GDA),
}


@pytest.fixture(scope="module", params=sorted(TARGETS))
def compiled(request):
    target = TARGETS[request.param]
    return target, {op: make(target, "bfloat16") for op, make in OPERATORS.items()}


def _code(target, c):
    return c.asm["ptx"] if target.backend == "cuda" else c.asm["amdgcn"]


def test_every_operator_compiles_with_cco_inlined(compiled):
    target, kernels = compiled
    for op, c in kernels.items():
        asm = _code(target, c)
        assert c.asm["cubin" if target.backend == "cuda" else "hsaco"], op
        assert re.findall(CALL[target.backend], asm, re.M) == [], f"{op}: a call was left in the {target.arch} code"
        comment = "//" if target.backend == "cuda" else ";"
        code = "\n".join(line.split(comment, 1)[0] for line in asm.splitlines())
        assert "cco_" not in code, f"{op}: a cco_ function survives"
        assert re.search(r"cco_lsa_ptr|cco_devcomm_lsa_rank", c.asm["ttir"]), f"{op} calls no CCO function"
        for pattern in MEMORY_MODEL[target.backend]:
            assert re.search(pattern, asm), f"{op}: no /{pattern}/ in the {target.arch} code"
        assert re.search(CLOCK[target.backend], asm), f"{op}: its waits read no clock in the {target.arch} code"


TMA_LOAD = r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global"
TMA_STORE = r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta"
SHARED_MAX = 227 * 1024   # what one block may have on sm_90 and sm_100


def test_the_gemm_core_is_pipelined_on_nvidia(compiled):
    """128x256x64 bf16 tiles in 4 stages: 4 x (16 + 32) KiB of shared memory; a loop Triton
    did not pipeline would hold one stage (48 KiB). The tiles come by TMA, through descriptors
    made on the device (A's per tile: 128 bytes of global scratch each)."""
    target, kernels = compiled
    if target.backend != "cuda":
        pytest.skip("NVIDIA's shared-memory figure")
    for op, c in kernels.items():
        code = _code(target, c)
        assert c.metadata.shared >= 4 * 48 * 1024, f"{op}: {c.metadata.shared} bytes of shared memory"
        assert re.search(r"wgmma|tcgen05", code), f"{op}: no tensor-core MMA of the generation"
        assert re.search(TMA_LOAD, code), f"{op}: no TMA load"
        assert c.metadata.global_scratch_size >= 2 * 128, f"{op}: no scratch for two descriptors"
        # Its own result's tiles leave by TMA, staged half a tile at a time beside the four
        # stages (gemm_a2a's rows go each to its receiver's place: pointer stores).
        assert bool(re.search(TMA_STORE, code)) == (op != "gemm_a2a"), f"{op}: TMA stores of its result"
        assert c.metadata.shared <= SHARED_MAX, f"{op}: {c.metadata.shared} bytes of shared memory"


@pytest.mark.parametrize("kernel, b_t, tma",
                         [("gather", True, True), ("gather", False, False), ("reduce", True, False)])
def test_the_gemm_core_reads_b_either_way(kernel, b_t, tma):
    """b row-major or column-major (x @ w.t()), by TMA or, where rows are not 16-byte multiples
    apart, by pointer loads (cp.async), which (with the result stored by pointers too, as where
    its rows are no 16-byte multiples either) leave no TMA load and no scratch; pipelined either
    way (the fixture's kernels are the row-major TMA case). The gather kernel reads a peer's rows
    by TMA only after a generic-to-async proxy fence."""
    target = TARGETS["cuda-sm_90"]
    c = gather(target, "bfloat16", TMA=tma, TMA_OUT=tma, B_T=b_t) if kernel == "gather" else \
        reduce(target, "bfloat16", True, TMA=tma, TMA_OUT=tma, B_T=b_t)
    code = _code(target, c)
    assert c.metadata.shared >= 4 * 48 * 1024, c.metadata.shared
    assert re.search(r"wgmma", code)
    assert bool(re.search(TMA_LOAD, code)) == tma
    assert (c.metadata.global_scratch_size > 0) == tma
    if kernel == "gather":   # a peer's rows, written through the generic proxy, read by TMA after a fence
        assert bool(re.search(r"fence\.proxy\.async\.global", code)) == tma


@pytest.mark.parametrize("rows16", [True, False])
def test_gemm_a2a_stores_its_rows_16_bytes_wide_where_rows_allow(rows16):
    """gemm_a2a stores each row where its receiver's slot (or the outbox) has it, a pointer a row:
    told the rows start on 16 bytes (ROWS16: N x ES a multiple of 16), those stores are 16 bytes
    wide, as the rest of the epilogue's; not told, 2 bytes each."""
    c = scatter(TARGETS["cuda-sm_90"], "bfloat16", False, ROWS16=rows16)
    narrow = re.findall(r"\bst\.global\.b16\b", c.asm["ptx"])
    assert (narrow == []) == rows16, f"{len(narrow)} 2-byte stores"


@pytest.mark.parametrize("target", ["cuda-sm_90", "hip-gfx942"])
def test_fp16(target):
    assert _code(TARGETS[target], reduce(TARGETS[target], "float16", True))


@pytest.mark.parametrize("target", ["cuda-sm_90", "cuda-sm_100", "hip-gfx950"])
def test_fp8_e4m3_where_the_target_has_it(target):
    c = gather(TARGETS[target], "float8_e4m3fn", RETURN_GATHERED=False)
    assert _code(TARGETS[target], c)


@pytest.mark.parametrize("world", [1, 2])
def test_every_world(world):
    """One rank (the fused operator as a plain GEMM) and two (no third rank: the loops over the
    others hold one peer or none); the other tests compile four."""
    target = TARGETS["cuda-sm_90"]
    for c in (gather(target, "bfloat16", world), scatter(target, "bfloat16", True, world),
              scatter(target, "bfloat16", False, world), reduce(target, "bfloat16", True, world),
              reduce(target, "bfloat16", False, world)):
        assert c.asm["cubin"]


@pytest.mark.parametrize("target", ["cuda-sm_90", "hip-gfx942"])
def test_every_operator_over_gda(target):
    """transport="gda": the tiles travel as puts with signals (no peer's memory is mapped):
    every CCO call inlined, the GDA put, signal and signal read in the code, and no LSA pointer."""
    t = TARGETS[target]
    for op, make in GDA_OPERATORS.items():
        c = make(t, "bfloat16")
        asm = _code(t, c)
        assert re.findall(CALL[t.backend], asm, re.M) == [], f"{op}: a call was left in the {t.arch} code"
        ttir = c.asm["ttir"]
        for name in ("cco_gda_put__", "cco_gda_read_signal", "cco_devcomm_rank"):
            assert name in ttir, f"{op}: no {name} in the GDA kernel"
        if op == "ag_gemm":   # puts straight from a pool tensor flush before the call ends
            assert "cco_gda_flush__block" in ttir
        assert "cco_lsa_ptr" not in ttir, f"{op}: the GDA kernel addresses a peer's memory"


@pytest.mark.parametrize("target", ["cuda-sm_90", "hip-gfx942"])
def test_the_sdma_operators(target):
    """transport="sdma", every operator: ag_gemm's and a2a_gemm's chunks, gemm_ag's row blocks,
    gemm_a2a's rows for a receiver, the reduce pair's partial tile rows (and gemm_ar's sums)
    handed to copy engines (SDMA puts, their completion counts read as the flags; the all-to-all
    pair's counted from what the calls before landed: the last program to end a call adds the
    call's copies, with a gpu-scope acq_rel count of the programs done), start flags by
    load/store; every sender quiets its queues before the call ends (the all-gather's and the
    all-to-all's pushes by the program that posted them; where any program may post a copy,
    gemm_ag, gemm_a2a and the reduce pair, by the last program to end its sends: another such
    count)."""
    t = TARGETS[target]
    kernels = {  # what each compiles to, and its gpu-scope counts of programs (landed, ended)
        "ag_gemm": (gather(t, "bfloat16", transport=SDMA, CHECK_COUNTS=False, RETURN_GATHERED=True), 1),
        "a2a_gemm": (gather(t, "bfloat16", transport=SDMA, CHECK_COUNTS=True, RETURN_GATHERED=False), 1),
        "gemm_ag": (scatter(t, "bfloat16", True, transport=SDMA), 1),
        "gemm_a2a": (scatter(t, "bfloat16", False, transport=SDMA), 2),
        "gemm_ar": (reduce(t, "bfloat16", True, transport=SDMA), 1),
        "gemm_rs": (reduce(t, "bfloat16", False, transport=SDMA), 1),
    }
    for op, (c, counts) in kernels.items():
        assert re.findall(CALL[t.backend], _code(t, c), re.M) == [], op
        for name in ("cco_sdma_put__block", "cco_sdma_read_signal", "cco_sdma_quiet__block"):
            assert name in c.asm["ttir"], f"no {name} in {op}'s SDMA kernel"
        assert "cco_gda_" not in c.asm["ttir"], op
        counted = len(re.findall(r"tt.atomic_rmw add, acq_rel, gpu", c.asm["ttir"]))
        assert counted == counts, f"{op}: the counts of the programs done"


@pytest.mark.parametrize("target", ["cuda-sm_90", "hip-gfx942"])
def test_the_perf_anchor_is_the_operators_gemm_core(target):
    """`cco perf --suites ops` measures each operator against its GEMM core alone
    (cco_tools.perf.kernels.ops_core): the same tiles and, on NVIDIA, the same pipelined
    tensor-core loop as the operators' kernels, with no CCO call."""
    from cco_tools.perf.kernels.ops_core import core_gemm

    t = TARGETS[target]
    tiles = planning.tile_config(t.backend, "bfloat16")
    signature = {"a": "*bf16", "b": "*bf16", "c": "*bf16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
                 "stride_bk": "i32", "stride_bn": "constexpr"}
    constexprs = dict(stride_bn=1, NT=14, BM=tiles.bm, BN=tiles.bn, BK=tiles.bk, GROUP_M=tiles.group_m, EVEN_K=True,
                      EVEN_N=True, TMA=t.backend == "cuda", B_T=False)
    signature.update({name: "constexpr" for name in constexprs})
    attrs = {(core_gemm.arg_names.index(n),): [["tt.divisibility", 16]]
             for n in ("a", "b", "c", "N", "K", "stride_am", "stride_bk")}
    c = triton.compile(ASTSource(fn=core_gemm, signature=signature, constexprs=constexprs, attrs=attrs), target=t,
                       options={"num_warps": tiles.warps, "num_stages": tiles.stages})
    assert "tt.extern_elementwise" not in c.asm["ttir"]   # no CCO call (nor any other library's)
    if t.backend == "cuda":
        assert c.metadata.shared >= 4 * 48 * 1024, c.metadata.shared
        assert re.search(r"wgmma", _code(t, c))
        assert re.search(TMA_LOAD, _code(t, c))   # the operators' TMA core
    else:
        assert c.asm["hsaco"]


@pytest.mark.parametrize("target", ["cuda-sm_90", "hip-gfx942"])
@pytest.mark.parametrize("reduce, my_block", [(False, False), (True, True), (False, True)])
def test_the_cco_split_anchor_inlines_its_collective(target, reduce, my_block):
    """`cco perf --suites ops`'s CCO split (cco_tools.perf.kernels.ops_split): the all-gather,
    reduce-scatter and all-to-all forms of its one kernel, with the LSA barrier and peer
    pointers inlined and its loads and stores 16 bytes wide (a copy at 2 bytes a thread would
    make the anchor a strawman)."""
    from cco_tools.perf.kernels.ops_split import BLOCK, lsa_exchange

    t = TARGETS[target]
    signature = {"dc": "u64", "win": "u64", "dst": "*bf16", "count": "i32", "failed": "*i32", "active": "i32",
                 "NRANKS": "constexpr", "REDUCE": "constexpr", "MY_BLOCK": "constexpr", "BLOCK": "constexpr"}
    constexprs = dict(NRANKS=WORLD, REDUCE=reduce, MY_BLOCK=my_block, BLOCK=BLOCK)
    names = list(signature)
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in ("dst", "count")}
    c = triton.compile(ASTSource(fn=lsa_exchange, signature=signature, constexprs=constexprs, attrs=attrs), target=t,
                       options={"extern_libs": tuple(cco.get_extern_libs(t).items()), "num_warps": 8})
    code = _code(t, c)
    assert re.findall(CALL[t.backend], code, re.M) == []
    for name in ("cco_lsa_barrier_sync__block__acquire", "cco_lsa_barrier_sync__block__release", "cco_lsa_ptr"):
        assert name in c.asm["ttir"], f"no {name} in the split's kernel"
    wide = {"cuda": r"ld\.global\S*\.v4\.b32|ld\.global\S*\.v4\.u32", "hip": r"global_load_dwordx4"}[t.backend]
    assert re.search(wide, code), "the split's loads are not 16 bytes wide"
