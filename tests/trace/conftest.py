# SPDX-License-Identifier: MIT
def pytest_addoption(parser):
    parser.addoption("--probe", help="trace_cost_probe (trace points compiled in)")
    parser.addoption("--probe-untraced", help="trace_cost_probe built with -DCCO_DEVICE_TRACE=0")
    parser.addoption("--asm", action="append", default=[], help="TARGET:traced|untraced:PATH of llc's assembly")
