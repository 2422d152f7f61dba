# SPDX-License-Identifier: MIT
"""The public headers: what the wheel installs under cco/_data/include (its path there -> the
label of the file), what //tests/host:public_headers_test includes in one translation unit, and
what //tests/compile compiles together as CUDA and as HIP.
"""

PUBLIC_HEADERS = {
    "cco/cco.h": "//host:include/cco/cco.h",
    "abi/cco_abi.h": "//abi:cco_abi.h",
    "abi/devcomm.h": "//abi:devcomm.h",
    "abi/enums.h": "//abi:enums.h",
    "abi/version.h": "//abi:version.h",
    "abi/window.h": "//abi:window.h",
    "abi/gda.h": "//abi:gda.h",
    "abi/ring.h": "//abi:ring.h",
    "abi/sdma.h": "//abi:sdma.h",
    "abi/trace.h": "//abi:trace.h",
    "device/cco_device_abi.h": "//device:wrappers/cco_device_abi.h",
    # The C++ device API (header-only) and the guide's header pair over it.
    "cco/cco.hpp": "//host:include/cco/cco.hpp",
    "cco/cco_scale_out.hpp": "//host:include/cco/cco_scale_out.hpp",
}

PUBLIC_HEADERS.update({"device/%s" % h: "//device:%s" % h for h in [
    "cco_device.hpp",
    "coop.hpp",
    "gda.hpp",
    "gda_direct.hpp",
    "group_waits.hpp",
    "handles.hpp",
    "impl/gda__funcs.hpp",
    "impl/gda__types.hpp",
    "lsa.hpp",
    "lsa_barrier.hpp",
    "ring.hpp",
    "sdma.hpp",
    "spin_wait.hpp",
    "team.hpp",
    "trace.hpp",
    "arch/amdgcn.h",
    "arch/arch.h",
    "arch/host.h",
    "arch/memory_order.h",
    "arch/nvptx.h",
]})

# Picked by device/arch/arch.h for the target it compiles for; never included on their own.
TARGET_ONLY_HEADERS = ["device/arch/amdgcn.h", "device/arch/host.h", "device/arch/nvptx.h"]
