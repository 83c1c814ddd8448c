"""block_reduce / block_sum on the GPU against NumPy: every dtype × op × block shape, with and without num_valid."""

import numpy as np
import pytest

import numba_tiles as tiles

from ..support import reference
from ..support.compiler import MLIR, cuda

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]


@pytest.mark.parametrize("block_dim", reference.BLOCK_DIMS, ids=str)
@pytest.mark.parametrize("dtype,op", reference.cases())
def test_block_reduce(dtype, op, block_dim, rng):
    reference.run_case(dtype, op, block_dim, rng)


@pytest.mark.parametrize("block_dim", reference.BLOCK_DIMS, ids=str)
@pytest.mark.parametrize("dtype", reference.DTYPES)
def test_block_sum(dtype, block_dim, rng):
    reference.run_case(dtype, "+", block_dim, rng, api="sum")


@pytest.mark.parametrize("dtype,op", reference.cases())
def test_op_spelled_as_python_function(dtype, op, rng):
    reference.run_case(dtype, op, 256, rng, api="spelled")


def test_back_to_back_calls_share_temp_storage(rng):
    """Two calls of one instantiation in a row must not race on CUB's shared temp storage."""

    @cuda.jit
    def twice(x, out):
        i = cuda.grid(1)
        a = tiles.block_sum(x[i], block_dim=128)
        b = tiles.block_sum(x[i] * 2, block_dim=128)
        c = tiles.block_sum(x[i] * 3, block_dim=128)
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x, 0] = a
            out[cuda.blockIdx.x, 1] = b
            out[cuda.blockIdx.x, 2] = c

    x = rng.integers(-1000, 1000, 128 * 512).astype(np.int64)
    out = np.zeros((512, 3), np.int64)
    twice[512, 128](x, out)
    s = x.reshape(512, 128).sum(axis=1)
    np.testing.assert_array_equal(out, np.stack([s, 2 * s, 3 * s], axis=1))


def test_device_function_helper(rng):
    @cuda.jit(device=True)
    def tile_max(v):
        return tiles.block_reduce(v, "max", block_dim=(8, 8))

    @cuda.jit
    def kernel(x, out):
        t = cuda.threadIdx.x + 8 * cuda.threadIdx.y
        m = tile_max(x[cuda.blockIdx.x * 64 + t])
        if t == 0:
            out[cuda.blockIdx.x] = m

    x = rng.standard_normal(64 * 100).astype(np.float32)
    out = np.zeros(100, np.float32)
    kernel[100, (8, 8)](x, out)
    np.testing.assert_array_equal(out, x.reshape(100, 64).max(axis=1))


@pytest.mark.parametrize("warp_size", reference.WARP_SIZES)
@pytest.mark.parametrize("dtype,op", reference.cases())
def test_warp_reduce(dtype, op, warp_size, rng):
    reference.run_warp_case(dtype, op, warp_size, rng)


@pytest.mark.parametrize("warp_size", reference.WARP_SIZES)
@pytest.mark.parametrize("dtype", reference.DTYPES)
def test_warp_sum(dtype, warp_size, rng):
    reference.run_warp_case(dtype, "+", warp_size, rng, api="sum")


def test_warp_reduce_in_a_divergent_branch(rng):
    reference.run_divergent_warp_case(rng, blocks=16)


@pytest.mark.parametrize("items", reference.ITEMS_PER_THREAD)
@pytest.mark.parametrize("dtype,op", reference.cases())
def test_block_reduce_items_per_thread(dtype, op, items, rng):
    reference.run_items_case(dtype, op, 128, items, rng)


@pytest.mark.parametrize("block_dim", reference.BLOCK_DIMS, ids=str)
@pytest.mark.parametrize("algorithm", reference.ALGORITHMS)
@pytest.mark.parametrize("dtype,op", [("int32", "+"), ("uint64", "^"), ("float32", "max"), ("float64", "+")])
def test_block_reduce_algorithms(dtype, op, algorithm, block_dim, rng):
    reference.run_items_case(dtype, op, block_dim, 3, rng, algorithm=algorithm)


@pytest.mark.parametrize("block_dim", [128, (8, 8, 4)], ids=str)
@pytest.mark.parametrize("dtype,op", reference.cases(reference.SMALL_AND_COMPLEX))
def test_block_reduce_small_and_complex_types(dtype, op, block_dim, rng):
    reference.run_case(dtype, op, block_dim, rng)
    reference.run_items_case(dtype, op, block_dim, 4, rng)


@pytest.mark.parametrize("warp_size", [4, 32])
@pytest.mark.parametrize("dtype,op", reference.cases(reference.SMALL_AND_COMPLEX))
def test_warp_reduce_small_and_complex_types(dtype, op, warp_size, rng):
    reference.run_warp_case(dtype, op, warp_size, rng)


def load_reduce_scan(x, sums, prefix):
    items = cuda.local.array(3, np.float32)
    tiles.block_load(x[cuda.blockIdx.x * 384 :], items, block_dim=128, items_per_thread=3)
    total = tiles.block_reduce(items, "+", block_dim=128, items_per_thread=3)
    running = tiles.block_scan(items[0], "+", block_dim=128)
    if cuda.threadIdx.x == 0:
        sums[cuda.blockIdx.x] = total
    prefix[cuda.blockIdx.x * 128 + cuda.threadIdx.x] = running


def check_load_reduce_scan(kernel, rng, blocks=7):
    """Launch ``kernel`` (load_reduce_scan's arguments and results) on 128-thread blocks; check against NumPy."""
    x = rng.integers(-8, 8, blocks * 384).astype(np.float32)  # small integers: exact sums in any order
    sums, prefix = np.zeros(blocks, np.float32), np.zeros(blocks * 128, np.float32)
    kernel[blocks, 128](x, sums, prefix)
    per_thread = x.reshape(blocks, 128, 3)
    np.testing.assert_array_equal(sums, per_thread.sum(axis=(1, 2)))
    np.testing.assert_array_equal(prefix, np.cumsum(per_thread[:, :, 0], axis=1).ravel())


@pytest.mark.parametrize("debug", [{"debug": True, "opt": False}, {"debug": True, "opt": False, "lto": True}], ids=str)
def test_debug_build_is_refused_then_lineinfo_build_runs(debug, rng):
    """A debug build of a load + reduce + scan kernel (the one that stored blockIdx.x for the sum on the
    H200) is refused at compile time; the lineinfo build (what profiling turns on) then gives the
    plain build's results, in the same process."""
    with pytest.raises(tiles.TilesError, match=r"^tiles\.block_load: debug builds \(debug=True\)"):
        check_load_reduce_scan(cuda.jit(**debug)(load_reduce_scan), rng)
    check_load_reduce_scan(cuda.jit(lineinfo=True)(load_reduce_scan), rng)


@cuda.jit(device=True)
def block_total(x):
    items = cuda.local.array(3, np.float32)
    tiles.block_load(x[cuda.blockIdx.x * 384 :], items, block_dim=128, items_per_thread=3)
    return tiles.block_reduce(items, "+", block_dim=128, items_per_thread=3)


@cuda.jit(device=True)
def block_running(x):
    return tiles.block_scan(x[cuda.blockIdx.x * 384 + cuda.threadIdx.x * 3], "+", block_dim=128)


def totals_through_helpers(x, sums, prefix):
    total = block_total(x)
    running = block_running(x)
    if cuda.threadIdx.x == 0:
        sums[cuda.blockIdx.x] = total
    prefix[cuda.blockIdx.x * 128 + cuda.threadIdx.x] = running


@pytest.mark.skipif(
    MLIR,
    reason="numba-cuda-mlir types a debug kernel's device functions as debug code too, "
    "which the refusal covers (a TilesError naming the fix)",
)
def test_debug_kernel_calling_non_debug_helpers_runs(rng):
    """What the refusal lets through: a debug kernel whose intrinsics sit in non-debug device functions
    (typed, and built, without debug). The sum is stored after both calls, the shape whose store
    ptxas's debug code got wrong."""
    check_load_reduce_scan(cuda.jit(debug=True, opt=False)(totals_through_helpers), rng)
