# SPDX-License-Identifier: MIT
"""`cco perf --suites get` on GPUs: LSA get bandwidth, rank 0 reads rank 1's [0, S) into its
own [S, 2S), with the put suite's anchors and checks (lsa_put.transfer)."""

from cco_tools.perf.suites.lsa_put import transfer


def run(ctx):
    transfer(ctx, "get")
