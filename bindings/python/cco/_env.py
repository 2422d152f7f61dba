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


def get(name, default=None):
    """The CCO_ variable if set, else its MORI_ alias, else default."""
    value = os.environ.get(name)
    if value is None and name in ALIASES:
        value = os.environ.get(ALIASES[name])
    return default if value is None else value


def flag(name):
    return get(name, "0").strip().lower() not in ("", "0", "false", "no", "off")
