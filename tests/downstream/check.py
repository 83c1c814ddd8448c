"""Runs of tiles_extras' kernels on fresh random data, checked against NumPy (simulator and GPU tests)."""

import numpy as np
from numba import cuda

from . import kernels
from .tiles_extras import block_argmax, block_topk, warp_argmax


def _ties(rng, n, dtype):
    """Values with many equal ones (so that the smallest index must win), in ``dtype``."""
    if np.dtype(dtype).kind == "f":
        return rng.integers(-20, 20, n).astype(dtype) / dtype(4)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -20), min(info.max, 20), n, endpoint=True).astype(dtype)


def peaks(rng, blocks=5):
    """The helpers' block argmax with a built-in block sum, against NumPy."""
    x = rng.random(blocks * kernels.BLOCK).astype(np.float32) + np.float32(0.5)
    peak, where, share = (np.zeros(blocks, t) for t in (np.float32, np.int32, np.float32))
    kernels.peaks[blocks, kernels.BLOCK](x, peak, where, share)
    tiles_ = x.reshape(blocks, kernels.BLOCK)
    np.testing.assert_array_equal(where, tiles_.argmax(axis=1) + np.arange(blocks) * kernels.BLOCK)
    np.testing.assert_array_equal(peak, tiles_.max(axis=1))
    np.testing.assert_allclose(share, tiles_.max(axis=1) / tiles_.sum(axis=1, dtype=np.float64), rtol=1e-5)


def top_means(rng, blocks=3):
    """The helpers' built-in block load then tiles_extras' top-k, against NumPy."""
    per_block = kernels.BLOCK * kernels.ITEMS
    x = rng.standard_normal(blocks * per_block).astype(np.float32)
    out = np.zeros(blocks, np.float32)
    kernels.top_means[blocks, kernels.BLOCK](x, out)
    expected = -np.sort(-x.reshape(blocks, per_block), axis=1)[:, : kernels.K].mean(axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def argmax(rng, dtype, block_dim):
    """block_argmax called directly, every thread checked, on values with ties."""
    threads = int(np.prod(block_dim))

    @cuda.jit
    def kernel(x, values, indices):
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        i = cuda.blockIdx.x * threads + t
        v, j = block_argmax(x[i], i, block_dim=block_dim)
        values[i], indices[i] = v, j

    blocks = 3
    x = _ties(rng, blocks * threads, dtype)
    values, indices = np.zeros_like(x), np.zeros(x.size, np.int32)
    kernel[blocks, block_dim](x, values, indices)
    tiles_ = x.reshape(blocks, threads)
    best = np.repeat(tiles_.argmax(axis=1) + np.arange(blocks) * threads, threads)  # argmax: first of ties
    np.testing.assert_array_equal(indices, best)
    np.testing.assert_array_equal(values, x[best])


def topk(rng, dtype, block_dim, items_per_thread, k):
    """block_topk called directly: every thread's ``out`` is the block's k largest, descending."""
    threads = int(np.prod(block_dim))
    per_block = threads * items_per_thread

    @cuda.jit
    def kernel(x, out):
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        items = cuda.local.array(items_per_thread, dtype)
        best = cuda.local.array(k, dtype)
        for j in range(items_per_thread):
            items[j] = x[cuda.blockIdx.x * per_block + t * items_per_thread + j]
        block_topk(items, best, k=k, block_dim=block_dim, items_per_thread=items_per_thread)
        for j in range(k):
            out[(cuda.blockIdx.x * threads + t) * k + j] = best[j]

    blocks = 2
    x = _ties(rng, blocks * per_block, dtype)
    out = np.zeros(blocks * threads * k, dtype)
    kernel[blocks, block_dim](x, out)
    expected = -np.sort(-x.reshape(blocks, per_block).astype(np.float64), axis=1)[:, :k]
    np.testing.assert_array_equal(out.reshape(blocks, threads, k), np.repeat(expected[:, None, :], threads, axis=1))


def warp_peaks(rng, dtype, warp_size, threads=96):
    """warp_argmax over each logical warp of a block of ``threads``, read in each warp's lane 0, on values with ties."""

    @cuda.jit
    def kernel(x, values, indices):
        i = cuda.threadIdx.x
        v, j = warp_argmax(x[i], i, warp_size=warp_size)
        if i % warp_size == 0:
            values[i // warp_size], indices[i // warp_size] = v, j

    x = _ties(rng, threads, dtype)
    values, indices = np.zeros(threads // warp_size, x.dtype), np.zeros(threads // warp_size, np.int32)
    kernel[1, threads](x, values, indices)
    groups = x.reshape(-1, warp_size)
    best = groups.argmax(axis=1) + np.arange(len(groups)) * warp_size
    np.testing.assert_array_equal(indices, best)
    np.testing.assert_array_equal(values, x[best])
