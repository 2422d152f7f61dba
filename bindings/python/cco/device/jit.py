# SPDX-License-Identifier: MIT
"""JIT build of the device bitcode for one variant, with clang-19, cached by content.

The same steps as the Bazel rule (device/bitcode.bzl) — clang with the flags of
device/bitcode_flags.bzl (read here as data, so both builds use one list), internalize to
the ABI's public symbols, stamp — run on this machine into ~/.cache/cco/jit/<key>/, where
<key> hashes the sources, the flags, the variant and the compiler. A file lock makes
concurrent ranks build once; the result is moved into place atomically.
Returns None (so the caller falls back to the prebuilt file) when no clang-19 / opt-19
is found or the sources are not available.
"""

import ast
import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

from cco import _abi, _env, _resources
from cco.device.abi_table import ABI_VERSION, CCO_DEVICE_FUNCTIONS, TARGETS
from cco.device.stamp import stamp

_FLAGS = os.path.join("device", "bitcode_flags.bzl")
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


@functools.lru_cache(maxsize=None)
def read_flags(path):
    """The constants of device/bitcode_flags.bzl: a Starlark file of literal assignments only,
    which Python reads as it is."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise ValueError(f"{path}:{node.lineno}: only NAME = literal assignments are allowed")
        constants[node.targets[0].id] = ast.literal_eval(node.value)
    return constants


def _flags(roots):
    return read_flags(os.path.join(roots[0], _FLAGS))


def llvm_of(variant, roots):
    """The LLVM (19 or 22) whose clang and opt build `variant`."""
    return 22 if _target(variant)["compiled_for"] in _flags(roots)["LLVM22_ARCHS"] else 19


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
    files = [os.path.join(root, _FLAGS)]
    for sub in ("abi", "device"):
        for folder, _, names in os.walk(os.path.join(root, sub)):
            files += [os.path.join(folder, n) for n in names if n.endswith((".h", ".hpp", ".cc"))]
    files += [os.path.join(generated, g) for g in _GENERATED]
    return sorted(set(files))


def compile_command(variant, source_root, generated_root, output):
    """The clang command of device/bitcode_flags.bzl for `variant`, as device/bitcode.bzl
    makes it."""
    target = _target(variant)
    flags = _flags((source_root, generated_root))
    kind = target["triple"].split("-")[0].replace("nvptx64", "nvptx")
    cov = target["code_object_version"]
    values = {"arch": target["compiled_for"], "cov": str(cov) if cov else "none",
              "generated": os.path.abspath(generated_root), "nic": target["nic"].upper()}

    def expand(items):
        out = []
        for item in items:
            for name, value in values.items():
                item = item.replace("{%s}" % name, value)
            out.append(item)
        return out

    hosted = str(cov) == flags["FLYDSL_CODE_OBJECT_VERSION"]
    # Run from the source root with relative paths, as Bazel does: the bitcode records no
    # absolute path and equals the prebuilt file byte for byte.
    return ([clang(llvm_of(variant, (source_root, generated_root)))] + expand(flags["TARGET_FLAGS"][kind]) +
            ([] if hosted else flags["FREESTANDING_FLAGS"]) + expand(flags["VARIANT_FLAGS"]) + flags["COMMON_FLAGS"] +
            [_WRAPPERS, "-o", output])


def check_sources_abi_version(roots):
    """The sources must be of the ABI version the package's table names: the bitcode is
    stamped with the table's."""
    found = _abi.read_abi_version(os.path.join(roots[0], "abi", "version.h"))
    if found != ABI_VERSION:
        raise RuntimeError(f"cco JIT: the device sources are of ABI version {found}, the ABI table of "
                           f"{ABI_VERSION}: regenerate the table (tools/abi/update_table.sh) or use a matching package")


def cache_key(variant, roots):
    digest = hashlib.sha256()
    digest.update(f"{variant}\0{ABI_VERSION}\0".encode())
    version = subprocess.run([clang(llvm_of(variant, roots)), "--version"], capture_output=True, text=True).stdout
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
    if roots is None:
        raise RuntimeError(f"cco JIT: {variant} needs the device sources")
    llvm = llvm_of(variant, roots)
    if clang(llvm) is None or opt(llvm) is None:
        raise RuntimeError(f"cco JIT: {variant} needs clang-{llvm} and opt-{llvm}")
    check_sources_abi_version(roots)
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
    if roots is None:
        return None
    llvm = llvm_of(variant, roots)
    if clang(llvm) is None or opt(llvm) is None:
        return None
    return build(variant)
