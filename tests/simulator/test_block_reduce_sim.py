"""The same kernels as the GPU tests, on Numba's CUDA simulator, against the same NumPy references."""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles

from .. import reference


@pytest.mark.parametrize("block_dim", [32, (4, 4), (4, 2, 2)], ids=str)
@pytest.mark.parametrize("dtype,op", reference.cases())
def test_block_reduce(dtype, op, block_dim, rng):
    reference.run_case(dtype, op, block_dim, rng)


@pytest.mark.parametrize("dtype", reference.DTYPES)
def test_block_sum(dtype, rng):
    reference.run_case(dtype, "+", (8, 4), rng, api="sum")


@pytest.mark.parametrize("dtype,op", reference.cases(["int32", "float32"]))
def test_op_spelled_as_python_function(dtype, op, rng):
    reference.run_case(dtype, op, 32, rng, api="spelled")


def test_launch_with_other_block_shape_is_an_error():
    @cuda.jit
    def kernel(x, out):
        out[0] = tiles.block_sum(x[cuda.threadIdx.x], block_dim=64)

    with pytest.raises(tiles.TilesError, match=r"block_sum: block_dim=\(64, 1, 1\) but the kernel was launched"):
        kernel[1, 32](np.ones(64, np.float32), np.zeros(1, np.float32))


def test_bad_op_is_the_same_error_as_compiled():
    @cuda.jit
    def kernel(x, out):
        out[0] = tiles.block_reduce(x[cuda.threadIdx.x], "%", block_dim=32)

    with pytest.raises(tiles.TilesError, match=r"tiles.block_reduce: op '%' is not supported"):
        kernel[1, 32](np.ones(32, np.float32), np.zeros(1, np.float32))


def test_host_call_says_where_it_runs():
    with pytest.raises(RuntimeError, match="runs only inside a @cuda.jit kernel"):
        tiles.block_sum(1.0, block_dim=32)
