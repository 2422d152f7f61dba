# SPDX-License-Identifier: MIT
"""cco_bitcode: one LLVM bitcode file of the device library for one variant.

clang-19 (clang-22 for FlyDSL's variants of archs LLVM 19 lacks) with the flags of
device/bitcode_flags.bzl (which the JIT build reads too), then `opt` internalizes everything
but the ABI's public list and drops what became dead, then tools/bitcode/stamp.py records the
ABI version (read from abi/version.h) and variant in the bitcode wrapper (outside the IR).
Freestanding nvptx emits no `nvvm-reflect-ftz` module flag, so the bitcode links into Triton's
modules as it is.
"""

load(":bitcode_flags.bzl", "COMMON_FLAGS", "FREESTANDING_FLAGS", "TARGET_FLAGS", "VARIANT_FLAGS")

def _expand(flags, values):
    out = []
    for f in flags:
        for name, value in values.items():
            f = f.replace("{%s}" % name, value)
        out.append(f)
    return out

def _cco_bitcode_impl(ctx):
    values = {
        "arch": ctx.attr.clang_arch,
        "cov": ctx.attr.cov or "none",
        "generated": ctx.bin_dir.path,
        "nic": ctx.attr.nic.upper(),
    }
    flags = _expand(TARGET_FLAGS[ctx.attr.target], values)
    if not ctx.attr.hosted:
        flags += FREESTANDING_FLAGS
    flags += _expand(VARIANT_FLAGS, values) + COMMON_FLAGS

    compiled = ctx.actions.declare_file("_%s/compiled.bc" % ctx.label.name)
    args = ctx.actions.args()
    args.add_all(flags + ctx.attr.copts)
    args.add(ctx.file.src)
    args.add("-o", compiled)
    clang = ctx.executable._clang22 if ctx.attr.llvm == "22" else ctx.executable._clang
    opt = ctx.executable._opt22 if ctx.attr.llvm == "22" else ctx.executable._opt
    ctx.actions.run(
        executable = clang,
        arguments = [args],
        inputs = [ctx.file.src] + ctx.files.hdrs,
        outputs = [compiled],
        mnemonic = "CcoBitcodeCompile",
        progress_message = "Compiling CCO device library for %s" % ctx.label.name,
    )

    internalized = ctx.actions.declare_file("_%s/internalized.bc" % ctx.label.name)
    out = ctx.outputs.out
    opt_args = ctx.actions.args()
    opt_args.add("-passes=internalize,globaldce")
    opt_args.add("-internalize-public-api-file=" + ctx.file.public_list.path)
    opt_args.add(compiled)
    opt_args.add("-o", internalized)
    ctx.actions.run(
        executable = opt,
        arguments = [opt_args],
        inputs = [compiled, ctx.file.public_list],
        outputs = [internalized],
        mnemonic = "CcoBitcodeInternalize",
        progress_message = "Internalizing %s" % out.short_path,
    )

    # ABI version and variant go into the bitcode wrapper, outside the IR, where tools
    # without LLVM (find_cco_bitcode) read them.
    ctx.actions.run_shell(
        command = "python3 %s %s %s %s --version-header %s --variant %s" % (
            ctx.file._stamp.path, ctx.file._stamp_module.path, internalized.path, out.path,
            ctx.file._version_header.path, ctx.attr.variant),
        inputs = [internalized, ctx.file._stamp, ctx.file._stamp_module, ctx.file._version_header],
        outputs = [out],
        use_default_shell_env = True,
        mnemonic = "CcoBitcodeStamp",
        progress_message = "Stamping %s" % out.short_path,
    )
    # runfiles: tests take the .bc as `data`, which Starlark rules do not provide by themselves.
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

cco_bitcode = rule(
    implementation = _cco_bitcode_impl,
    attrs = {
        "src": attr.label(allow_single_file = [".cc"], mandatory = True),
        "hdrs": attr.label_list(allow_files = [".h", ".hpp", ".inc"]),
        "public_list": attr.label(allow_single_file = True, mandatory = True),
        "target": attr.string(mandatory = True, values = ["amdgcn", "nvptx"]),
        "clang_arch": attr.string(mandatory = True),
        "nic": attr.string(mandatory = True),
        "variant": attr.string(mandatory = True),
        "cov": attr.string(default = ""),
        "llvm": attr.string(default = "19", values = ["19", "22"]),
        "hosted": attr.bool(default = False),
        "copts": attr.string_list(),
        "out": attr.output(mandatory = True),
        "_clang": attr.label(default = "//device/toolchain:clang", executable = True, cfg = "exec",
                             allow_single_file = True),
        "_stamp": attr.label(default = "//tools/bitcode:stamp.py", allow_single_file = True),
        "_version_header": attr.label(default = "//abi:version.h", allow_single_file = True),
        "_stamp_module": attr.label(default = "//bindings/python:cco/device/stamp.py", allow_single_file = True),
        "_opt": attr.label(default = "//device/toolchain:opt", executable = True, cfg = "exec",
                           allow_single_file = True),
        "_clang22": attr.label(default = "//device/toolchain:clang-22", executable = True, cfg = "exec",
                               allow_single_file = True),
        "_opt22": attr.label(default = "//device/toolchain:opt-22", executable = True, cfg = "exec",
                             allow_single_file = True),
    },
)

def bitcode_file_name(variant):
    return "libcco_device-%s.bc" % variant.name
