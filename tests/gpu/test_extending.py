"""The downstream package (tests/downstream) on the GPU against NumPy: its own intrinsics over its own
C++ header, declared with numba_tiles.extending, and kernels calling its device functions."""

import numpy as np
import pytest
from numba import cuda

from ..downstream import check

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]


def test_device_functions_calling_builtin_and_own_intrinsics(rng):
    check.peaks(rng)
    check.top_means(rng)


@pytest.mark.parametrize("block_dim", [32, 100, (16, 8), (4, 5, 3)], ids=str)
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint64, np.float32, np.float64])
def test_block_argmax(dtype, block_dim, rng):
    check.argmax(rng, dtype, block_dim)


@pytest.mark.parametrize(
    "block_dim,items_per_thread,k", [(32, 1, 1), (128, 4, 8), (100, 3, 300), ((8, 8), 2, 17)], ids=str
)
@pytest.mark.parametrize("dtype", [np.int16, np.uint32, np.float32, np.float64])
def test_block_topk(dtype, block_dim, items_per_thread, k, rng):
    check.topk(rng, dtype, block_dim, items_per_thread, k)


@pytest.mark.parametrize("warp_size", [1, 4, 16, 32])
@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.float32, np.float64])
def test_warp_argmax(dtype, warp_size, rng):
    check.warp_peaks(rng, dtype, warp_size)
