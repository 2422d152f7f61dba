# SPDX-License-Identifier: MIT
def pytest_addoption(parser):
    parser.addoption("--probe", action="append", default=[], help="TARGET:ARCH:PATH of a probe's assembly")
