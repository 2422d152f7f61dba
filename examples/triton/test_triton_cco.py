# SPDX-License-Identifier: MIT
"""The guide's examples/cco/ir/test_triton_cco.py: Triton kernels over one transport, chosen
with --transport, each checking every byte it moved (the examples beside this file):

  lsa   lsa_copy.py: stores straight into the next rank's window through its LSA pointer
  sdma  sdma_put.py: puts and gets through SDMA queues (copy engines), with signals
  gda   gda_modes.py: GDA puts across (coop, thread mode) x signal action, Deferred and
        CallerOrdered handles

  torchrun --standalone --nproc_per_node=2 examples/triton/test_triton_cco.py --transport lsa
  CCO_ENABLE_SDMA=1 torchrun --standalone --nproc_per_node=2 examples/triton/test_triton_cco.py --transport sdma
  torchrun --standalone --nproc_per_node=2 examples/triton/test_triton_cco.py --transport gda
  (or python -m cco.launch -n 2 examples/triton/test_triton_cco.py --transport ...)

Ranks beyond the GPUs share them (run them under MPS). Status: runs on one H200 with 2 ranks
per transport under torchrun (tests/gpu/run_all.sh torchrun); 2-GPU runs need a 2-GPU machine.
"""

import argparse
import importlib
import os
import sys

EXAMPLES = {"lsa": "lsa_copy", "sdma": "sdma_put", "gda": "gda_modes"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transport", choices=sorted(EXAMPLES), required=True)
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    return importlib.import_module(EXAMPLES[args.transport]).main()


if __name__ == "__main__":
    raise SystemExit(main())
