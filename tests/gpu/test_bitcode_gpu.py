# SPDX-License-Identifier: MIT
"""The foundation's GPU check: a Triton kernel links the sm_90 bitcode, calls cco_lsa_ptr
and cco_devcomm_* on a window and a devcomm filled by hand in device memory (no host
SDK involved), writes through the computed pointers, and the host verifies every value."""

import ctypes
import struct

import torch

from cco.devcomm import DevCommStruct
from cco.device import ABI_VERSION, find_cco_bitcode

import kernels

SLICE = 1 << 20      # bytes between LSA ranks' slices of the fake flat range
WIN_OFFSET = 4096    # the window's start in every slice
LSA_SIZE, LSA_RANK, WORLD_BASE, WORLD = 4, 1, 4, 8
PEER = 3


def window_bytes(flat_base):
    # ccoWindowDevice: magic, abiVersion, flatBase, stride, offset, size, lsaRank, lsaSize,
    # rank, lsaWorldBase, id, reserved0, reserved[8] (abi/window.h)
    return struct.pack("<IIQQQQiiiiII8Q", 0x574F4343, ABI_VERSION, flat_base, SLICE, WIN_OFFSET, 65536, LSA_RANK,
                       LSA_SIZE, WORLD_BASE + LSA_RANK, WORLD_BASE, 1, 0, *([0] * 8))


def devcomm_bytes(abi_version=ABI_VERSION, abort_flag=0):
    dc = DevCommStruct()
    dc.magic, dc.abiVersion, dc.size = 0x444F4343, abi_version, ctypes.sizeof(DevCommStruct)
    dc.abortFlag = abort_flag
    dc.rank, dc.worldSize, dc.lsaRank, dc.lsaSize = WORLD_BASE + LSA_RANK, WORLD, LSA_RANK, LSA_SIZE
    dc.teamLsa.nRanks, dc.teamLsa.rank, dc.teamLsa.stride, dc.teamLsa.worldBase = LSA_SIZE, LSA_RANK, 1, WORLD_BASE
    return bytes(dc)


def to_device(data):
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).cuda()


def test_bitcode_on_hand_filled_structs():
    flat = torch.zeros(LSA_SIZE * SLICE // 4, dtype=torch.int32, device="cuda")
    win = to_device(window_bytes(flat.data_ptr()))
    dc = to_device(devcomm_bytes())
    out = torch.full((16,), -1, dtype=torch.int32, device="cuda")
    path = find_cco_bitcode(("cuda", 90))
    assert path.endswith("libcco_device-nvptx-sm_90-proxy.bc")
    kernels.every_function[(1,)](dc.data_ptr(), win.data_ptr(), out, peer=PEER, extern_libs={"cco": path})
    torch.cuda.synchronize()
    got = out.tolist()
    assert got[0] == ABI_VERSION             # cco_abi_version
    assert got[1:5] == [WORLD_BASE + LSA_RANK, WORLD, LSA_RANK, LSA_SIZE]
    assert got[5] == 0xC0FFEE                # read back through this rank's own pointer
    assert got[6] == 0xBEEF00 + LSA_RANK     # and through the peer's
    assert got[7] == 0                       # lsa_ptr of a non-member is 0
    assert got[8] == 1 and got[9] == 1 and got[10] == 0
    assert got[11:14] == [LSA_SIZE, WORLD_BASE + LSA_RANK, WORLD_BASE]  # Team.size / rank / world_rank
    assert got[14] == 0                      # no trace: clock 0, ranges OK
    words = flat.cpu()
    mine = (LSA_RANK * SLICE + WIN_OFFSET) // 4
    theirs = (PEER * SLICE + WIN_OFFSET + 64) // 4
    assert words[mine].item() == 0xC0FFEE and words[theirs].item() == 0xBEEF00 + LSA_RANK
    # Nothing else of the flat range was touched.
    assert int((words != 0).sum()) == 2


def test_every_function_refuses_handles_that_name_nothing():
    """Every device-communicator, window, LSA-barrier, GDA and SDMA function of the ABI, called
    with null handles, then with a device communicator of another ABI and a deregistered
    window's zeroed descriptor: each returns its refusal (a status, -1, 0), reads nothing
    through the null handle, and the kernel ends (a fault would fail the synchronise)."""
    path = find_cco_bitcode(("cuda", 90))
    raised = torch.ones(1, dtype=torch.int32, device="cuda")  # an abort flag that is set: not to be read
    other_abi = to_device(devcomm_bytes(abi_version=ABI_VERSION + 1, abort_flag=raised.data_ptr()))
    stale = torch.zeros(128, dtype=torch.uint8, device="cuda")
    for dc, win in ((0, 0), (other_abi.data_ptr(), stale.data_ptr())):
        out = torch.full((16,), 77, dtype=torch.int32, device="cuda")
        kernels.bad_handles[(1,)](dc, win, out, extern_libs={"cco": path})
        torch.cuda.synchronize()
        assert out.tolist()[:len(kernels.BAD_HANDLES_EXPECTED)] == kernels.BAD_HANDLES_EXPECTED, (dc, win)
        for family, kernel, count in (("gda", kernels.every_gda, kernels.EVERY_GDA_CALLS),
                                      ("sdma", kernels.every_sdma, kernels.EVERY_SDMA_CALLS)):
            out = torch.full((count,), 77, dtype=torch.int32, device="cuda")
            kernel[(1,)](dc, win, out, num_warps=1, extern_libs={"cco": path})
            torch.cuda.synchronize()
            functions = kernels.family_functions(family)
            assert len(functions) == count
            got = out.tolist()
            wrong = [(f["symbol"], got[i]) for i, f in enumerate(functions) if got[i] != kernels.refusal_of(f)]
            assert not wrong, (family, dc != 0, wrong)
