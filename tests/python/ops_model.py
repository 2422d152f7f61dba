# SPDX-License-Identifier: MIT
"""What the numpy models of cco.ops's kernels share (ops_planning_test, ops_gda_model_test):
the kernels' tile order and small integer inputs, whose products and sums are exact."""

import numpy as np


def cdiv(a, b):
    return -(-a // b)


def tile_coords(t, mt, nt, group_m):
    """cco.ops.kernels.core.tile_coords: tile t of an mt x nt grid in grouped order."""
    per = group_m * nt
    first = (t // per) * group_m
    size = min(mt - first, group_m)
    return first + (t % per) % size, (t % per) // size


def rand_ints(shape, seed):
    return np.random.default_rng(seed).integers(-3, 4, size=shape).astype(np.float64)
