"""JIT build of the device bitcode for one variant, with clang-19, cached by content.

The same steps as the Bazel rule (device/bitcode.bzl) — freestanding clang, internalize
to the ABI's public symbols, stamp — run on this machine into ~/.cache/cco/jit/<key>/,
where <key> hashes the sources, the variant and the compiler. A file lock makes
concurrent ranks build once; the result is moved into place atomically.
Returns None (so the caller falls back to the prebuilt file) when no clang-19 / opt-19
is found or the sources are not available.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile

from cco import _env, _resources
from cco.device.abi_table import ABI_VERSION, CCO_DEVICE_FUNCTIONS, TARGETS
from cco.device.stamp import stamp

# Keep in step with device/bitcode.bzl (tests/python/jit_test.py compares the results).
_TARGET_FLAGS = {
    "nvptx": ["--target=nvptx64-nvidia-cuda", "-march={arch}", "-nostdlibinc"],
    "amdgcn": ["--target=amdgcn-amd-amdhsa", "-mcpu={arch}", "-nogpulib", "-nostdlibinc"],
}
_COMMON_FLAGS = ["-emit-llvm", "-c", "-O2", "-std=c++17", "-fno-exceptions", "-fno-rtti",
                 "-Wall", "-Wextra", "-Werror"]
# As device/variants.bzl: archs LLVM 19 lacks are built by LLVM 22 (FlyDSL's variants of
# them), and FlyDSL's variants (code-object version 6) are hosted, the others freestanding.
_LLVM22_ARCHS = ("sm_100", "gfx950")
_FLYDSL_COV = 6
_WRAPPERS = os.path.join("device", "wrappers", "cco_device_wrappers.cc")
_GENERATED = [os.path.join("device", "wrappers", "cco_device_wrappers.inc"),
              os.path.join("device", "wrappers", "cco_device_abi.h")]


def _tool(env_name, names):
    explicit = _env.get(env_name)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def clang(llvm=19):
    if llvm == 22:
        return _tool("CCO_CLANG22", ["clang-22", "/usr/lib/llvm-22/bin/clang"])
    return _tool("CCO_CLANG", ["clang-19", "/usr/lib/llvm-19/bin/clang"])


def opt(llvm=19):
    if llvm == 22:
        return _tool("CCO_OPT22", ["opt-22", "/usr/lib/llvm-22/bin/opt"])
    return _tool("CCO_OPT", ["opt-19", "/usr/lib/llvm-19/bin/opt"])


def _target(variant):
    return next(t for t in TARGETS if t["name"] == variant)


def llvm_of(variant):
    """The LLVM (19 or 22) whose clang and opt build `variant`."""
    return 22 if _target(variant)["compiled_for"] in _LLVM22_ARCHS else 19


def source_roots():
    """(sources root, generated-files root), or None: the wheel's copy, else a checkout
    whose Bazel outputs hold the generated wrappers."""
    packaged = os.path.join(_resources.DATA_DIR, "src")
    if os.path.exists(os.path.join(packaged, _WRAPPERS)):
        return packaged, packaged
    repo = _resources.REPO_ROOT
    if not os.path.exists(os.path.join(repo, _WRAPPERS)):
        return None
    # A checkout keeps generated files under bazel-bin/; a Bazel test's runfiles beside the sources.
    for generated in (os.path.join(repo, "bazel-bin"), repo):
        if all(os.path.exists(os.path.join(generated, g)) for g in _GENERATED):
            return repo, generated
    return None


def _source_files(root, generated):
    files = []
    for sub in ("abi", "device"):
        for folder, _, names in os.walk(os.path.join(root, sub)):
            files += [os.path.join(folder, n) for n in names if n.endswith((".h", ".hpp", ".cc"))]
    files += [os.path.join(generated, g) for g in _GENERATED]
    return sorted(set(files))


def compile_command(variant, source_root, generated_root, output):
    target = _target(variant)
    kind = target["triple"].split("-")[0].replace("nvptx64", "nvptx")
    flags = [f.replace("{arch}", target["compiled_for"]) for f in _TARGET_FLAGS[kind]]
    cov = target["code_object_version"]
    if kind == "amdgcn":
        flags += ["-Xclang", f"-mcode-object-version={cov if cov else 'none'}"]
    if cov != _FLYDSL_COV:
        flags.append("-ffreestanding")
    flags += [f"-I{os.path.abspath(generated_root)}", f"-DCCO_NIC_{target['nic'].upper()}=1", f"-DCCO_BUILD_ABI_VERSION={ABI_VERSION}"]
    # Run from the source root with relative paths, as Bazel does: the bitcode records no
    # absolute path and equals the prebuilt file byte for byte.
    return [clang(llvm_of(variant))] + flags + _COMMON_FLAGS + ["-I.", _WRAPPERS, "-o", output]


def cache_key(variant, roots):
    digest = hashlib.sha256()
    digest.update(f"{variant}\0{ABI_VERSION}\0".encode())
    version = subprocess.run([clang(llvm_of(variant)), "--version"], capture_output=True, text=True).stdout
    digest.update(version.encode())
    for path in _source_files(*roots):
        digest.update(os.path.relpath(path, roots[0]).encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()[:32]


def cache_dir():
    return os.path.join(os.path.expanduser(_env.get("CCO_JIT_CACHE", "~/.cache/cco/jit")))


def build(variant):
    """Builds (or finds in the cache) the bitcode of `variant`; returns its path.
    Raises RuntimeError with the compiler's message when a build fails."""
    roots = source_roots()
    llvm = llvm_of(variant)
    if roots is None or clang(llvm) is None or opt(llvm) is None:
        raise RuntimeError(f"cco JIT: {variant} needs clang-{llvm} and opt-{llvm} and the device sources")
    key = cache_key(variant, roots)
    folder = os.path.join(cache_dir(), key)
    final = os.path.join(folder, f"libcco_device-{variant}.bc")
    if os.path.exists(final):
        return final
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; the others find its result
        if os.path.exists(final):
            return final
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            compiled = os.path.join(tmp, "compiled.bc")
            internalized = os.path.join(tmp, "internalized.bc")
            public = os.path.join(tmp, "public.txt")
            with open(public, "w") as f:
                f.write("".join(fn["symbol"] + "\n" for fn in CCO_DEVICE_FUNCTIONS))
            for cmd, cwd in ((compile_command(variant, *roots, compiled), roots[0]),
                             ([opt(llvm), "-passes=internalize,globaldce", f"-internalize-public-api-file={public}",
                               compiled, "-o", internalized], None)):
                result = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
                if result.returncode != 0:
                    raise RuntimeError(f"cco JIT: {' '.join(cmd)} failed:\n{result.stderr}")
            with open(internalized, "rb") as f:
                stamped = stamp(f.read(), ABI_VERSION, variant)
            staging = os.path.join(tmp, "final.bc")
            with open(staging, "wb") as f:
                f.write(stamped)
            os.replace(staging, final)
    return final


def build_if_possible(variant):
    """build(variant), or None where the JIT cannot run here (no compiler, no sources)."""
    roots = source_roots()
    llvm = llvm_of(variant)
    if roots is None or clang(llvm) is None or opt(llvm) is None:
        return None
    return build(variant)
