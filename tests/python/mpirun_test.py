# SPDX-License-Identifier: MIT
"""Ranks launched by mpirun (Debian's Open MPI, with Debian's python3-mpi4py), as the guide
launches them: the id travels over MPI (mpi4py's bcast), each process is one rank on the cpu
platform. Debian's mpi4py belongs to Debian's python3, which runs the ranks. As root (CI),
Open MPI needs --allow-run-as-root."""

import os
import shutil
import subprocess

import pytest

PYTHON = "/usr/bin/python3"  # Debian's, which python3-mpi4py installs into


@pytest.fixture(scope="module")
def mpirun():
    found = shutil.which("mpirun")
    if found is None or subprocess.run([PYTHON, "-c", "import mpi4py"], capture_output=True).returncode != 0:
        pytest.fail("mpirun or mpi4py missing: run tools/setup (apt: openmpi-bin python3-mpi4py)")
    return found


def run(mpirun, ranks, script, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CCO_", "OMPI_", "PMI"))}
    env.update(CCO_PLATFORM="cpu", CCO_TIMEOUT_MS="30000", PYTHONPATH=os.path.abspath("bindings/python"),
               TMPDIR=str(tmp_path), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl="self,tcp", OMPI_MCA_btl_tcp_if_include="lo")
    command = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), PYTHON, script]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("ranks", [2, 3])
def test_barrier_example_under_mpirun(mpirun, ranks, tmp_path):
    r = run(mpirun, ranks, "examples/python/01_barrier.py", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(ranks):
        assert f"rank {rank}/{ranks}: 10 barriers" in r.stdout, r.stdout + r.stderr


def test_quick_reference_under_mpirun(mpirun, tmp_path):
    r = run(mpirun, 2, "examples/python/quick_reference.py", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(2):
        assert f"rank {rank} of 2: quick reference done" in r.stdout, r.stdout + r.stderr
