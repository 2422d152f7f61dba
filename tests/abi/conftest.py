# SPDX-License-Identifier: MIT
def pytest_addoption(parser):
    for name in ("committed", "generated", "manifest", "llvm-dis", "llc", "llc22", "llvm-dis22", "llc22-archs",
                 "host-table", "version-header", "c-header"):
        parser.addoption("--" + name)
    parser.addoption("--ir", action="append", default=[])
    parser.addoption("--source", action="append", default=[])
