"""The public headers: where each lies in the wheel (under cco/_data/include) and its Bazel source.

The wheel ships them, and //tests/compile compiles them all together as CUDA and as HIP."""

PUBLIC_HEADERS = {
    "cco/cco.h": "//host:include/cco/cco.h",
    "abi/cco_abi.h": "//abi:cco_abi.h",
    "abi/devcomm.h": "//abi:devcomm.h",
    "abi/enums.h": "//abi:enums.h",
    "abi/version.h": "//abi:version.h",
    "abi/window.h": "//abi:window.h",
    "abi/gda.h": "//abi:gda.h",
    "abi/sdma.h": "//abi:sdma.h",
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
    "gda_ring.hpp",
    "group_waits.hpp",
    "handles.hpp",
    "lsa.hpp",
    "lsa_barrier.hpp",
    "sdma.hpp",
    "team.hpp",
    "arch/amdgcn.h",
    "arch/arch.h",
    "arch/host.h",
    "arch/memory_order.h",
    "arch/nvptx.h",
]})
