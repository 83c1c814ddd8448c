"""Kernels of an application that uses tiles_extras only through its device functions."""

from numba import cuda

from .tiles_extras import helpers

BLOCK, ITEMS, K = helpers.BLOCK, helpers.ITEMS, helpers.K


@cuda.jit
def peaks(x, peak, where, share):
    """Per block of BLOCK values of x: the largest, its index in x, its share of the block's sum."""
    i = cuda.grid(1)
    p, w, s = helpers.peak_share(x[i], i)
    if cuda.threadIdx.x == 0:
        b = cuda.blockIdx.x
        peak[b], where[b], share[b] = p, w, s


@cuda.jit
def top_means(x, out):
    """Per tile of BLOCK * ITEMS values of x: the mean of its K largest."""
    m = helpers.top_k_mean(x, cuda.blockIdx.x * BLOCK * ITEMS)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = m


# What `tiles.precompile("tests.downstream.kernels")` compiles (python -m numba_tiles precompile ...).
NUMBA_TILES_PRECOMPILE = {
    "peaks": ["void(float32[::1], float32[::1], int32[::1], float32[::1])"],
    "top_means": ["void(float32[::1], float32[::1])"],
}
