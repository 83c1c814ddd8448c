"""The same kernels as the GPU tests, on Numba's CUDA simulator, against the same NumPy references."""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles

from ..support import reference


# Every dtype and op in a 1-D block; the 2-D and 3-D blocks (whose threads the twin ranks the same way for any
# dtype) for one integer and one float dtype. (The GPU tests take every pair in every block shape.)
@pytest.mark.parametrize(
    "dtype,op,block_dim",
    [(d, op, 32) for d, op in reference.cases()]
    + [(d, op, b) for d, op in reference.cases(["uint32", "float64"]) for b in ((4, 4), (4, 2, 2))],
    ids=str,
)
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


@pytest.mark.parametrize(
    "dtype,op,warp_size",
    [(d, op, 32) for d, op in reference.cases(["int32", "uint64", "float32"])]
    + [(d, op, w) for d, op in reference.cases(["uint64", "float32"]) for w in (1, 4)],
    ids=str,
)
def test_warp_reduce(dtype, op, warp_size, rng):
    reference.run_warp_case(dtype, op, warp_size, rng, blocks=2, block_dim=64)


@pytest.mark.parametrize("dtype", reference.DTYPES)
def test_warp_sum(dtype, rng):
    reference.run_warp_case(dtype, "+", 16, rng, api="sum", blocks=2, block_dim=48)


def test_warp_reduce_in_a_divergent_branch(rng):
    reference.run_divergent_warp_case(rng, blocks=2)


@pytest.mark.parametrize("items", [1, 3])
@pytest.mark.parametrize("dtype,op", reference.cases(["int64", "float32"]))
def test_block_reduce_items_per_thread(dtype, op, items, rng):
    reference.run_items_case(dtype, op, (4, 4), items, rng)


def test_short_array_is_an_error():
    @cuda.jit
    def kernel(out):
        mine = cuda.local.array(2, np.float32)
        mine[0] = mine[1] = 1.0
        out[0] = tiles.block_sum(mine, block_dim=32, items_per_thread=4)

    with pytest.raises(tiles.TilesError, match="tiles.block_sum: value has 2 items but items_per_thread=4"):
        kernel[1, 32](np.zeros(1, np.float32))
