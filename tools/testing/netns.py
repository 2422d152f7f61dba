# SPDX-License-Identifier: MIT
"""Network namespaces as hosts, for the tcp backend's tests and benchmark: `count` namespaces
joined by veth pairs to a bridge in a namespace of its own; host k has address
10.213.0.(k+1)/24 on its interface `cco0`. Addresses exist only inside these namespaces.
Needs root and iproute2; `available()` says whether this machine can make them."""

import os
import shutil
import subprocess

SUBNET = "10.213.0"


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=30)


def available():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    probe = f"c{os.getpid() % 100000}probe"
    ok = subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return ok


class Hosts:
    def __init__(self, count):
        tag = f"c{os.getpid() % 100000}"
        self.switch = f"{tag}sw"
        self.names = [f"{tag}h{k}" for k in range(count)]
        self.made = []
        try:
            sh("ip", "netns", "add", self.switch)
            self.made.append(self.switch)
            sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
            sh("ip", "-n", self.switch, "link", "set", "br0", "up")
            for k, ns in enumerate(self.names):
                sh("ip", "netns", "add", ns)
                self.made.append(ns)
                sh("ip", "link", "add", "cco0", "netns", ns, "type", "veth", "peer", "name", f"p{k}", "netns",
                   self.switch)
                sh("ip", "-n", self.switch, "link", "set", f"p{k}", "master", "br0")
                sh("ip", "-n", self.switch, "link", "set", f"p{k}", "up")
                sh("ip", "-n", ns, "addr", "add", f"{self.address(k)}/24", "dev", "cco0")
                sh("ip", "-n", ns, "link", "set", "cco0", "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.remove()
            raise

    @staticmethod
    def address(k):
        return f"{SUBNET}.{k + 1}"

    def remove(self):
        for ns in self.made:
            sh("ip", "netns", "del", ns, check=False)
        self.made = []

    def command(self, k, argv):
        """argv run inside host k's namespace."""
        return ["ip", "netns", "exec", self.names[k]] + list(argv)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False
