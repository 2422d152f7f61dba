# SPDX-License-Identifier: MIT
def pytest_addoption(parser):
    parser.addoption("--clang", required=True, help="clang-19, which compiles the HIP side")
    parser.addoption("--example", action="append", default=[], help="an example .cu, as the checkout holds it")
    parser.addoption("--header", action="append", default=[], help="DEST=SRC: a public header and its place")
