# SPDX-License-Identifier: MIT
"""CCODevCommRequirements: what create_dev_comm should provide, as the C struct itself.

The object is a ctypes mirror of ccoDevCommRequirements, so create_dev_comm hands the
library a pointer to it without copying. A fresh one holds what
CCO_DEV_COMM_REQUIREMENTS_INITIALIZER holds, header included: the library rejects a
struct whose size, magic or version is wrong, so there is no way to build an
uninitialised one from Python.
"""

import ctypes
import operator

from cco import _abi

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _int_field(c_name, doc):
    """A snake_case property over the int field `c_name`, refusing what would not fit.

    ctypes would silently truncate an out-of-range int; a requirement that quietly
    changes value is worse than an error.
    """

    def get(self):
        return getattr(self, c_name)

    def set_(self, value):
        value = operator.index(value)
        if not _INT32_MIN <= value <= _INT32_MAX:
            raise ValueError(f"{c_name}={value} does not fit in a C int")
        setattr(self, c_name, value)

    return property(get, set_, doc=doc)


class CCODevCommRequirements(ctypes.Structure):
    """Requirements for Communicator.create_dev_comm; defaults are the C initializer's.

    Set fields by attribute (reqs.lsa_barrier_count = 1) or as keywords
    (CCODevCommRequirements(lsa_barrier_count=1)).
    """

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("magic", ctypes.c_uint32),
        ("version", ctypes.c_uint32),
        ("gdaConnectionType", ctypes.c_int),
        ("gdaContextCount", ctypes.c_int),
        ("gdaSignalCount", ctypes.c_int),
        ("gdaCounterCount", ctypes.c_int),
        ("lsaBarrierCount", ctypes.c_int),
        ("sdmaQueueCount", ctypes.c_int),
        ("gdaBarrierCount", ctypes.c_int),
        ("gdaDirectMaxBytes", ctypes.c_int),
        ("gdaDirectGroupMaxBytes", ctypes.c_int),
    ]

    gda_connection_type = _int_field(
        "gdaConnectionType", "GDA_CONNECTION_NONE / CROSSNODE / FULL / RAIL: which peers get GDA connections")
    gda_context_count = _int_field("gdaContextCount", "GDA contexts (queue sets)")
    gda_signal_count = _int_field("gdaSignalCount", "GDA signal slots (completion signalling)")
    gda_counter_count = _int_field("gdaCounterCount", "GDA counter slots (local completion)")
    lsa_barrier_count = _int_field("lsaBarrierCount", "intra-node (LSA) barriers")
    sdma_queue_count = _int_field("sdmaQueueCount", "SDMA queues (0 = default)")
    gda_barrier_count = _int_field("gdaBarrierCount", "GDA barriers, among the GDA team")
    gda_direct_max_bytes = _int_field(
        "gdaDirectMaxBytes", "GDA to LSA peers: signal, put_value and puts up to this many bytes by the device's own "
                             "stores when the ring is idle (a lone thread's copy); 0: always the proxy; -1: "
                             "CCO_GDA_DIRECT_MAX_BYTES, else 4096 (0 on hip)")
    gda_direct_group_max_bytes = _int_field(
        "gdaDirectGroupMaxBytes", "the same for a put or get whose copy a warp or block shares (the larger bound "
                                  "applies; none while gda_direct_max_bytes is 0); -1: "
                                  "CCO_GDA_DIRECT_GROUP_MAX_BYTES, else 65536 (0 on hip)")

    # The settable fields, in struct order (the header is not the user's to change).
    FIELDS = (
        "gda_connection_type",
        "gda_context_count",
        "gda_signal_count",
        "gda_counter_count",
        "lsa_barrier_count",
        "sdma_queue_count",
        "gda_barrier_count",
        "gda_direct_max_bytes",
        "gda_direct_group_max_bytes",
    )

    def __init__(self, **fields):
        # Positional order is the C initializer's: header, then CROSSNODE, 4, 16, 16, 0, 0, 1, -1, -1.
        super().__init__(
            ctypes.sizeof(CCODevCommRequirements),
            _abi.DEV_COMM_REQUIREMENTS_MAGIC,
            _abi.ABI_VERSION,
            _abi.GDA_CONNECTION_CROSSNODE,
            4,
            16,
            16,
            0,
            0,
            1,
            -1,
            -1,
        )
        unknown = sorted(set(fields) - set(self.FIELDS))
        if unknown:
            raise TypeError(
                f"CCODevCommRequirements has no field {', '.join(unknown)}; fields: {', '.join(self.FIELDS)}")
        for name, value in fields.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        # A misspelt field (reqs.lsa_barriers = 1) would otherwise be a silent no-op.
        if not hasattr(type(self), name):
            raise AttributeError(f"CCODevCommRequirements has no field {name!r}; fields: {', '.join(self.FIELDS)}")
        super().__setattr__(name, value)

    def __repr__(self):
        body = ", ".join(f"{name}={getattr(self, name)}" for name in self.FIELDS)
        return f"CCODevCommRequirements({body})"
