# SPDX-License-Identifier: MIT
"""What an operator's operands must be, checked on the host before any kernel runs.

Pure Python over shapes and dtype names (no torch, no GPU), so the rules are unit-tested
on any machine; cco.ops.context turns tensors into the records checked here. Every error
names the operator, the argument and what was expected, and is raised on the rank that
holds the bad argument. Disagreement between ranks is the planner's business
(planning.signature is compared once per shape), not a collective on every call.
"""

from dataclasses import dataclass

# The element types the operators take, by torch's name; what they accumulate in and give back.
INPUT_DTYPES = ("bfloat16", "float16", "float8_e4m3fn")
FP8 = "float8_e4m3fn"
OUT_DTYPES = ("bfloat16", "float16")

OPERATORS = ("gemm_ar", "gemm_rs", "ag_gemm", "gemm_ag", "gemm_a2a", "a2a_gemm")
TRANSPORTS = ("lsa", "sdma", "gda")


class OperandError(ValueError):
    """An operand that no rank could compute with: wrong rank, shape, dtype, split."""


@dataclass(frozen=True)
class Operand:
    """What the checks need of a tensor: its shape, dtype name, strides (in elements), whether
    it is on the communicator's GPU and whether it starts on a 16-byte boundary."""

    shape: tuple
    dtype: str
    strides: tuple = None
    on_device: bool = True
    aligned: bool = True

    @property
    def rows(self):
        return self.shape[0]

    @property
    def cols(self):
        return self.shape[1]


@dataclass(frozen=True)
class Problem:
    """One call's GEMM and collective, as every rank must agree on it.

    a_rows x k times k x n, this rank's matrices; out_rows x n the result on this rank.
    send[j] / recv[j]: rows sent to / received from rank j (the all-to-all pair; for the
    all-gather pair every rank sends its a_rows to all). b_kmajor: b's columns are contiguous
    (b is the transpose of a row-major n x k matrix, as `x @ w.t()` passes it); the kernels
    are built for one layout of b, so it is agreed as the shapes are."""

    op: str
    world: int
    a_rows: int
    k: int
    n: int
    in_dtype: str
    out_dtype: str
    out_rows: int
    send: tuple = ()
    recv: tuple = ()
    b_kmajor: bool = False


def _name(dtype):
    return str(dtype).replace("torch.", "")


def _fail(op, message):
    raise OperandError(f"cco.ops.{op}: {message}")


def check_dtypes(op, a, b, out_dtype=None, fp8_supported=True):
    """(input dtype, output dtype): a and b of one supported type; fp8 gives bfloat16 unless
    out_dtype says float16."""
    da, db = _name(a.dtype), _name(b.dtype)
    for what, d in (("a", da), ("b", db)):
        if d not in INPUT_DTYPES:
            _fail(op, f"{what} is {d}; the operators take {', '.join(INPUT_DTYPES)}")
    if da != db:
        _fail(op, f"a is {da} and b is {db}: both must be the same type")
    if da == FP8 and not fp8_supported:
        _fail(op, "float8_e4m3fn inputs need a GPU with e4m3 (sm_89+, gfx950); this one has none")
    default = "bfloat16" if da == FP8 else da
    out = _name(out_dtype) if out_dtype is not None else default
    if out not in OUT_DTYPES:
        _fail(op, f"out_dtype {out} is not one of {', '.join(OUT_DTYPES)}")
    if da != FP8 and out != da:
        _fail(op, f"the result of {da} inputs is {da}, not {out}")
    return da, out


def _matrix(op, what, t):
    if len(t.shape) != 2:
        _fail(op, f"{what} must be a matrix (2 dimensions); it has shape {tuple(t.shape)}")
    if not t.on_device:
        _fail(op, f"{what} must be on the communicator's GPU")
    if t.strides is not None and 0 in t.strides and min(t.shape) > 1:
        _fail(op, f"{what} has a zero stride (an expanded view); make it contiguous first")


def check_gemm(op, a, b):
    """a is rows x k, b is k x n; returns (rows, k, n)."""
    _matrix(op, "a", a)
    _matrix(op, "b", b)
    if a.cols != b.rows:
        _fail(op, f"a is {a.rows}x{a.cols} and b is {b.rows}x{b.cols}: a's columns must equal b's rows")
    if a.rows == 0 or a.cols == 0 or b.cols == 0:
        _fail(op, f"empty operand (a {a.rows}x{a.cols}, b {b.rows}x{b.cols})")
    if a.strides is not None and a.strides[1] != 1:
        _fail(op, "a must have contiguous rows (stride 1 along k); call a.contiguous()")
    return a.rows, a.cols, b.cols


def b_kmajor(b):
    """Whether b (k x n) is read column by column: its columns contiguous and its rows not."""
    return b.strides is not None and b.strides[0] == 1 and b.strides[1] != 1


def check_splits(op, splits, world, rows, what="splits"):
    """splits: W non-negative ints adding up to `rows` (torch's all_to_all_single rule)."""
    try:
        splits = tuple(int(s) for s in splits)
    except TypeError:
        _fail(op, f"{what} must be a sequence of {world} row counts, got {splits!r}")
    if len(splits) != world:
        _fail(op, f"{what} has {len(splits)} entries; the communicator has {world} ranks")
    if any(s < 0 for s in splits):
        _fail(op, f"{what} {list(splits)} has a negative count")
    if sum(splits) != rows:
        _fail(op, f"{what} {list(splits)} add up to {sum(splits)} rows; the matrix has {rows}")
    return splits


def check_out(op, out, rows, n, out_dtype):
    if out is None:
        return
    _matrix(op, "out", out)
    if tuple(out.shape) != (rows, n):
        _fail(op, f"out has shape {tuple(out.shape)}; the result is {rows}x{n}")
    check_aligned(op, "out", out)
    if _name(out.dtype) != out_dtype:
        _fail(op, f"out is {_name(out.dtype)}; the result is {out_dtype}")
    if out.strides is not None and tuple(out.strides) != (n, 1):
        _fail(op, "out must be contiguous")


def check_aligned(op, what, t):
    """The kernels are compiled for results that start on 16 bytes (as every allocation does);
    another start would need another kernel, compiled mid-run."""
    if not t.aligned:
        _fail(op, f"{what} must start on a 16-byte boundary (a fresh tensor does; this one is a view that "
                  "starts inside another)")


def check_transport(op, transport, lsa_size, world):
    if transport not in TRANSPORTS:
        _fail(op, f"transport={transport!r}; choose one of {', '.join(TRANSPORTS)}")
    if transport in ("lsa", "sdma") and lsa_size != world:
        _fail(op, f"transport={transport!r} reaches {lsa_size} of {world} ranks (those of its node); ranks on other "
                  "nodes need transport='gda'")


def problem(op, a, b, world, splits=None, out_splits=None, out=None, out_dtype=None, fp8_supported=True):
    """Checks one call's operands and returns the Problem every rank must agree on.

    Shards (W = world): gemm_ar / gemm_rs: a is M x K/W, b is K/W x N. ag_gemm: a is M/W x K,
    b is K x N/W. gemm_ag: a is M/W x K, b is K x N. gemm_a2a / a2a_gemm: a is M x K, b K x N,
    splits[j] rows to rank j. gemm_rs refuses M not divisible by W (torch's reduce-scatter rule:
    every shard has M // W rows; a remainder would belong to no rank)."""
    if op not in OPERATORS:
        _fail(op, f"unknown operator; the operators are {', '.join(OPERATORS)}")
    rows, k, n = check_gemm(op, a, b)
    din, dout = check_dtypes(op, a, b, out_dtype, fp8_supported)
    send = recv = ()
    if op == "gemm_ar":
        out_rows = rows
    elif op == "gemm_rs":
        if rows % world:
            _fail(op, f"a has {rows} rows, not a multiple of the {world} ranks: the reduce-scatter gives each rank "
                      f"M // W rows (torch's rule) and would drop {rows % world}; pad M to a multiple of {world}")
        out_rows = rows // world
    elif op in ("ag_gemm", "gemm_ag"):
        out_rows = rows * world
        send = recv = (rows,) * world
    else:
        if splits is None:
            if rows % world:
                _fail(op, f"no splits given and a's {rows} rows do not divide among {world} ranks")
            splits = (rows // world,) * world
        send = check_splits(op, splits, world, rows)
        if out_splits is None:
            recv = None  # agreed among the ranks once per split pattern (planning)
            out_rows = None
        else:
            recv = check_splits(op, out_splits, world, sum(int(s) for s in out_splits), "out_splits")
            out_rows = sum(recv)
    result = Problem(op, world, rows, k, n, din, dout, out_rows, send, recv, b_kmajor(b))
    if out_rows is not None:
        check_out(op, out, out_rows, n, dout)
    return result
