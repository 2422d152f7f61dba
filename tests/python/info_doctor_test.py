# SPDX-License-Identifier: MIT
"""`cco info` and `cco doctor` (cco_tools.info, cco_tools.doctor) on this machine: the facts
a user reports, and each finding with what to do about it."""

import json
import os
import subprocess
import sys

ENV = dict(os.environ, CCO_PLATFORM="cpu", CCO_TIMEOUT_MS="20000")


def run_cco(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "cco_tools", *args], env=dict(ENV, **(env or {})),
                          capture_output=True, text=True, timeout=timeout)


def test_info_lists_every_target():
    r = run_cco("info", "--json")
    assert r.returncode == 0, r.stderr
    facts = json.loads(r.stdout)
    assert facts["host_abi_version"] == facts["abi_version"]
    assert set(facts["targets"]) >= {"nvptx-sm_90-proxy", "amdgcn-gfx942-proxy-cov5"}
    assert facts["gda_network"].startswith(("tcp", "verbs"))


def doctor(**env):
    r = run_cco("doctor", "--json", env=env)
    return r.returncode, {f["check"]: f for f in json.loads(r.stdout)}, r.stderr


def test_doctor_passes_a_working_machine():
    code, found, err = doctor()
    assert code == 0, (found, err)
    assert found["host library"]["status"] == "ok"
    assert found["one-rank job"]["status"] == "ok" and "platform cpu" in found["one-rank job"]["found"]
    assert found["bitcode"]["status"] == "skip"  # no GPU here


def test_doctor_names_what_is_wrong():
    code, found, _ = doctor(CCO_PLATFORM="bogus", CCO_DEVICE_BC="/no/such.bc", CCO_TIMEOUTMS="5")
    assert code == 1
    assert found["one-rank job"]["status"] == "FAIL" and "CCO_PLATFORM=bogus" in found["one-rank job"]["found"]
    assert found["bitcode"]["status"] == "FAIL" and "/no/such.bc does not exist" in found["bitcode"]["found"]
    env = found["environment"]
    assert env["status"] == "warn" and "CCO_TIMEOUTMS (did you mean CCO_TIMEOUT_MS?)" in env["found"]
    # A bitcode of another ABI version is refused too (a file that is not CCO's at all here).
    code, found, _ = doctor(CCO_DEVICE_BC=sys.executable)
    assert code == 1 and "is not a CCO device bitcode" in found["bitcode"]["found"]


def test_doctor_warns_of_too_few_hardware_queues():
    """CUDA_DEVICE_MAX_CONNECTIONS below 4 (1, as some tensor-parallel frameworks set) is a warning
    with its fix; 8 passes; a warning alone does not fail the doctor."""
    code, found, _ = doctor(CUDA_DEVICE_MAX_CONNECTIONS="1")
    queues = found["hardware queues"]
    assert code == 0 and queues["status"] == "warn" and "CUDA_DEVICE_MAX_CONNECTIONS=1" in queues["found"]
    assert "4 or more" in queues["fix"]
    _, found, _ = doctor(CUDA_DEVICE_MAX_CONNECTIONS="eight")
    assert found["hardware queues"]["status"] == "warn" and "not a number" in found["hardware queues"]["found"]
    _, found, _ = doctor(CUDA_DEVICE_MAX_CONNECTIONS="8")
    assert found["hardware queues"]["status"] == "ok"


def test_info_names_the_network_backend(tmp_path):
    from cco_tools.info import network_backend

    os.environ.pop("CCO_NET", None)
    assert network_backend(str(tmp_path / "absent")) == "tcp (no RDMA device here)"
    (tmp_path / "mlx5_0").mkdir()
    assert "RDMA devices here: mlx5_0" in network_backend(str(tmp_path))
    os.environ["CCO_NET"] = "tcp"
    try:
        assert network_backend(str(tmp_path)) == "tcp (CCO_NET=tcp)"
        os.environ["CCO_NET"] = "verbs"
        assert "none: GDA across hosts will fail" in network_backend(str(tmp_path / "absent"))
        os.environ["CCO_NET"] = "ib"
        assert "invalid" in network_backend(str(tmp_path))
        # The library reads no MORI_ spelling of it (the guide has none), and neither does info.
        os.environ.pop("CCO_NET")
        os.environ["MORI_NET"] = "tcp"  # env-check: ignored on purpose
        assert network_backend(str(tmp_path / "absent")) == "tcp (no RDMA device here)"
    finally:
        os.environ.pop("CCO_NET", None)
        os.environ.pop("MORI_NET", None)  # env-check: ignored on purpose


def test_the_command_lists_its_subcommands():
    r = run_cco("-h")
    assert r.returncode == 0 and all(c in r.stdout for c in ("perf", "info", "doctor", "launch"))
