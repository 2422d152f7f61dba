# SPDX-License-Identifier: MIT
"""Environment variables: CCO_* names, with the guide's MORI_* spellings as aliases."""

import os

# CCO name -> the guide's alias.
ALIASES = {
    "CCO_SOCKET_IFNAME": "MORI_SOCKET_IFNAME",
    "CCO_DEVICE_BC": "MORI_CCO_BC",
    "CCO_DISABLE_JIT": "MORI_DISABLE_JIT",
    "CCO_IGNORE_CPU_AFFINITY": "MORI_IGNORE_CPU_AFFINITY",
    "CCO_CPU_AFFINITY_NO_SPLIT": "MORI_CPU_AFFINITY_NO_SPLIT",
    "CCO_RDMA_DEVICES": "MORI_RDMA_DEVICES",
    "CCO_RDMA_TC": "MORI_RDMA_TC",
    "CCO_RDMA_SL": "MORI_RDMA_SL",
    "CCO_ENABLE_SDMA": "MORI_ENABLE_SDMA",
}


# Every variable CCO reads (the host library, the package, its tools and launcher): `cco doctor`
# names set CCO_*/MORI_* variables that are not among them (a typo is otherwise silent), and
# tools/testing/env_names_check.py (run by .ci/run) fails where the sources read one missing here.
KNOWN = frozenset({
    # the host library
    "CCO_PLATFORM", "CCO_TIMEOUT_MS", "CCO_COPY_GRAPHS", "CCO_COPY_LANES", "CCO_PROXY_CONTEXT", "CCO_SOCKET_IFNAME",
    "CCO_HOSTID", "CCO_TRACE_PHASES",
    "CCO_IGNORE_CPU_AFFINITY", "CCO_CPU_AFFINITY_NO_SPLIT", "CCO_LOCAL_RANK", "CCO_ENABLE_SDMA",
    "CCO_TEST_NODES_PER_HOST", "CCO_TEST_RANKS_PER_HOST", "CCO_NET", "CCO_NET_TIMEOUT_MS", "CCO_TCP_CHUNK_BYTES",
    "CCO_TCP_ACK_DELAY_US", "CCO_TEST_LOSS_PAUSE_MS", "CCO_TEST_PROXY_NAP_MS",
    "CCO_TCP_STAGING_BYTES",
    "CCO_NET_REPLY_WAIT_US",
    "CCO_RDMA_DEVICES", "CCO_RDMA_TC", "CCO_RDMA_SL", "CCO_RDMA_GID_INDEX", "CCO_GDA_DIRECT_MAX_BYTES",
    "CCO_GDA_HOST_SIGNALS",
    "CCO_GDA_DIRECT_GROUP_MAX_BYTES", "CCO_GDA_TRACE", "CCO_TRACE", "CCO_TRACE_EVENTS",
    # the package: bitcode lookup and its JIT build, the library's path
    "CCO_DEVICE_BC", "CCO_DISABLE_JIT", "CCO_NIC", "CCO_JIT_CACHE", "CCO_CACHE", "CCO_LIBRARY", "CCO_CLANG",
    "CCO_CLANG22", "CCO_OPT", "CCO_OPT22",
    # cco.launch hands these to each rank; cco perf's own
    "CCO_RANK", "CCO_WORLD_SIZE", "CCO_UNIQUE_ID", "CCO_PERF_UIDS", "CCO_PERF_WINDOW",
    "CCO_PERF_OPS_TOKENS", "CCO_PERF_OPS_REPS", "CCO_PERF_OPS_NCCL", "CCO_PERF_OPS_TRANSPORTS",
    # read by examples only (examples/flydsl/03_put.py, examples/python/quick_reference.py)
    "CCO_GDA_CONN", "CCO_BCAST_DIR",
    # the repository's build and test scripts
    "CCO_PYTHON", "CCO_STAGE", "CCO_TEST_ID_FILE", "CCO_LLVM22_BIN", "CCO_NET_RANK_BIN", "CCO_TEST_OPS_DTYPES",
} | set(ALIASES.values()) | {"MORI_CCO_GDA_CONN"})


def get(name, default=None):
    """The CCO_ variable if set, else its MORI_ alias, else default."""
    value = os.environ.get(name)
    if value is None and name in ALIASES:
        value = os.environ.get(ALIASES[name])
    return default if value is None else value


ON, OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def flag(name):
    """An on/off variable, as the library reads them; anything else is an error naming it
    (garbage read as on, silently)."""
    value = get(name, "0").strip().lower()
    if value not in ON + OFF:
        raise ValueError(f"{name}={get(name)!r} is neither on (1, true, yes, on) nor off (0, false, no, off)")
    return value in ON
