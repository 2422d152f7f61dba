# SPDX-License-Identifier: MIT
"""The 68 device functions the guide's system exports, pinned by name and signature.

Bindings written for that system link against our bitcode only if every one of its symbols is
there with the same C signature (shared/notes/reference-facts.md). The list below is written out
by hand from those facts, not derived from abi/functions.list, so a change to the list, the
generator or the table that breaks one of them fails here. abi_contract_test checks that every
bitcode variant defines exactly the table's symbols with the table's LLVM signatures; this test
checks the table (and the C header for C callers) against the guide.
"""

import json
import re

import pytest

U64, I32 = "uint64", "int32"
_C_TYPES = {U64: "uint64_t", I32: "int32_t"}
_LLVM_TYPES = {U64: "i64", I32: "i32"}

_SDMA_DATA = [("dc", U64), ("peer", I32), ("dstWin", U64), ("dstOff", U64), ("srcWin", U64), ("srcOff", U64),
              ("bytes", U64), ("qid", I32), ("flags", I32)]
_GDA_PUT = [("dc", U64), ("ctx", I32), ("peer", I32), ("dstWin", U64), ("dstOff", U64), ("srcWin", U64),
            ("srcOff", U64), ("bytes", U64), ("signalId", I32), ("signalValue", U64)]
_GDA_PUT_VALUE = [("dc", U64), ("ctx", I32), ("peer", I32), ("dstWin", U64), ("dstOff", U64), ("value", U64),
                  ("signalId", I32), ("signalValue", U64)]
_GDA_GET = [("dc", U64), ("ctx", I32), ("peer", I32), ("remoteWin", U64), ("remoteOff", U64), ("localWin", U64),
            ("localOff", U64), ("bytes", U64)]
_SCOPES = ("thread", "warp", "block")
_GDA_TAGS = ("it", "iw", "ib", "at")
_SIGNAL_OPS = ("none", "inc", "add")


def _guide_functions():
    """symbol -> (ret, [(arg name, type)], pure): the guide's 68."""
    f = {"cco_lsa_ptr": (U64, [("window", U64), ("peer", I32), ("offset", U64)], True),
         "cco_system_fence": (I32, [("leaderOnly", I32)], False),
         "cco_sdma_quiet_queue": (I32, [("dc", U64), ("peer", I32), ("qid", I32)], False),
         "cco_gda_read_signal": (U64, [("dc", U64), ("ctx", I32), ("signalId", I32), ("bits", I32)], False),
         "cco_gda_reset_signal": (I32, [("dc", U64), ("ctx", I32), ("signalId", I32)], False)}
    for name in ("rank", "world_size", "lsa_rank", "lsa_size"):
        f[f"cco_devcomm_{name}"] = (I32, [("dc", U64)], True)
    for op in ("put", "get"):
        for scope in _SCOPES:
            for suffix in ("", "_ns"):
                f[f"cco_sdma_{op}__{scope}{suffix}"] = (I32, _SDMA_DATA, False)
    for scope in _SCOPES:
        f[f"cco_sdma_quiet__{scope}"] = (I32, [("dc", U64), ("peer", I32)], False)
        f[f"cco_sdma_commit__{scope}"] = (I32, [("dc", U64), ("peer", I32), ("qid", I32)], False)
        f[f"cco_gda_wait_signal__{scope}"] = (
            I32, [("dc", U64), ("ctx", I32), ("signalId", I32), ("least", U64), ("bits", I32)], False)
        for op in ("inc", "add"):
            f[f"cco_gda_signal__{scope}__{op}"] = (
                I32, [("dc", U64), ("ctx", I32), ("peer", I32), ("signalId", I32), ("value", U64)], False)
    for tag in _GDA_TAGS:
        f[f"cco_gda_get__{tag}"] = (I32, _GDA_GET, False)
        for op in _SIGNAL_OPS:
            f[f"cco_gda_put__{tag}__{op}"] = (I32, _GDA_PUT, False)
            f[f"cco_gda_put_value__{tag}__{op}"] = (I32, _GDA_PUT_VALUE, False)
    for scope in ("warp", "block"):
        f[f"cco_gda_flush__{scope}"] = (I32, [("dc", U64), ("ctx", I32)], False)
        f[f"cco_gda_flush_peer__{scope}"] = (I32, [("dc", U64), ("ctx", I32), ("peer", I32)], False)
    return f


GUIDE = _guide_functions()


def test_the_guide_exports_68_functions():
    assert len(GUIDE) == 68


@pytest.fixture(scope="module")
def table(request):
    with open(request.config.getoption("committed"), encoding="utf-8") as f:
        return {entry["symbol"]: entry for entry in json.load(f)["functions"]}


@pytest.fixture(scope="module")
def c_header(request):
    with open(request.config.getoption("c_header"), encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("symbol", sorted(GUIDE))
def test_table_keeps_the_guide_signature(table, symbol):
    ret, args, pure = GUIDE[symbol]
    assert symbol in table, f"{symbol} is missing from the ABI table"
    entry = table[symbol]
    assert entry["ret"] == ret, f"{symbol} returns {entry['ret']}, the guide's returns {ret}"
    assert [(a["name"], a["type"]) for a in entry["args"]] == args
    assert entry["pure"] is pure
    # What the bitcode must define (abi_contract_test holds every variant to the table's LLVM types).
    assert entry["llvm"] == {"ret": _LLVM_TYPES[ret], "args": [_LLVM_TYPES[t] for _, t in args]}


@pytest.mark.parametrize("symbol", sorted(GUIDE))
def test_c_header_declares_the_guide_prototype(c_header, symbol):
    ret, args, _ = GUIDE[symbol]
    found = re.search(rf"\b(\w+)\s+{symbol}\s*\(([^)]*)\)\s*;", c_header)
    assert found, f"{symbol} is not declared in cco_device_abi.h"
    assert found.group(1) == _C_TYPES[ret]
    declared = [p.split()[0] for p in found.group(2).split(",") if p.strip() and p.strip() != "void"]
    assert declared == [_C_TYPES[t] for _, t in args]
