"""py_pytest: a pytest file run by the project's Python, as a Bazel test."""

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
