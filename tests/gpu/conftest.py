# SPDX-License-Identifier: MIT
"""GPU tests (tagged gpu; run on the device machine by tests/gpu/run_all.sh, never in CI).
Kernels and helpers shared with the CPU tests live in tests/triton/kernels.py."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "triton"))
