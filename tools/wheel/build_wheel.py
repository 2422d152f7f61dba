#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Builds the cco wheel: the Python packages (cco, the binding, with libcco.so, every bitcode
variant and its manifest, the ABI table, the public headers, a pkg-config file, and the device
sources the JIT build compiles; cco_tools, the `cco` command and its benchmark).

  build_wheel.py --wheel OUT.whl --tag TAG --pyproject pyproject.toml --license LICENSE
      --package bindings/python/cco --package bindings/python/cco_tools --lib libcco.so
      --table T.json --manifest M.json --bitcode A.bc ... --header DEST=SRC ... --source DEST=SRC ...

The version is cco.h's (the --header for cco/cco.h), the rest of the metadata pyproject.toml's
[project] table. A wheel is a zip with a .dist-info folder; writing it directly keeps the build
offline.
"""

import argparse
import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile

NAME = "cco"
_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKOUT_CCO_H = os.path.join(_ROOT, "host", "include", "cco", "cco.h")
CHECKOUT_PYPROJECT = os.path.join(_ROOT, "pyproject.toml")


def read_version(cco_h=CHECKOUT_CCO_H):
    """The release, "MAJOR.MINOR.PATCH", from cco.h's CCO_VERSION_* (the one place it is written)."""
    with open(cco_h, encoding="utf-8") as f:
        defines = dict(re.findall(r"^#define CCO_VERSION_(MAJOR|MINOR|PATCH) (\d+)\s*$", f.read(), re.M))
    if len(defines) != 3:
        raise SystemExit(f"build_wheel: {cco_h} does not define CCO_VERSION_MAJOR, _MINOR and _PATCH")
    return f"{defines['MAJOR']}.{defines['MINOR']}.{defines['PATCH']}"


def read_project(pyproject=CHECKOUT_PYPROJECT):
    """pyproject.toml's [project] table, or {} where this Python cannot read TOML (3.10 without
    tomli: the metadata is then name and version only)."""
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            return {}
    with open(pyproject, "rb") as f:
        return tomllib.load(f).get("project", {})


def metadata(version, project, readme=None):
    """The METADATA file (core metadata 2.1) for `project` ([project] of pyproject.toml)."""
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {version}"]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if project.get("keywords"):
        lines.append(f"Keywords: {','.join(project['keywords'])}")
    for author in project.get("authors", []):
        lines.append(f"Author: {author['name']}")
    if "text" in project.get("license", {}):
        lines.append(f"License: {project['license']['text']}")
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    if readme is None:
        return ("\n".join(lines) + "\n").encode()
    lines.append("Description-Content-Type: text/markdown")
    with open(readme, encoding="utf-8") as f:
        return ("\n".join(lines) + "\n\n" + f.read()).encode()  # the long description is the body


def pkg_config(version, project):
    """cco.pc for C and C++ callers, relative to where it lies (cco/_data/pkgconfig), so the
    installed wheel is found wherever pip put it:
        PKG_CONFIG_PATH=$(python -c 'import cco; print(cco.get_pkgconfig_dir())') pkg-config --cflags --libs cco
    """
    return (
        "prefix=${pcfiledir}/..\n"
        "includedir=${prefix}/include\n"
        "libdir=${prefix}\n\n"
        f"Name: {NAME}\n"
        f"Description: {project.get('description', 'CCO')}\n"
        f"Version: {version}\n"
        "Cflags: -I${includedir}\n"
        "Libs: -L${libdir} -Wl,-rpath,${libdir} -lcco\n").encode()


def glibc_requirement(library):
    """The newest GLIBC_x.y version `library` needs, as (x, y), read from `objdump -T`."""
    out = subprocess.run(["objdump", "-T", library], check=True, capture_output=True, text=True).stdout
    versions = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"\bGLIBC_(\d+\.\d+(?:\.\d+)?)\b", out)}
    return max(versions)[:2]


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def write_wheel(path, files, tag, version, metadata_text, license_text=None):
    """A wheel of `files` (archive path -> bytes) with its .dist-info: metadata, licence, the
    `cco` command, and the RECORD of every file."""
    files = dict(files)
    info = f"{NAME}-{version}.dist-info"
    files[f"{info}/METADATA"] = metadata_text
    if license_text is not None:
        files[f"{info}/LICENSE"] = license_text
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: cco build_wheel.py\nRoot-Is-Purelib: false\n"
                              f"Tag: {tag}\n").encode()
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\ncco = cco_tools.__main__:main\n"
    record = [record_line(p, d) for p, d in sorted(files.items())] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for name, content in sorted(files.items()):
            entry = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # reproducible
            entry.external_attr = (0o755 if name.endswith(".so") or "/_data/bin/" in name else 0o644) << 16
            whl.writestr(entry, content, zipfile.ZIP_DEFLATED)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", required=True, help="the wheel to write: its name must be NAME-VERSION-TAG.whl")
    ap.add_argument("--tag", required=True, help="py3-none-manylinux_2_<glibc>_x86_64")
    ap.add_argument("--pyproject", required=True)
    ap.add_argument("--readme")
    ap.add_argument("--license", required=True)
    ap.add_argument("--package", action="append", required=True,
                    help="a package folder (each one's .py and .pyi files)")
    ap.add_argument("--lib", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--bitcode", nargs="+", required=True)
    ap.add_argument("--header", action="append", default=[], help="DEST=SRC under cco/_data/include")
    ap.add_argument("--source", action="append", default=[], help="DEST=SRC under cco/_data/src")
    ap.add_argument("--bin", action="append", default=[], help="SRC: a helper program, under cco/_data/bin")
    opts = ap.parse_args(argv)

    headers = dict(pair.split("=", 1) for pair in opts.header)
    version = read_version(headers["cco/cco.h"])
    expected = f"{NAME}-{version}-{opts.tag}.whl"
    if os.path.basename(opts.wheel) != expected:
        raise SystemExit(f"build_wheel: cco.h says {version}, so the wheel is {expected}, not "
                         f"{os.path.basename(opts.wheel)}")
    # libcco.so loads through ctypes: no CPython ABI tie. manylinux_2_<N> promises that it runs
    # with glibc 2.N; its libstdc++ and libgcc_s needs are checked by auditwheel (wheel_test).
    allowed = tuple(int(p) for p in re.fullmatch(r"py3-none-manylinux_(\d+)_(\d+)_x86_64", opts.tag).groups())
    needed = glibc_requirement(opts.lib)
    if needed > allowed:
        raise SystemExit(f"build_wheel: libcco.so needs glibc {needed[0]}.{needed[1]}, more than the tag "
                         f"{opts.tag} allows: see host/compat/ (glibc and libstdc++ symbols of newer releases)")
    project = read_project(opts.pyproject)

    files = {}  # archive path -> bytes
    for package in opts.package:
        for folder, _, names in os.walk(package):
            for n in sorted(names):
                if n.endswith((".py", ".pyi")):
                    src = os.path.join(folder, n)
                    name = os.path.join(os.path.basename(package), os.path.relpath(src, package))
                    files[name] = open(src, "rb").read()
    data = "cco/_data"
    files[f"{data}/libcco.so"] = open(opts.lib, "rb").read()
    files[f"{data}/cco_abi_table.json"] = open(opts.table, "rb").read()
    files[f"{data}/bitcode/bitcode_manifest.json"] = open(opts.manifest, "rb").read()
    files[f"{data}/pkgconfig/cco.pc"] = pkg_config(version, project)
    for bc in opts.bitcode:
        files[f"{data}/bitcode/{os.path.basename(bc)}"] = open(bc, "rb").read()
    for program in opts.bin:
        files[f"{data}/bin/{os.path.basename(program)}"] = open(program, "rb").read()
    for prefix, pairs in (("include", opts.header), ("src", opts.source)):
        for pair in pairs:
            dest, src = pair.split("=", 1)
            files[f"{data}/{prefix}/{dest}"] = open(src, "rb").read()

    write_wheel(opts.wheel, files, opts.tag, version, metadata(version, project, opts.readme),
                open(opts.license, "rb").read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
