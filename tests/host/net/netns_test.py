# SPDX-License-Identifier: MIT
"""GDA across hosts through the tcp backend: every "host" is a network namespace this test
creates (joined to the others by veth pairs on a bridge in a namespace of its own, with
addresses assigned inside those namespaces only), its ranks processes on the cpu platform
with CCO_HOSTID set, so that ranks in different namespaces are on different hosts and only
tcp can join them. Everything is torn down in a finalizer; every wait is bounded.

Needs root (namespaces): skips with a message where they cannot be created.
"""

import os
import select
import subprocess
import sys
import time

import pytest

RANK = os.environ.get("CCO_NET_RANK_BIN") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "gda_net_rank")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools", "testing"))
import netns  # noqa: E402
from netns import Hosts, sh  # noqa: E402

needs_netns = pytest.mark.skipif(not netns.available(), reason="network namespaces need root and iproute2 here")


def rdma_devices():
    try:
        return sorted(os.listdir("/sys/class/infiniband"))
    except OSError:
        return []


class Loopback:
    """Hosts that are only host ids: every rank on this machine's loopback."""

    def __init__(self, count):
        self.names = [f"host{k}" for k in range(count)]

    def command(self, k, argv):
        return list(argv)


@pytest.fixture
def hosts_of(request):
    made = []

    def make(count):
        h = Hosts(count)
        made.append(h)
        return h

    yield make
    for h in made:
        h.remove()


def launch(hosts, ranks_per_host, mode_args, extra_env=None, tmp=None):
    """Starts ranks host by host (rank r on host r // ranks_per_host); returns the processes."""
    n = len(hosts.names) * ranks_per_host
    id_file = os.path.join(tmp, "unique_id")
    procs = []
    for r in range(n):
        env = dict(os.environ)
        env.update({
            "CCO_PLATFORM": "cpu",
            "CCO_HOSTID": f"host{r // ranks_per_host}",
            "CCO_SOCKET_IFNAME": "=cco0",
            "CCO_TIMEOUT_MS": "20000",
            "CCO_TEST_ID_FILE": id_file,
        })
        env.pop("CCO_NET", None)
        env.pop("CCO_TEST_NODES_PER_HOST", None)
        env.update(extra_env or {})
        argv = hosts.command(r // ranks_per_host, [RANK, mode_args[0], str(r), str(n)] + mode_args[1:])
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs


def finish(procs, timeout):
    """Waits for every rank (killing stragglers at the deadline); returns [(rc, out, err)]."""
    deadline = time.monotonic() + timeout
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            results.append((None, out, err))
            continue
        results.append((p.returncode, out, err))
    return results


def assert_all_pass(results):
    for r, (rc, out, err) in enumerate(results):
        assert rc == 0, f"rank {r} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
        assert f"rank {r}: PASS" in out


@needs_netns
@pytest.mark.parametrize("host_count,ranks_per_host", [(2, 1), (2, 2), (3, 2), (4, 1)])
def test_matrix_across_hosts(hosts_of, host_count, ranks_per_host, tmp_path):
    """Bootstrap and the full GDA matrix (FULL, CROSSNODE, RAIL x every mode, op, signal and
    coop) across namespaces, with exact data and signal values."""
    hosts = hosts_of(host_count)
    assert_all_pass(finish(launch(hosts, ranks_per_host, ["matrix"], tmp=str(tmp_path)), timeout=240))


@needs_netns
def test_large_puts_through_a_throttled_link(hosts_of, tmp_path):
    """A 200 Mbit/s token bucket on one host's link: 24 MiB puts (24 chunks each) pipeline through
    it with back-pressure on every stage, and every byte arrives."""
    hosts = hosts_of(3)
    sh("ip", "netns", "exec", hosts.names[0], "tc", "qdisc", "add", "dev", "cco0", "root", "tbf", "rate", "200mbit",
       "burst", "64kb", "latency", "100ms")
    start = time.monotonic()
    results = finish(launch(hosts, 1, ["bulk", str(24 << 20), "2"], tmp=str(tmp_path)), timeout=240)
    assert_all_pass(results)
    # 2 rounds x 24 MiB out of host 0 at 200 Mbit/s take about 2 s: the limit was in force.
    assert time.monotonic() - start > 1.5


def wait_ready(proc, timeout):
    """Whether the process printed its first line ("ready") within timeout seconds."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return bool(ready) and proc.stdout.readline().strip() == "ready"


@needs_netns
@pytest.mark.parametrize("how", ["kill", "link_down"])
def test_lost_peer_fails_in_bounded_time(hosts_of, how, tmp_path):
    """Rank 2 (alone on host 2) is killed with SIGKILL, or its link is cut: ranks 0 and 1,
    putting to it, get an error naming rank 2 within the network bound, and exit."""
    hosts = hosts_of(3)
    env = {"CCO_NET_TIMEOUT_MS": "2000", "CCO_TIMEOUT_MS": "5000"}
    procs = launch(hosts, 1, ["dead", "2"], extra_env=env, tmp=str(tmp_path))
    victim = procs[2]
    try:
        assert wait_ready(victim, 60), "the victim never got ready: " + victim.stderr.read()
        time.sleep(0.5)  # the survivors' puts are flowing
        if how == "kill":
            victim.kill()
        else:
            sh("ip", "-n", hosts.names[2], "link", "set", "cco0", "down")
        results = finish(procs[:2], timeout=60)
    finally:
        victim.kill()
        victim.communicate()
    for r, (rc, out, err) in enumerate(results):
        print(out)  # how long the loss took to surface, and the message
        assert rc == 0, f"rank {r} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
        assert "rank 2" in out


def test_posts_while_the_proxy_stands_aside_are_served(tmp_path):
    """Two host ids on loopback: a thread that posts and never waits, while its proxy's thread
    stands aside for another thread's waits and then serves alone; with the proxy's naps at 30 s,
    a post or an ack that waited for a nap's end would miss the poster's 5 s deadline."""
    env = {"CCO_SOCKET_IFNAME": "=lo", "CCO_TEST_PROXY_NAP_MS": "30000"}
    results = finish(launch(Loopback(2), 1, ["aside", "4000"], extra_env=env, tmp=str(tmp_path)), timeout=120)
    assert_all_pass(results)
    assert "4000 of 4000 posts served" in results[0][1]


@pytest.mark.skipif(not rdma_devices(), reason="no RDMA device here: the verbs backend has never run on a NIC")
def test_matrix_over_verbs(tmp_path):
    """Where this machine has an RDMA device: two "hosts" on it (host ids only), the matrix
    through the verbs backend (CCO_NET=verbs: no fallback to tcp)."""
    results = finish(launch(Loopback(2), 1, ["matrix"], extra_env={"CCO_NET": "verbs", "CCO_SOCKET_IFNAME": "=lo"},
                            tmp=str(tmp_path)), timeout=240)
    assert_all_pass(results)
