"""The downstream package (tests/downstream) on Numba's CUDA simulator: its intrinsics' twins and its
device functions, against NumPy."""

import numpy as np
import pytest

from ..downstream import check


def test_device_functions_calling_builtin_and_own_intrinsics(rng):
    check.peaks(rng, blocks=2)
    check.top_means(rng, blocks=1)


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_block_argmax(dtype, rng):
    check.argmax(rng, dtype, (8, 4))


@pytest.mark.parametrize("k", [1, 5])
def test_block_topk(k, rng):
    check.topk(rng, np.float32, 16, 3, k)


@pytest.mark.parametrize("warp_size", [4, 32])
def test_warp_argmax(warp_size, rng):
    check.warp_peaks(rng, np.int16, warp_size)
