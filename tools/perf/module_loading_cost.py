# SPDX-License-Identifier: MIT
"""What eager module loading costs a torch process: the time to its first CUDA operation and
the device memory it holds then, with CUDA_MODULE_LOADING=LAZY (CUDA's default) and EAGER
(which loads every module up front, so none loads while a kernel waits for CCO's proxy).

    python3 tools/perf/module_loading_cost.py
"""

import os
import subprocess
import sys
import time

FIRST_OP = r'''
import os, time, torch
t = time.monotonic(); torch.zeros(1, device="cuda"); torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info()
print(f"{os.environ['CUDA_MODULE_LOADING']}: first CUDA op {time.monotonic() - t:.2f} s, "
      f"used {(total - free) / 2**20:.0f} MiB")
'''

for mode in ("LAZY", "EAGER"):
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", FIRST_OP], env=dict(os.environ, CUDA_MODULE_LOADING=mode), timeout=120,
                   check=True)
    print(f"{mode}: whole process {time.monotonic() - start:.2f} s", flush=True)
