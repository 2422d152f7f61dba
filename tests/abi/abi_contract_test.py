# SPDX-License-Identifier: MIT
"""The device ABI contract, checked on the built artifacts.

- the committed ABI table equals the one generated from abi/functions.list now;
- every bitcode variant defines exactly the table's symbols with the table's LLVM
  signatures and default visibility, defines or references nothing else external (LLVM
  intrinsics aside), carries no nvvm-reflect-ftz flag, and has its variant's code-object
  version; llc generates code from it (llc-19, or llc-22 for archs LLVM 19 lacks);
- the manifest lists every variant of the table with the file's sha256 and ABI version.
"""

import concurrent.futures
import hashlib
import json
import os
import re
import struct
import subprocess

import pytest


def opt(request, name):
    return request.config.getoption(name)


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def table(request):
    return load_json(opt(request, "committed"))


@pytest.fixture(scope="module")
def manifest(request):
    return load_json(opt(request, "manifest"))


def test_committed_table_is_current(request, table):
    generated = load_json(opt(request, "generated"))
    assert table == generated, (
        "abi/cco_abi_table.json is stale: run tools/abi/update_table.sh and commit the result")


def test_table_describes_the_guide_abi(table):
    by_symbol = {f["symbol"]: f for f in table["functions"]}
    lsa = by_symbol["cco_lsa_ptr"]
    assert [a["type"] for a in lsa["args"]] == ["uint64", "int32", "uint64"]
    assert lsa["ret"] == "uint64" and lsa["pure"] is True
    for name in ("rank", "world_size", "lsa_rank", "lsa_size"):
        f = by_symbol[f"cco_devcomm_{name}"]
        assert [a["type"] for a in f["args"]] == ["uint64"] and f["ret"] == "int32" and f["pure"]
    fence = by_symbol["cco_system_fence"]
    assert [a["type"] for a in fence["args"]] == ["int32"] and fence["pure"] is False
    assert table["enums"]["CoopScope"] == {"THREAD": 0, "WARP": 1, "BLOCK": 2}
    assert table["enums"]["SignalOp"] == {"NONE": 0, "INC": 1, "ADD": 2}
    assert table["enums"]["ThreadMode"] == {"INDEPENDENT": 0, "AGGREGATE": 1}


def variants(manifest):
    return manifest["variants"]


def pytest_generate_tests(metafunc):
    if "variant" in metafunc.fixturenames:
        data = load_json(metafunc.config.getoption("manifest"))
        metafunc.parametrize("variant", data["variants"], ids=[v["name"] for v in data["variants"]])


def bitcode_path(request, variant):
    return os.path.join(os.path.dirname(opt(request, "manifest")), variant["file"])


def built_by_llvm22(request, variant):
    """FlyDSL's variants of archs LLVM 19 lacks are built by LLVM 22 (device/variants.bzl):
    only LLVM 22's tools read them."""
    return variant["compiled_for"] in opt(request, "llc22_archs").split(",")


def disassemble(request, variant):
    dis = opt(request, "llvm_dis22" if built_by_llvm22(request, variant) else "llvm_dis")
    out = subprocess.run([dis, bitcode_path(request, variant), "-o", "-"],
                         check=True, capture_output=True, text=True)
    return out.stdout


_DEFINE = re.compile(r"^define\s+(?P<attrs>[^@]*?)(?P<ret>\b(?:i\d+|void|ptr))\s+"
                     r"@(?P<name>[\w.$]+)\((?P<args>[^)]*)\)", re.M)
_DECLARE = re.compile(r"^declare\s+[^@]*@(?P<name>[\w.$]+)\(", re.M)
_GLOBAL = re.compile(r"^@(?P<name>[\w.$]+)\s*=\s*(?P<linkage>[\w ]*?)(?:global|constant)", re.M)


def test_manifest_matches_table_targets(table, manifest):
    assert manifest["abi_version"] == table["abi_version"]
    assert [v["name"] for v in manifest["variants"]] == [t["name"] for t in table["targets"]]
    for v, t in zip(manifest["variants"], table["targets"]):
        assert (v["triple"], v["arch"], v["compiled_for"], v["nic"], v["code_object_version"]) == (
            t["triple"], t["arch"], t["compiled_for"], t["nic"], t["code_object_version"])
        assert v["abi_version"] == table["abi_version"]
        assert v["file"] == f"libcco_device-{v['name']}.bc"


def test_bitcode_exports_exactly_the_table(request, table, variant):
    ir = disassemble(request, variant)
    public = {}
    for m in _DEFINE.finditer(ir):
        attrs = m.group("attrs").split()
        if "internal" in attrs or "private" in attrs:
            continue
        assert "hidden" not in attrs, f"{m.group('name')} is hidden: consumers cannot link it"
        arg_types = [a.strip().split()[0] for a in m.group("args").split(",") if a.strip()]
        public[m.group("name")] = (m.group("ret"), arg_types)
    expected = {f["symbol"]: (f["llvm"]["ret"], f["llvm"]["args"]) for f in table["functions"]}
    assert public == expected

    undefined = [m.group("name") for m in _DECLARE.finditer(ir) if not m.group("name").startswith("llvm.")]
    assert undefined == [], f"undefined external references: {undefined}"
    external_globals = [m.group("name") for m in _GLOBAL.finditer(ir)
                        if not re.search(r"\b(internal|private)\b", m.group("linkage"))]
    assert external_globals == [], f"external globals: {external_globals}"


def test_bitcode_module_flags(request, variant):
    ir = disassemble(request, variant)
    assert "nvvm-reflect-ftz" not in ir
    assert f'target triple = "{variant["triple"]}"' in ir
    cov = re.search(r'!"amdhsa_code_object_version", i32 (\d+)', ir)
    if variant["code_object_version"] is None:
        assert cov is None
    else:
        assert cov and int(cov.group(1)) == variant["code_object_version"] * 100


def test_bitcode_sha256_and_stamp(request, variant, table):
    with open(bitcode_path(request, variant), "rb") as f:
        data = f.read()
    assert hashlib.sha256(data).hexdigest() == variant["sha256"]
    assert variant["abi_version"] == table["abi_version"]
    # The wrapper (magic, version, offset, size, cputype) and the stamp before the IR.
    magic, _, offset, size, _ = struct.unpack("<5I", data[:20])
    assert magic == 0x0B17C0DE and data[offset:offset + 4] == b"BC\xc0\xde" and offset + size == len(data)
    stamp = data[20:offset].rstrip(b"\0").split(b"\0")
    assert stamp == [f"CCO_BUILD_ABI_VERSION={table['abi_version']}".encode(),
                     f"CCO_BITCODE_VARIANT={variant['name']}".encode()]


def llc_runs_of(request, variant):
    """llc-19 for the arch the bitcode was compiled for (llc-22 where LLVM 22 built it); llc-22
    also for the named arch where LLVM 19 does not know it (sm_100, gfx950)."""
    runs = [(opt(request, "llc22" if built_by_llvm22(request, variant) else "llc"), variant["compiled_for"])]
    if variant["arch"] in opt(request, "llc22_archs").split(",") and variant["compiled_for"] != variant["arch"]:
        runs.append((opt(request, "llc22"), variant["arch"]))
    return runs


@pytest.fixture(scope="module")
def llc_results(request, manifest, tmp_path_factory):
    """{(variant name, cpu): (llc, its result, the assembly's path)} for every variant's llc
    runs, made at once, as many as there are cores."""
    folder = tmp_path_factory.mktemp("llc")
    jobs = [(v, llc, cpu) for v in manifest["variants"] for llc, cpu in llc_runs_of(request, v)]

    def one(job):
        v, llc, cpu = job
        out = folder / f"{v['name']}-{cpu}.s"
        return subprocess.run([llc, f"-mcpu={cpu}", bitcode_path(request, v), "-o", str(out)],
                              capture_output=True, text=True), out

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        done = list(pool.map(one, jobs))
    return {(v["name"], cpu): (llc, result, out) for (v, llc, cpu), (result, out) in zip(jobs, done)}


def test_llc_generates_code(request, variant, table, llc_results):
    for _, cpu in llc_runs_of(request, variant):
        llc, result, out = llc_results[(variant["name"], cpu)]
        assert result.returncode == 0, f"{llc} -mcpu={cpu}: {result.stderr}"
        asm = out.read_text()
        for sym in ("cco_lsa_ptr", "cco_system_fence", "cco_devcomm_lsa_rank"):
            assert re.search(rf"^\s*(\.visible\s+\.func.*\b{sym}\(|{sym}:)", asm, re.M), f"{sym} not in {cpu} code"
        if cpu.startswith("sm_"):
            # A stack frame in local memory costs a kernel that inlines the function a memory
            # trip per access; every device function fits in registers (a choice between two
            # structs by reference, say, would not).
            framed, function = [], None
            for line in asm.splitlines():
                name = re.match(r"^\s*(?:\.visible\s+|\.weak\s+)?\.func\s+(?:\(.*?\)\s*)?(\w+)", line)
                if name:
                    function = name.group(1)
                elif "__local_depot" in line and function and function not in framed:
                    framed.append(function)
            assert not framed, f"{len(framed)} functions with a local-memory frame on {cpu}: {framed[:8]}"
            check_barrier_orders(asm, table, cpu)
            if llc == opt(request, "llc"):  # the bounds are llc-19's code
                check_post_load_groups(asm, cpu)


def function_bodies(asm):
    """{name: its PTX} for every function of an llc PTX file."""
    bodies, name = {}, None
    for line in asm.splitlines():
        head = re.match(r"^\s*(?:\.visible\s+|\.weak\s+)?\.func\s+(?:\(.*?\)\s*)?(\w+)", line)
        if head:
            name = head.group(1)
            bodies[name] = []
        elif name:
            bodies[name].append(line)
    return {k: "\n".join(v) for k, v in bodies.items()}


def check_barrier_orders(asm, table, cpu):
    """Each LSA barrier symbol with an order releases (st.release.sys) exactly when its order
    has a release side, and acquires (ld.acquire.sys) exactly when it has an acquire side."""
    bodies = function_bodies(asm)
    seen = 0
    for f in table["functions"]:
        order = f["axes"].get("order")
        if f["family"] != "barrier" or order is None:
            continue
        body = bodies[f["symbol"]]
        op = f["dsl"].split(".")[1].split("_")[0]  # arrive, wait or sync
        if op in ("arrive", "sync"):
            releases = order in ("release", "acq_rel")
            assert ("st.release.sys" in body) == releases and ("st.relaxed.sys" in body) != releases, \
                f"{f['symbol']} on {cpu}: stores do not match order {order}"
        if op in ("wait", "sync"):
            assert ("ld.acquire.sys" in body) == (order in ("acquire", "acq_rel")), \
                f"{f['symbol']} on {cpu}: loads do not match order {order}"
        seen += 1
    assert seen == 42


# The posts' loads of their handles' fields (window descriptors, the device communicator) before
# the ring's reservation, in groups: the loads between two conditional branches. A branch on a
# test of a loaded field makes the loads after it wait for that load: after an acquire or a
# fence has emptied L1 (every post and wait has one), an L2 trip per group, on the critical
# path of every post. Loaded together and tested without branches between them (device/handles.hpp
# all_hold, arch::compute_here), a post needs a few groups (handle fields, then each window
# behind a null test of its handle, which loads nothing); chains of && made 15-20.
# The count follows the layout order of the PTX up to the post's first ordered access, so
# a group on a side path (tracing) may count too: the bounds hold llc-19's code with room of one.
POST_LOAD_GROUP_BOUNDS = {
    "cco_sdma_put__thread": 4, "cco_sdma_put__block": 4, "cco_sdma_get__block": 4, "cco_sdma_put_ptr__block": 2,
    "cco_gda_put__it__inc": 4, "cco_gda_put__ib__inc": 4, "cco_gda_put_value__it__inc": 3, "cco_gda_get__it": 4,
    "cco_gda_signal__thread__inc": 2, "cco_gda_signal__block__inc": 2,
}


def load_groups_before_reservation(body):
    """Groups of plain or invariant loads (a handle's fields; not parameters) closed by a branch, before
    the first load or atomic with a memory order (the ring's words: the post proper)."""
    groups, open_group = 0, False
    for line in body.splitlines():
        text = re.sub(r"//.*", "", line).strip()
        if re.match(r"(ld|atom|red)\.(relaxed|acquire|release|acq_rel)", text):
            break
        if re.match(r"ld\.(global\.)?(nc\.)?(v[24]\.)?[bsuf]\d+", text):
            open_group = True
        elif re.match(r"(@%p\d+\s+)?bra", text) or text.startswith("barrier"):
            groups += open_group
            open_group = False
    return groups + open_group


def check_post_load_groups(asm, cpu):
    bodies = function_bodies(asm)
    over = {}
    for symbol, bound in POST_LOAD_GROUP_BOUNDS.items():
        assert symbol in bodies, f"{symbol} not in {cpu} code"
        groups = load_groups_before_reservation(bodies[symbol])
        if groups > bound:
            over[symbol] = groups
    assert not over, f"posts on {cpu} load their handles' fields in more groups than {POST_LOAD_GROUP_BOUNDS}: {over}"
