# SPDX-License-Identifier: MIT
"""CCO's launcher, `cco launch` and `python -m cco.launch`: ranks that find each other, output
led by the rank, the failed rank named with its exit status, signals forwarded to the ranks."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

ENV = dict(os.environ, CCO_PLATFORM="cpu", CCO_TIMEOUT_MS="20000")
LAUNCHERS = {"cco launch": [sys.executable, "-m", "cco_tools", "launch"],
             "python -m cco.launch": [sys.executable, "-m", "cco.launch"]}


def launch(*args, launcher="cco launch", env=None, timeout=120):
    return subprocess.run(LAUNCHERS[launcher] + list(args), env=env or ENV, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_launcher_runs_ranks_and_reports_failure(tmp_path, launcher):
    script = tmp_path / "ranks.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        from cco import Communicator
        rank, world = int(os.environ["CCO_RANK"]), int(os.environ["CCO_WORLD_SIZE"])
        uid = bytes.fromhex(os.environ["CCO_UNIQUE_ID"])
        with Communicator.init(world, rank, uid, per_rank_vmm=1 << 24) as comm:
            comm.barrier()
            print(f"rank {comm.rank} of {comm.world_size}")
        sys.exit(int(os.environ.get("FAIL_RANK", "-1")) == rank)
    """))
    r = launch("-n", "3", str(script), launcher=launcher)
    assert r.returncode == 0, r.stderr
    assert sorted(re.findall(r"rank (\d) of 3", r.stdout)) == ["0", "1", "2"]
    # Each line led by the rank that printed it.
    assert sorted(r.stdout.splitlines()) == [f"[rank {k}] rank {k} of 3" for k in range(3)]
    r = launch("-n", "2", str(script), launcher=launcher, env=dict(ENV, FAIL_RANK="1"))
    assert r.returncode == 1
    assert "rank 1 failed first (exit 1)" in r.stderr, r.stderr


def test_launch_stops_the_others_when_a_later_rank_fails(tmp_path):
    """Rank 1 fails at once while rank 0 would run for a minute: the launcher stops rank 0
    and returns rank 1's status within seconds (it polled only up to the first running rank,
    so it waited for rank 0)."""
    script = tmp_path / "late_failure.py"
    script.write_text("import os, sys, time\n"
                      "if os.environ['CCO_RANK'] == '1':\n    sys.exit(3)\n"
                      "time.sleep(60)\n")
    start = time.monotonic()
    r = launch("-n", "2", str(script), launcher="python -m cco.launch")
    assert r.returncode == 3, r.stderr
    assert time.monotonic() - start < 20
    assert "cco launch: rank 1 failed first (exit 3); the other ranks were stopped" in r.stderr


def test_one_rank_is_one_rank(tmp_path):
    script = tmp_path / "who.py"
    script.write_text("import os\nprint('rank', os.environ['CCO_RANK'], 'of', os.environ['CCO_WORLD_SIZE'])\n")
    r = launch("-n", "1", str(script))
    assert r.returncode == 0 and r.stdout == "[rank 0] rank 0 of 1\n", r.stdout + r.stderr


def test_ranks_under_mps_get_hardware_queues_of_their_own(tmp_path):
    """Under MPS (its pipe directory named) the ranks get CUDA_DEVICE_MAX_CONNECTIONS (8 each up to
    8 ranks, 4 beyond: MPS clients share one pool) unless it is set; without MPS, nothing."""
    script = tmp_path / "connections.py"
    script.write_text("import os\nprint(os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS', 'unset'))\n")
    base = {k: v for k, v in ENV.items() if k not in ("CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MPS_PIPE_DIRECTORY")}
    mps = dict(base, CUDA_MPS_PIPE_DIRECTORY=str(tmp_path))
    for env, n, want in ((mps, 2, "8"), (mps, 9, "4"), (dict(mps, CUDA_DEVICE_MAX_CONNECTIONS="2"), 2, "2")):
        r = launch("-n", str(n), str(script), env=env)
        assert r.returncode == 0 and sorted(r.stdout.splitlines()) == sorted(f"[rank {k}] {want}" for k in range(n)), (
            n, r.stdout + r.stderr)
    # The ranks' environment decides, as `start(env=...)` gives it (cco perf's rank processes).
    from cco.runtime import mps_connections

    assert mps_connections({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)}, 2) == "8"
    if not os.path.exists("/tmp/nvidia-mps/control"):  # no MPS daemon on this machine
        r = launch("-n", "2", str(script), env=base)
        assert r.returncode == 0 and sorted(r.stdout.splitlines()) == ["[rank 0] unset", "[rank 1] unset"], r.stdout


def test_bootstrap_under_mps_sets_the_queues_before_the_gpu(tmp_path):
    """cco.runtime.bootstrap() under MPS, the variable unset: 8 for a lone process (or an
    unreadable LOCAL_WORLD_SIZE), 4 where torchrun says 12 ranks share the host; one set stays."""
    script = tmp_path / "boot.py"
    script.write_text("import os\nfrom cco.runtime import bootstrap\nbootstrap()\n"
                      "print(os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS', 'unset'))\n")
    base = {k: v for k, v in ENV.items() if k not in ("CUDA_DEVICE_MAX_CONNECTIONS", "LOCAL_WORLD_SIZE")}
    mps = dict(base, CUDA_MPS_PIPE_DIRECTORY=str(tmp_path))
    for extra, want in (({}, "8"), ({"LOCAL_WORLD_SIZE": "x"}, "8"), ({"LOCAL_WORLD_SIZE": "12"}, "4"),
                        ({"CUDA_DEVICE_MAX_CONNECTIONS": "16"}, "16")):
        r = subprocess.run([sys.executable, str(script)], env=dict(mps, **extra), capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == want, (extra, r.stdout + r.stderr)


def test_no_prefix_passes_the_output_as_printed(tmp_path):
    script = tmp_path / "json.py"
    script.write_text("import os\nif os.environ['CCO_RANK'] == '0':\n    print('{\"a\": 1}')\n")
    r = launch("-n", "2", "--no-prefix", str(script))
    assert r.returncode == 0 and r.stdout == '{"a": 1}\n', r.stdout + r.stderr


def test_a_rank_killed_by_a_signal_gives_128_plus_it(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text("import os, signal, time\n"
                      "if os.environ['CCO_RANK'] == '1':\n    os.kill(os.getpid(), signal.SIGKILL)\n"
                      "time.sleep(60)\n")
    r = launch("-n", "2", str(script))
    assert r.returncode == 128 + signal.SIGKILL and "rank 1 failed first (exit 137)" in r.stderr, r.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_launcher_reaches_every_rank(tmp_path, signum):
    """SIGTERM (or SIGINT) sent to the launcher alone: every rank gets it and ends, and the
    launcher exits 128 + the signal, instead of leaving its ranks running."""
    script = tmp_path / "wait.py"
    script.write_text(textwrap.dedent("""
        import os, signal, sys, time
        rank = os.environ["CCO_RANK"]
        def bye(signum, frame):
            print(f"rank {rank} got {signal.Signals(signum).name}", flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, bye)
        signal.signal(signal.SIGINT, bye)
        # Written whole, then named: the test reads a pid file as soon as it is there.
        with open(os.path.join(sys.argv[1], f".pid{rank}"), "w") as f:
            f.write(str(os.getpid()))
        os.replace(os.path.join(sys.argv[1], f".pid{rank}"), os.path.join(sys.argv[1], f"pid{rank}"))
        time.sleep(60)
    """))
    launcher = subprocess.Popen(LAUNCHERS["cco launch"] + ["-n", "3", str(script), str(tmp_path)], env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("pid*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [int((tmp_path / f"pid{k}").read_text()) for k in range(3)]
    time.sleep(0.2)  # the ranks' handlers are in place (they wrote their pid after)
    launcher.send_signal(signum)
    out, err = launcher.communicate(timeout=30)
    assert launcher.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert sorted(out.splitlines()) == [f"[rank {k}] rank {k} got {name}" for k in range(3)], out + err
    for pid in pids:  # none left running
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_cco_launch_is_python_m_cco_launch():
    r = launch("-h")
    assert r.returncode == 0 and r.stdout.startswith("usage: cco launch") and "--no-prefix" in r.stdout
    r = launch("-h", launcher="python -m cco.launch")
    assert r.returncode == 0 and r.stdout.startswith("usage: python -m cco.launch")
