# SPDX-License-Identifier: MIT
"""find_cco_bitcode: the device library for one GPU target, in the guide's order.

  1. CCO_DEVICE_BC (alias MORI_CCO_BC): an explicit path;
  2. a JIT build for this target with clang-19, cached by content under ~/.cache/cco/jit,
     unless CCO_DISABLE_JIT (alias MORI_DISABLE_JIT) is set or no clang-19 is found;
  3. the prebuilt variant shipped with the package (or built in this checkout).

Whatever the source, a bitcode whose ABI version differs from the host library's is refused.
"""

import json
import os

from cco import _env, _resources
from cco.device.abi_table import ABI_VERSION, TARGETS
from cco.device.stamp import read_stamp

DEFAULT_NIC = "proxy"
TRITON_CODE_OBJECT_VERSION = 5  # Triton's AMD backend links code-object v5 modules


class BitcodeError(RuntimeError):
    pass


def bitcode_abi_version(path):
    """The ABI version a CCO bitcode was built for (its stamp), or None for a file that
    carries no CCO stamp."""
    return read_stamp(path)[0]


def bitcode_variant(path):
    return read_stamp(path)[1]


def variant_for_target(backend, arch, nic=None, cov=None):
    """Variant name for a Triton-style target: ("cuda", 90) or ("hip", "gfx942")."""
    nic = nic or _env.get("CCO_NIC", DEFAULT_NIC)
    if backend == "cuda":
        name = f"nvptx-sm_{int(arch)}-{nic}"
    elif backend == "hip":
        name = f"amdgcn-{arch}-{nic}-cov{int(cov or TRITON_CODE_OBJECT_VERSION)}"
    else:
        raise BitcodeError(f"cco: no CCO bitcode for backend {backend!r} (cuda or hip)")
    known = [t["name"] for t in TARGETS]
    if name not in known:
        raise BitcodeError(f"cco: no bitcode variant {name!r}; this CCO has: {', '.join(known)}")
    return name


def _current_target():
    try:
        from triton.runtime import driver
        return driver.active.get_current_target()
    except Exception as e:  # no GPU, no Triton: the caller must name a target
        raise BitcodeError(f"cco: cannot tell the current GPU target ({e}); pass target=") from e


def _host_abi_version():
    """The host library's ABI version where it can be loaded, else the package's."""
    try:
        from cco import _lib
        return _lib.abi_version()
    except Exception:
        return ABI_VERSION


def check_abi(path, expected=None):
    expected = _host_abi_version() if expected is None else expected
    found = bitcode_abi_version(path)
    if found is None:
        raise BitcodeError(f"cco: {path} is not a CCO device bitcode (no CCO stamp in its bitcode wrapper)")
    if found != expected:
        raise BitcodeError(
            f"cco: {path} was built for CCO ABI version {found}, but the host library speaks "
            f"version {expected}; rebuild the bitcode or install matching versions")
    return path


def _prebuilt(variant):
    for folder in _resources.bitcode_dirs():
        manifest = os.path.join(folder, "bitcode_manifest.json")
        if os.path.exists(manifest):
            with open(manifest, encoding="utf-8") as f:
                for entry in json.load(f)["variants"]:
                    if entry["name"] == variant:
                        path = os.path.join(folder, entry["file"])
                        if os.path.exists(path):
                            return path
        path = os.path.join(folder, f"libcco_device-{variant}.bc")
        if os.path.exists(path):
            return path
    return None


def find_cco_bitcode(target=None, nic=None, cov=None):
    """Path of the CCO bitcode for `target` (a triton GPUTarget, a (backend, arch) pair,
    or None for the current GPU).

    The guide's form, `find_cco_bitcode(cov)` with the code-object version as the only
    positional argument (5 for Triton, 6 for FlyDSL), works too: an int there is `cov`."""
    if isinstance(target, int) and not isinstance(target, bool):
        if cov is not None and cov != target:
            raise BitcodeError(f"cco: find_cco_bitcode({target}, cov={cov}): two code-object versions")
        target, cov = None, target
    explicit = _env.get("CCO_DEVICE_BC")
    if explicit:
        if not os.path.isfile(explicit):
            raise BitcodeError(f"cco: CCO_DEVICE_BC={explicit} does not exist")
        return check_abi(explicit)

    if target is None:
        target = _current_target()
    backend, arch = (target.backend, target.arch) if hasattr(target, "backend") else target
    variant = variant_for_target(backend, arch, nic, cov)

    if not _env.flag("CCO_DISABLE_JIT"):
        from cco.device import jit
        built = jit.build_if_possible(variant)
        if built:
            return check_abi(built)

    path = _prebuilt(variant)
    if path is None:
        raise BitcodeError(
            f"cco: no bitcode for {variant}: set CCO_DEVICE_BC, install clang-19 for the JIT "
            f"build, or build it with `bash tools/build_cco_bitcode.sh {variant}`")
    return check_abi(path)
