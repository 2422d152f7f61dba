# SPDX-License-Identifier: MIT
"""The device communicator: a ctypes mirror of ccoDevComm and the handle around it.

ccoDevCommCreate fills a ccoDevComm in host memory; kernels take it by value (C++) or
take its `ptr` field, the device address of the library's copy (DSL kernels). The
layout is ABI: it is checked here at import, so a mismatch with abi/devcomm.h stops
the import instead of handing kernels shifted fields.
"""

import ctypes

from cco import _abi


class TeamStruct(ctypes.Structure):
    """ccoTeam: member i has world rank worldBase + i * stride; rank -1 = not a member."""

    _fields_ = [
        ("nRanks", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("stride", ctypes.c_int32),
        ("worldBase", ctypes.c_int32),
    ]


class DevCommStruct(ctypes.Structure):
    """ccoDevComm, field for field (abi/devcomm.h)."""

    _fields_ = [
        # header
        ("magic", ctypes.c_uint32),
        ("abiVersion", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("ptr", ctypes.c_uint64),
        # topology
        ("rank", ctypes.c_int32),
        ("worldSize", ctypes.c_int32),
        ("lsaRank", ctypes.c_int32),
        ("lsaSize", ctypes.c_int32),
        ("node", ctypes.c_int32),
        ("nNodes", ctypes.c_int32),
        ("teamWorld", TeamStruct),
        ("teamLsa", TeamStruct),
        ("teamRail", TeamStruct),
        # symmetric memory
        ("lsaFlatBase", ctypes.c_uint64),
        ("lsaStride", ctypes.c_uint64),
        # this devcomm's resources: resourceSize bytes at resourceOffset, inside window resourceWindow
        ("resourceWindow", ctypes.c_uint64),
        ("resourceOffset", ctypes.c_uint64),
        ("resourceSize", ctypes.c_uint64),
        ("abortFlag", ctypes.c_uint64),
        # LSA barriers
        ("lsaBarrierCount", ctypes.c_uint32),
        ("lsaBarrierEpochOffset", ctypes.c_uint32),
        ("lsaBarrierInboxOffset", ctypes.c_uint32),
        ("hostSerial", ctypes.c_uint32),
        # GDA and SDMA
        ("gdaConnectionType", ctypes.c_uint32),
        ("gdaContextCount", ctypes.c_uint32),
        ("gdaSignalCount", ctypes.c_uint32),
        ("gdaCounterCount", ctypes.c_uint32),
        ("gdaBarrierCount", ctypes.c_uint32),
        ("gdaShadowOffset", ctypes.c_uint32),
        ("gdaFlushOffset", ctypes.c_uint32),
        ("sdmaQueueCount", ctypes.c_uint32),
        # GDA rings, signals and counters
        ("gdaRingSlots", ctypes.c_uint64),
        ("gdaRingHost", ctypes.c_uint64),
        ("gdaRingDevice", ctypes.c_uint64),
        ("gdaSignals", ctypes.c_uint64),
        ("gdaCounters", ctypes.c_uint64),
        ("gdaRingDepth", ctypes.c_uint32),
        ("gdaPeerCount", ctypes.c_int32),
        ("gdaUniformNodes", ctypes.c_int32),
        ("gdaDirectMaxBytes", ctypes.c_uint32),
        ("gdaDirectGroupMaxBytes", ctypes.c_uint32),
        ("waitTimeoutMs", ctypes.c_uint32),  # every device wait's bound unless the call gives one
        # SDMA rings and signal pools
        ("sdmaRingSlots", ctypes.c_uint64),
        ("sdmaRingHost", ctypes.c_uint64),
        ("sdmaRingDevice", ctypes.c_uint64),
        ("sdmaSignals", ctypes.c_uint64),
        ("sdmaLocal", ctypes.c_uint64),
        ("sdmaRingDepth", ctypes.c_uint32),
        ("sdmaShadowOffset", ctypes.c_uint32),
        ("trace", ctypes.c_uint64),  # the device-side trace's buffer (abi/trace.h), 0: not traced
        ("hostBell", ctypes.c_uint64),  # the cpu platform's bell (abi/devcomm.h), 0 elsewhere
        ("gdaHostSignals", ctypes.c_uint64),  # host signal words (abi/gda.h), 0: none
    ]


def _check_layout():
    """The static asserts of abi/devcomm.h that matter most, repeated for the mirror."""
    expected_offsets = {"ptr": 16, "lsaRank": 32, "lsaFlatBase": 96, "abortFlag": 136, "lsaBarrierCount": 144,
                        "gdaRingSlots": 192, "gdaSignals": 216, "gdaRingDepth": 232, "sdmaRingSlots": 256,
                        "sdmaSignals": 280, "sdmaRingDepth": 296, "trace": 304,
                        "gdaHostSignals": 320}
    actual = {name: getattr(DevCommStruct, name).offset for name in expected_offsets}
    if ctypes.sizeof(TeamStruct) != 16 or ctypes.sizeof(DevCommStruct) != 328 or actual != expected_offsets:
        raise ImportError(
            f"cco.devcomm: the ctypes mirror of ccoDevComm does not match abi/devcomm.h "
            f"(size {ctypes.sizeof(DevCommStruct)}, expected 328; offsets {actual}, expected {expected_offsets})")


_check_layout()


class DevCommHandle:
    """A device communicator made by Communicator.create_dev_comm.

    Pass `ptr` to DSL kernels and `struct` (by value) to C++ kernels. The handle keeps
    the struct because ccoDevCommDestroy takes it back; destroying clears its magic, so
    `alive` tells a live handle from a destroyed one.
    """

    def __init__(self, struct: DevCommStruct):
        self.struct = struct

    @property
    def ptr(self) -> int:
        """Device address of the library's copy of the struct (what DSL kernels get as dc)."""
        return self.struct.ptr

    @property
    def rank(self) -> int:
        return self.struct.rank

    @property
    def world_size(self) -> int:
        return self.struct.worldSize

    @property
    def lsa_rank(self) -> int:
        return self.struct.lsaRank

    @property
    def lsa_size(self) -> int:
        return self.struct.lsaSize

    @property
    def traced(self) -> bool:
        """Whether the device-side trace records this device communicator's calls (CCO_TRACE
        was set when it was made; Communicator.trace_flush writes them out)."""
        return self.struct.trace != 0

    @property
    def alive(self) -> bool:
        return self.struct.magic == _abi.DEV_COMM_MAGIC

    def __repr__(self):
        state = "" if self.alive else ", destroyed"
        return (f"<cco.DevCommHandle ptr=0x{self.ptr:x} rank={self.rank}/{self.world_size} "
                f"lsa_rank={self.lsa_rank}/{self.lsa_size}{state}>")
