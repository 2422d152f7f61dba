# SPDX-License-Identifier: MIT
"""What this installation is made of, for `cco --version`, `cco info` and bug reports.

    >>> import cco
    >>> cco.__version__            # the release of cco.h these bindings belong to
    >>> cco.versions()             # the package, the library it loads, the ABI, the DSLs found

Nothing here fails for a missing piece: an absent library or DSL is reported as such.
"""

import importlib.metadata
import sys

from cco import _abi

# The release of cco.h (CCO_VERSION_MAJOR.MINOR.PATCH), the one place it is written (_abi reads it).
VERSION = "%d.%d.%d" % _abi.VERSION

# Distributions whose versions matter to CCO's users, by their PyPI names.
_RELATED = ("triton", "flydsl", "torch", "numpy")


def _library():
    """The loaded libcco.so's path, release and ABI, or why it cannot be loaded."""
    from cco import _lib

    try:
        release = ".".join(map(str, _lib.library_version()))
        return {"path": _lib.library_path(), "version": release, "abi_version": _lib.abi_version()}
    except _lib.LibraryError as e:
        return {"error": str(e)}


def versions():
    """{"cco", "abi_version", "library": {"path", "version", "abi_version"} or {"error"},
    "python", and each of triton, flydsl, torch, numpy: its version or None where absent}."""
    found = {"cco": VERSION, "abi_version": _abi.ABI_VERSION, "library": _library(),
             "python": sys.version.split()[0]}
    for name in _RELATED:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found
