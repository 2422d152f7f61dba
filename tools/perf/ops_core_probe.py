# SPDX-License-Identifier: MIT
"""Where an operator loses to cuBLAS with one rank: each operator (cco.ops, LSA) against its
GEMM core alone (cco_tools.perf.kernels.ops_core, the anchor `cco perf --suites ops` times:
grouped tiles, the same tile shape and programs) and against torch.matmul, for the tile shape the operators
use and three variants of it (GROUP_M 16 and 4, 3 stages). CUDA-graph timing as `cco perf`
(5 calls a graph, median of 3). Prints one line per shape: matmul TFLOP/s, then per variant
matmul/plain and matmul/op in %.

Then candidate cores for the operators, each as matmul/core in %: the same tiles loaded by TMA
(host tensor descriptors; the result stored in two halves, so that 4 stages fit in shared
memory), that loop flattened (the next tile's loads overlap this one's epilogue), flattened
and warp-specialized, and TMA with 3 stages and one store; TMA with A's descriptor made on the
device per tile from a pointer chosen at run time (what an operator reading its own rows or a
peer's slot needs: two host descriptors would take two pipelined loops, twice the shared
memory; it also stores C through a descriptor, in halves); one tile a program (a plain Triton
GEMM, 4 and 3 stages); and the operators' persistent core itself (`persistent`: TMA where the
rows allow, as cco.ops.kernels.core reads tiles since 2bc30ed; pointer loads before).

    python -m cco.launch -n 1 tools/perf/ops_core_probe.py [--cores-only]
"""

import statistics
import sys

import torch
import triton
import triton.language as tl

from cco import Communicator
from cco.ops import planning
from cco.ops.context import OpsContext
from cco.ops.kernels.core import tile_coords
from cco.runtime import bootstrap
from cco_tools.perf.kernels.ops_core import core_matmul
from cco_tools.perf.suites.ops import _operator, _time

SHAPES = [("ag_gemm", 4096, 8192, 28672), ("ag_gemm", 16384, 8192, 28672), ("gemm_ar", 4096, 28672, 8192),
          ("a2a_gemm", 32768, 7168, 2048), ("gemm_a2a", 32768, 2048, 7168)]
BASE = planning.TILE_CONFIGS["cuda"]["bfloat16"]
VARIANTS = {"base": BASE, "g16": planning.TileConfig(128, 256, 64, 8, 4, 16),
            "s3": planning.TileConfig(128, 256, 64, 8, 3), "g4": planning.TileConfig(128, 256, 64, 8, 4, 4)}


@triton.jit
def tma_core(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             GROUP_M: tl.constexpr, FLATTEN: tl.constexpr, WS: tl.constexpr, SUBTILE: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    MT = tl.cdiv(M, BM)
    NT = tl.cdiv(N, BN)
    for t in tl.range(pid, MT * NT, programs, flatten=FLATTEN, warp_specialize=WS):
        mt, nt = tile_coords(t, MT, NT, GROUP_M)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([mt * BM, ki * BK]), b_desc.load([ki * BK, nt * BN]), acc)
        if SUBTILE:
            left, right = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
            c_desc.store([mt * BM, nt * BN], left.to(c_desc.dtype))
            c_desc.store([mt * BM, nt * BN + BN // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([mt * BM, nt * BN], acc.to(c_desc.dtype))


@triton.jit
def one_tile_core(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """One tile a program, as a plain Triton GEMM does (the issue's 92-97 % reference), against
    the operators' persistent loop. K a multiple of BK (every shape here)."""
    mt, nt = tile_coords(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    rm = (mt * BM + tl.arange(0, BM)) % M
    rn = (nt * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a + rm[:, None].to(tl.int64) * K + rk[None, :]
    b_ptrs = b + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(K // BK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK * N
    rows = mt * BM + tl.arange(0, BM)
    cols = nt * BN + tl.arange(0, BN)
    tl.store(c + rows[:, None].to(tl.int64) * N + cols[None, :], acc.to(c.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def one_tile_matmul(a, b, c, stages):
    t = BASE
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, t.bm) * triton.cdiv(n, t.bn),)
    return lambda: one_tile_core[grid](a, b, c, m, n, k, BM=t.bm, BN=t.bn, BK=t.bk, GROUP_M=t.group_m,
                                       num_warps=t.warps, num_stages=stages)


@triton.jit
def tma_device_core(a, a2, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                    GROUP_M: tl.constexpr):
    """TMA with descriptors made on the device: A's made per tile from a pointer chosen at run
    time (odd tile rows read `a2`, a second copy of A), as an operator would read this rank's
    rows or a peer's slot through one pipelined loop; B's and C's made once."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    MT = tl.cdiv(M, BM)
    NT = tl.cdiv(N, BN)
    b_desc = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1], block_shape=[BM, BN // 2])
    for t in range(pid, MT * NT, programs):
        mt, nt = tile_coords(t, MT, NT, GROUP_M)
        src = tl.where(mt % 2 == 1, a2, a)
        a_desc = tl.make_tensor_descriptor(src, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([mt * BM, ki * BK]), b_desc.load([ki * BK, nt * BN]), acc)
        left, right = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
        c_desc.store([mt * BM, nt * BN], left.to(c_desc.dtype))
        c_desc.store([mt * BM, nt * BN + BN // 2], right.to(c_desc.dtype))


def tma_device_matmul(a, b, c, sms):
    def scratch(size, alignment, stream):   # the descriptors' global scratch, per launch
        return torch.empty(size, dtype=torch.int8, device=a.device)

    triton.set_allocator(scratch)
    t = BASE
    m, k = a.shape
    n = b.shape[1]
    a2 = a.clone()
    grid = (min(sms, triton.cdiv(m, t.bm) * triton.cdiv(n, t.bn)),)
    return lambda: tma_device_core[grid](a, a2, b, c, m, n, k, BM=t.bm, BN=t.bn, BK=t.bk, GROUP_M=t.group_m,
                                         num_warps=t.warps, num_stages=t.stages)


# (flatten, warp-specialize, store in halves, stages)
TMA_VARIANTS = {"tma": (False, False, True, 4), "tma-flat": (True, False, True, 4), "tma-ws": (True, True, True, 4),
                "tma-s3": (False, False, False, 3)}


def tma_matmul(a, b, c, sms, variant):
    from triton.tools.tensor_descriptor import TensorDescriptor

    flatten, ws, subtile, stages = variant
    t = BASE
    m, k = a.shape
    n = b.shape[1]
    a_desc = TensorDescriptor(a, [m, k], [k, 1], [t.bm, t.bk])
    b_desc = TensorDescriptor(b, [k, n], [n, 1], [t.bk, t.bn])
    c_desc = TensorDescriptor(c, [m, n], [n, 1], [t.bm, t.bn // 2 if subtile else t.bn])
    grid = (min(sms, triton.cdiv(m, t.bm) * triton.cdiv(n, t.bn)),)
    return lambda: tma_core[grid](a_desc, b_desc, c_desc, m, n, k, BM=t.bm, BN=t.bn, BK=t.bk, GROUP_M=t.group_m,
                                  FLATTEN=flatten, WS=ws, SUBTILE=subtile, num_warps=t.warps, num_stages=stages)


def cores(m, k, n, sms, dev):
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16) / 8
    b = torch.randn(k, n, device=dev, dtype=torch.bfloat16) / 8
    c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    want = torch.matmul(a, b)
    t_mm = median_time(lambda: torch.matmul(a, b))
    line = f"cores {m}x{k}x{n}: matmul {2 * m * k * n / t_mm / 1e12:.0f} TF/s"
    candidates = {name: (lambda v=v: tma_matmul(a, b, c, sms, v)) for name, v in TMA_VARIANTS.items()}
    candidates["tma-device"] = lambda: tma_device_matmul(a, b, c, sms)
    candidates["one-tile"] = lambda: one_tile_matmul(a, b, c, 4)
    candidates["one-tile-s3"] = lambda: one_tile_matmul(a, b, c, 3)
    candidates["persistent"] = lambda: (lambda: core_matmul(a, b, c, sms, 1))
    for name, make in candidates.items():
        try:
            run = make()
            c.fill_(float("nan"))   # a variant that leaves tiles unwritten shows as WRONG
            run()
            torch.cuda.synchronize()
            wrong = (c.float() - want.float()).abs().max().item()
            line += f" | {name} {100 * t_mm / median_time(run):.1f}%" + ("" if wrong < 0.5 else f" WRONG {wrong:.2f}")
        except Exception as e:  # noqa: BLE001 (a variant the compiler or the GPU refuses says why)
            line += f" | {name} error {type(e).__name__}: {str(e)[:100]}"
    return line


def median_time(fn, reps=5, runs=3):
    return statistics.median(_time(fn, reps, None) for _ in range(runs))


def probe(comm, op, m, k, n, sms, dev):
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16) / 8
    b = torch.randn(k, n, device=dev, dtype=torch.bfloat16) / 8
    c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    splits = [m]
    call = _operator(op, a, b, comm, splits, splits, "lsa")   # as cco perf calls it
    t_mm = median_time(lambda: torch.matmul(a, b))
    line = f"{op} {m}x{k}x{n}: matmul {2 * m * k * n / t_mm / 1e12:.0f} TF/s"
    try:
        for name, cfg in VARIANTS.items():
            planning.TILE_CONFIGS["cuda"]["bfloat16"] = cfg
            OpsContext.of(comm).plans.clear()   # (a plan's key has no tiles: made again with cfg)
            # the core alone with cfg (core_matmul reads the tile configuration just set)
            t_plain = median_time(lambda: core_matmul(a, b, c, sms, 1))
            try:
                fused = f"{100 * t_mm / median_time(call):.1f}"
            except Exception as e:  # noqa: BLE001 (a failing variant is a figure that says so)
                fused = f"error {type(e).__name__}: {str(e)[:80]}"
            line += f" | {name}: plain {100 * t_mm / t_plain:.1f}% op {fused}%"
    finally:
        planning.TILE_CONFIGS["cuda"]["bfloat16"] = BASE
        OpsContext.of(comm).plans.clear()
    return line


def main():
    rank, world, uid = bootstrap()
    comm = Communicator.init(world, rank, uid)
    dev = torch.device("cuda", torch.cuda.current_device())
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    if "--cores-only" not in sys.argv:
        for shape in SHAPES:
            print(probe(comm, *shape, sms, dev), flush=True)
            torch.cuda.empty_cache()
    for _, m, k, n in SHAPES:
        print(cores(m, k, n, sms, dev), flush=True)
        torch.cuda.empty_cache()
    comm.destroy()


if __name__ == "__main__":
    main()
