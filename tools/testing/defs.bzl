# SPDX-License-Identifier: MIT
"""Test rules of the project's shapes: py_pytest (a pytest file run by the project's Python) and
cco_cc_test (a GoogleTest file against the host library's internals)."""

def py_pytest(name, src, data = [], args = [], tags = [], size = "medium", **kwargs):
    native.sh_test(
        name = name,
        srcs = ["//tools/testing:pytest.sh"],
        args = ["$(location %s)" % src] + args,
        data = [src] + data,
        tags = tags,
        size = size,
        **kwargs
    )

def cco_cc_test(name, srcs = None, deps = [], multiprocess = False, size = "medium", tags = [], **kwargs):
    """A GoogleTest binary over the host library's internal headers (//host:cco_internal).

    srcs defaults to NAME.cc; multiprocess adds the rank-process helper
    (tests/host/testing/multiprocess.h); deps are added to the library and gtest_main."""
    native.cc_test(
        name = name,
        srcs = srcs if srcs != None else [name + ".cc"],
        deps = deps + ["//host:cco_internal", "@gtest_system//:gtest_main"] +
               (["//tests/host/testing:multiprocess"] if multiprocess else []),
        size = size,
        tags = tags,
        **kwargs
    )
