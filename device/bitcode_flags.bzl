# SPDX-License-Identifier: MIT
"""How a bitcode variant is compiled: the one list the Bazel rule and the JIT build both read.

device/bitcode.bzl loads it; bindings/python/cco/device/jit.py reads it as data, so it holds
nothing but assignments of literals (strings, lists, dicts of them). A compile is

    clang TARGET_FLAGS[target] [FREESTANDING_FLAGS] VARIANT_FLAGS COMMON_FLAGS wrappers.cc -o out

with FREESTANDING_FLAGS left out for hosted variants (FlyDSL's code-object version), and these
placeholders filled in: {arch} the arch clang compiles for, {cov} the code-object version
("none" where the variant has none), {generated} the folder of the generated wrappers, {nic}
the NIC provider in upper case.
"""

# Freestanding: no CUDA or ROCm headers, none of the host's.
TARGET_FLAGS = {
    "nvptx": ["--target=nvptx64-nvidia-cuda", "-march={arch}", "-nostdlibinc"],
    # A fixed code-object version is a module flag: it links only into modules of the same
    # version, hence one variant per version ("none" links into anything).
    "amdgcn": [
        "--target=amdgcn-amd-amdhsa",
        "-mcpu={arch}",
        "-nogpulib",
        "-nostdlibinc",
        "-Xclang",
        "-mcode-object-version={cov}",
    ],
}

# -ffreestanding marks every function "no-builtins", which FlyDSL's LLVM will not inline into
# kernels without it: its variants (FLYDSL_CODE_OBJECT_VERSION) are compiled without it.
FREESTANDING_FLAGS = ["-ffreestanding"]

VARIANT_FLAGS = ["-I{generated}", "-DCCO_NIC_{nic}=1"]

COMMON_FLAGS = [
    "-emit-llvm",
    "-c",
    "-O2",
    "-std=c++17",
    "-fno-exceptions",
    "-fno-rtti",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-I.",
]

# Archs LLVM 19 does not know: clang-22 and opt-22 build their FlyDSL variants (the others are
# compiled for the nearest older arch, device/variants.bzl), and llc-22 checks their code.
LLVM22_ARCHS = ["sm_100", "gfx950"]

# FlyDSL's AMD code-object version (Triton links version 5): its variants are hosted.
FLYDSL_CODE_OBJECT_VERSION = "6"
