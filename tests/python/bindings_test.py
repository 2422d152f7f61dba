# SPDX-License-Identifier: MIT
"""The ctypes layer of cco against the C side: declarations, struct layouts, constants, errors.

One process, no communicator: what is checked here is that the Python mirrors say what
cco.h and abi/*.h say, that the loaded library agrees, and that `import cco` needs
neither the library nor Triton.
"""

import ctypes
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cco
from cco import _abi, _lib, communicator
from cco.devcomm import DevCommStruct, TeamStruct
from cco.errors import RESULT_NAMES, CCOAbortedError, CCOError, CCOTimeoutError, check, error_for
from cco.requirements import CCODevCommRequirements
from cco.unique_id import UniqueIdStruct, to_struct


def repo_file(relative):
    """A file of the tree: in Bazel's runfiles (the cwd), else in the checkout."""
    for root in (Path.cwd(), Path(__file__).resolve().parents[2]):
        if (root / relative).exists():
            return root / relative
    pytest.fail(f"{relative} not found")


def c_functions():
    """name -> parameter count, for every function cco.h declares."""
    header = repo_file("host/include/cco/cco.h").read_text()
    header = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    functions = {}
    for name, params in re.findall(r"^[\w ]+?\**\s*(cco\w+)\s*\(([^)]*)\)\s*;", header, flags=re.M):
        params = params.strip()
        functions[name] = 0 if params in ("", "void") else params.count(",") + 1
    return functions


# --- declarations -----------------------------------------------------------------------------


def test_every_function_of_cco_h_is_declared_with_its_arity():
    declared = c_functions()
    assert len(declared) >= 20, declared  # the parse found the API (24 functions today), not a fragment
    assert set(_lib.SIGNATURES) == set(declared)
    for name, arity in declared.items():
        assert len(_lib.SIGNATURES[name][1]) == arity, name


def test_the_loaded_library_has_argtypes_and_restype_everywhere():
    lib = _lib.load()
    assert _lib.load() is lib  # loaded once
    for name, (restype, argtypes) in _lib.SIGNATURES.items():
        function = getattr(lib, name)
        assert function.restype is restype and function.argtypes == argtypes, name


def test_versions_agree_everywhere():
    import cco.device

    assert _lib.abi_version() == _abi.ABI_VERSION == cco.device.ABI_VERSION
    assert _lib.library_version() == _abi.VERSION
    assert cco.__version__ == "%d.%d.%d" % _abi.VERSION


# --- constants --------------------------------------------------------------------------------


def test_gda_connection_constants_are_the_abi_tables():
    from cco.device import ENUMS

    table = ENUMS["GdaConnectionType"]
    exported = {name: getattr(cco, f"GDA_CONNECTION_{name}") for name in ("NONE", "CROSSNODE", "FULL", "RAIL")}
    assert exported == table == {"NONE": 0, "CROSSNODE": 1, "FULL": 2, "RAIL": 3}


def test_magic_numbers_and_sizes_are_the_headers():
    version_h = repo_file("abi/version.h").read_text()
    defines = dict(re.findall(r"#define (CCO_\w+) (0x[0-9A-Fa-f]+|\d+)u?", version_h))
    assert int(defines["CCO_ABI_VERSION"], 0) == _abi.ABI_VERSION
    assert int(defines["CCO_DEV_COMM_MAGIC"], 0) == _abi.DEV_COMM_MAGIC
    assert int(defines["CCO_WINDOW_MAGIC"], 0) == _abi.WINDOW_MAGIC
    assert int(defines["CCO_DEV_COMM_REQUIREMENTS_MAGIC"], 0) == _abi.DEV_COMM_REQUIREMENTS_MAGIC
    cco_h = repo_file("host/include/cco/cco.h").read_text()
    assert f"#define CCO_UNIQUE_ID_BYTES {_abi.UNIQUE_ID_BYTES}" in cco_h
    assert f"#define CCO_ALLGATHER_HOST_MAX_BYTES {communicator.ALLGATHER_HOST_MAX_BYTES}" in cco_h
    for part, value in zip(("MAJOR", "MINOR", "PATCH"), _abi.VERSION):
        assert f"#define CCO_VERSION_{part} {value}" in cco_h
    assert enum_values(cco_h, "ccoResult_t") == RESULT_NAMES
    platforms = enum_values(cco_h, "ccoPlatform_t")
    assert {code: name.removeprefix("ccoPlatform").lower() for code, name in platforms.items()} == _abi.PLATFORM_NAMES


def enum_values(header, enum):
    """value -> name for the members of `typedef enum <enum> { ... }`."""
    body = re.search(r"typedef enum %s \{(.*?)\}" % enum, header, flags=re.S).group(1)
    return {int(value): name for name, value in re.findall(r"(\w+) = (\d+)", body)}


# --- struct mirrors ---------------------------------------------------------------------------


def test_dev_comm_mirror_matches_every_static_assert_of_devcomm_h():
    devcomm_h = repo_file("abi/devcomm.h").read_text()
    offsets = re.findall(r"offsetof\(ccoDevComm, (\w+)\) == (\d+)", devcomm_h)
    assert len(offsets) > 10
    for field, offset in offsets:
        assert getattr(DevCommStruct, field).offset == int(offset), field
    assert ctypes.sizeof(DevCommStruct) == 328 and ctypes.sizeof(TeamStruct) == 16


def test_requirements_mirror_and_its_defaults():
    reqs = CCODevCommRequirements()
    # size_t size, uint32 magic, uint32 version, then nine ints (and padding to 8).
    assert ctypes.sizeof(CCODevCommRequirements) == 56
    assert [getattr(CCODevCommRequirements, f).offset
            for f in ("magic", "version", "gdaConnectionType", "gdaDirectGroupMaxBytes")] == [8, 12, 16, 48]
    assert (reqs.size, reqs.magic, reqs.version) == (56, _abi.DEV_COMM_REQUIREMENTS_MAGIC, _abi.ABI_VERSION)
    assert [getattr(reqs, f) for f in CCODevCommRequirements.FIELDS] == [
        cco.GDA_CONNECTION_CROSSNODE, 4, 16, 16, 0, 0, 1, -1, -1]


def test_requirements_fields_by_attribute_and_keyword():
    reqs = CCODevCommRequirements(lsa_barrier_count=2, gda_signal_count=128)
    reqs.gda_connection_type = cco.GDA_CONNECTION_NONE
    reqs.sdma_queue_count = 1
    assert (reqs.lsaBarrierCount, reqs.gdaSignalCount, reqs.gdaConnectionType, reqs.sdmaQueueCount) == (2, 128, 0, 1)
    assert "lsa_barrier_count=2" in repr(reqs)
    with pytest.raises(AttributeError, match="lsa_barrier_count"):
        reqs.lsa_barriers = 1  # a typo is an error, not a silently ignored attribute
    with pytest.raises(TypeError, match="no field"):
        CCODevCommRequirements(signals=1)
    with pytest.raises(ValueError, match="C int"):
        reqs.gda_signal_count = 2**31
    with pytest.raises(TypeError):
        reqs.gda_signal_count = 1.5


def test_unique_id_conversion():
    raw = bytes(range(128))  # NUL first: a c_char field would have lost everything
    assert bytes(to_struct(raw)) == raw
    assert bytes(to_struct(bytearray(raw))) == raw == bytes(to_struct(memoryview(raw)))
    assert ctypes.sizeof(UniqueIdStruct) == 128
    for wrong in (raw[:-1], None, 7):
        with pytest.raises(ValueError, match="128 bytes"):
            to_struct(wrong)
    with pytest.raises(ValueError, match="broadcast"):
        to_struct(None)  # the usual mistake: a rank that never received rank 0's id


# --- errors -----------------------------------------------------------------------------------


def test_check_raises_with_the_libraries_detail():
    check(0)  # success is silent
    lib = _lib.load()
    with pytest.raises(CCOError) as not_live:
        check(lib.ccoCommRank(None, ctypes.byref(ctypes.c_int())))
    assert not_live.value.code == 2 and not_live.value.code_name == "ccoInvalidUsage"
    assert "ccoCommRank" in str(not_live.value) and "not a live communicator" in not_live.value.detail
    assert isinstance(not_live.value, RuntimeError)


def test_error_classes():
    assert type(error_for(6, "late")) is CCOTimeoutError and type(error_for(8, "stop")) is CCOAbortedError
    assert type(error_for(1, "bad")) is CCOError
    unknown = error_for(99, "")
    assert unknown.code == 99 and unknown.code_name == "ccoResult(99)"
    assert str(error_for(7, "full")) == "ccoOutOfMemory: full"


def test_errors_and_requirements_survive_pickle():
    # Both cross processes in practice: errors through launchers, requirements to ranks.
    timeout = pickle.loads(pickle.dumps(error_for(6, "rank 1 did not reach it")))
    assert type(timeout) is CCOTimeoutError and (timeout.code, timeout.detail) == (6, "rank 1 did not reach it")
    reqs = pickle.loads(pickle.dumps(CCODevCommRequirements(lsa_barrier_count=3)))
    assert reqs.lsa_barrier_count == 3 and reqs.magic == _abi.DEV_COMM_REQUIREMENTS_MAGIC


# --- importing ---------------------------------------------------------------------------------

_WITHOUT_LIBRARY = """
import sys
import cco, cco.device
assert "triton" not in sys.modules, "import cco pulled in Triton"
try:
    cco.Communicator.get_unique_id()
except ImportError as e:
    print(type(e).__name__, e)
"""


def test_import_needs_neither_the_library_nor_triton(tmp_path):
    import os

    env = dict(os.environ, CCO_LIBRARY=str(tmp_path / "missing" / "libcco.so"))
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(cco.__file__)))
    done = subprocess.run([sys.executable, "-c", _WITHOUT_LIBRARY], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("LibraryError") and "CCO_LIBRARY" in done.stdout


def test_a_missing_library_says_how_to_get_one(monkeypatch):
    monkeypatch.delenv(_lib.LIBRARY_ENV, raising=False)
    monkeypatch.setattr(cco._resources, "host_library_path", lambda: None)
    with pytest.raises(ImportError, match=r"bazel build //host:libcco.so"):
        _lib.library_path()
