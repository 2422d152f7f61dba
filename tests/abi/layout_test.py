# SPDX-License-Identifier: MIT
"""The ABI structs have one layout on every target: the host compiler's offsets and
sizes (layout_table_host) equal those clang computes for nvptx and amdgcn."""

import re
import subprocess

import pytest


def host_table(path):
    out = subprocess.run([path], check=True, capture_output=True, text=True).stdout
    names, numbers = out.split("--\n")
    return names.split(), [int(n) for n in numbers.split()]


def ir_table(path):
    with open(path, encoding="utf-8") as f:
        ir = f.read()
    m = re.search(r"@cco_layout_table = .*?constant \[(\d+) x i64\] \[(.*?)\]", ir)
    assert m, f"{path}: no cco_layout_table constant"
    values = [int(v) for v in re.findall(r"i64 (\d+)", m.group(2))]
    assert len(values) == int(m.group(1))
    return values


def test_host_table_is_complete(request):
    names, numbers = host_table(request.config.getoption("host_table"))
    fields = [n for n in names if "." in n]
    structs = [n for n in names if "." not in n]
    assert len(numbers) == 2 * len(fields) + 2 * len(structs)
    sizes = dict(zip(structs, numbers[2 * len(fields)::2]))
    assert sizes == {"ccoTeam": 16, "ccoWindowDevice": 128, "ccoDevComm": 328, "ccoHostBell": 8, "ccoGdaDesc": 64,
                     "ccoGdaRingHost": 128, "ccoGdaRingDevice": 64, "ccoTraceBuffer": 64, "ccoTraceRecord": 64,
                     "ccoTraceClockSample": 32}


@pytest.mark.parametrize("target", ["nvptx", "amdgcn"])
def test_device_layout_equals_host(request, target):
    names, host = host_table(request.config.getoption("host_table"))
    irs = dict(spec.split(":", 1) for spec in request.config.getoption("ir"))
    device = ir_table(irs[target])
    fields = [n for n in names if "." in n]
    labels = [f"{f} {what}" for f in fields for what in ("offset", "size")]
    labels += [f"{s} {what}" for s in names if "." not in s for what in ("size", "align")]
    diffs = [f"{label}: host {h}, {target} {d}" for label, h, d in zip(labels, host, device) if h != d]
    assert len(device) == len(host)
    assert not diffs, "\n".join(diffs)
