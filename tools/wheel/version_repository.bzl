# SPDX-License-Identifier: MIT
"""@cco_version//:version.bzl: VERSION, read from cco.h's CCO_VERSION_MAJOR/MINOR/PATCH.

cco.h is the one place the release is written: the library reports it (ccoGetVersion), and the
wheel's file name, its metadata, the sdist and the Python package all take it from there. A
repository rule, because a BUILD file needs the wheel's file name before any action runs; Bazel
runs it again whenever cco.h changes."""

def _cco_version_impl(rctx):
    parts = {}
    for line in rctx.read(rctx.attr.header).splitlines():
        words = [w for w in line.replace("\t", " ").split(" ") if w]
        if len(words) == 3 and words[0] == "#define" and words[1].startswith("CCO_VERSION_"):
            parts[words[1][len("CCO_VERSION_"):]] = words[2]
    for part in ("MAJOR", "MINOR", "PATCH"):
        if not parts.get(part, "").isdigit():
            fail("%s does not define CCO_VERSION_%s as a number" % (rctx.attr.header, part))
    rctx.file("BUILD.bazel", "")
    rctx.file("version.bzl", 'VERSION = "%s.%s.%s"\n' % (parts["MAJOR"], parts["MINOR"], parts["PATCH"]))

cco_version_repository = repository_rule(
    implementation = _cco_version_impl,
    attrs = {"header": attr.label(allow_single_file = True, mandatory = True)},
)
