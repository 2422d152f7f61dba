# SPDX-License-Identifier: MIT
"""The bitcode matrix: every (arch, NIC provider, code-object version) CCO ships.

Adding an arch or a NIC provider is one line here; the ABI table's target list, the
bitcode rules, the manifest and the tests all read this file. How each variant is compiled:
device/bitcode_flags.bzl.
"""

load(":bitcode_flags.bzl", "FLYDSL_CODE_OBJECT_VERSION", "LLVM22_ARCHS")

# arch -> the arch clang-19 compiles for. LLVM 19 knows neither sm_100 nor gfx950; their
# variants are compiled for the nearest older arch (CCO's device code uses no instruction
# newer than sm_70 / gfx90a) and checked by code generation with llc-22 and by Triton's
# AOT compiler linking them into kernels for the real arch. FlyDSL's variants (code-object
# version 6) are the exception: FlyDSL's LLVM inlines a function only into a kernel of the
# chip it was built for, so they are built for their real arch, by clang-22 where clang-19
# lacks it (FlyDSL's LLVM reads clang-22's bitcode; Triton never links a cov6 variant).
NVPTX_ARCHS = {
    "sm_90": "sm_90",
    "sm_100": "sm_90",
}
AMDGCN_ARCHS = {
    "gfx942": "gfx942",
    "gfx950": "gfx942",
}

# NIC providers (compile-time). `proxy`: the device posts descriptors, a host thread moves
# the bytes; works on any NIC or none.
NICS = ["proxy"]

# AMD code-object versions: Triton links version 5, FlyDSL version 6.
AMDGCN_CODE_OBJECT_VERSIONS = ["5", FLYDSL_CODE_OBJECT_VERSION]

def variant_llvm(clang_arch):
    """The LLVM whose clang and opt build a variant: 22 for the archs LLVM 19 lacks."""
    return "22" if clang_arch in LLVM22_ARCHS else "19"

def variant_hosted(cov):
    """Whether a variant is compiled without -ffreestanding: FlyDSL's (device/bitcode_flags.bzl).
    (Triton inlines either way; its variants stay freestanding.)"""
    return cov == FLYDSL_CODE_OBJECT_VERSION

def cco_variants():
    """Every variant as a struct: name, target, triple, arch, clang_arch, nic, cov ("" = none)."""
    variants = []
    for arch, clang_arch in NVPTX_ARCHS.items():
        for nic in NICS:
            variants.append(struct(
                name = "nvptx-%s-%s" % (arch, nic),
                target = "nvptx",
                triple = "nvptx64-nvidia-cuda",
                arch = arch,
                clang_arch = clang_arch,
                nic = nic,
                cov = "",
            ))
    for arch, clang_arch in AMDGCN_ARCHS.items():
        for nic in NICS:
            for cov in AMDGCN_CODE_OBJECT_VERSIONS:
                variants.append(struct(
                    name = "amdgcn-%s-%s-cov%s" % (arch, nic, cov),
                    target = "amdgcn",
                    triple = "amdgcn-amd-amdhsa",
                    arch = arch,
                    clang_arch = arch if cov == FLYDSL_CODE_OBJECT_VERSION else clang_arch,
                    nic = nic,
                    cov = cov,
                ))
    return variants

def abi_target_args():
    """The variants as gen_abi.py --target NAME:TRIPLE:ARCH:COMPILED_FOR:NIC:COV arguments."""
    return " ".join([
        "--target %s:%s:%s:%s:%s:%s" % (v.name, v.triple, v.arch, v.clang_arch, v.nic, v.cov)
        for v in cco_variants()
    ])
