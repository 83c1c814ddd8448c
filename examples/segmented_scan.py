"""Prefix sums of many segments, with numba_tiles intrinsics, at the speed of a copy.

``segmented_cumsum(x, seg_len)`` gives the inclusive prefix sum of each run of ``seg_len`` items of
``x`` (a device array; a NumPy array on the simulator), in a new array of ``x``'s shape. The pattern
(docs/guide/scans.md; benchmarks/primitives.py times it):

- One block a segment, with a small tile: 256 threads of 4 items, one 16-byte load and store a thread
  (``block_load``/``block_store``'s default). Small tiles leave registers for many blocks per SM, whose
  loads stay in flight while others scan.
- ``block_scan`` with ``prefix=``: the running total carries the segment's sum from tile to tile.
- A segment that is not a whole number of tiles ends in a partial tile: its loads fill the missing items
  with the sum's identity (``oob_default=0``), and its store writes only the items that exist.

    python examples/segmented_scan.py      # checks against NumPy (NUMBA_ENABLE_CUDASIM=1: on the CPU, small)
"""

import numpy as np
from numba import cuda, float32

import numba_tiles as tiles

BLOCK = 256  # threads per block
ITEMS = 4  # float32 items per thread: one 16-byte load
TILE = BLOCK * ITEMS


@cuda.jit
def cumsum_kernel(x, y, seg_len):
    items = cuda.local.array(ITEMS, float32)
    running = cuda.local.array(1, float32)  # the segment's sum so far, the same in every thread
    running[0] = 0
    start = cuda.blockIdx.x * seg_len
    for at in range(start, start + seg_len, TILE):
        n = start + seg_len - at  # items of the segment from here on (a partial last tile: fewer than TILE)
        tiles.block_load(x[at:], items, block_dim=BLOCK, items_per_thread=ITEMS, num_valid=n, oob_default=0)
        tiles.block_scan(items, block_dim=BLOCK, items_per_thread=ITEMS, prefix=running)
        tiles.block_store(y[at:], items, block_dim=BLOCK, items_per_thread=ITEMS, num_valid=n)


def segmented_cumsum(x, seg_len, out=None):
    """The inclusive prefix sums of ``x``'s runs of ``seg_len`` items (``x.size`` a multiple of it), into ``out``."""
    if x.size % seg_len:
        raise ValueError(f"{x.size} items are not a whole number of segments of {seg_len}")
    if out is None:
        out = np.empty_like(x) if cuda.config.ENABLE_CUDASIM else cuda.device_array_like(x)
    cumsum_kernel[x.size // seg_len, BLOCK](x, out, seg_len)
    return out


if __name__ == "__main__":
    rng = np.random.default_rng()
    seg_len, count = (1500, 4) if cuda.config.ENABLE_CUDASIM else (4096, 2**18)
    data = rng.standard_normal(seg_len * count, dtype=np.float32)
    out = segmented_cumsum(data if cuda.config.ENABLE_CUDASIM else cuda.to_device(data), seg_len)
    got = (out if cuda.config.ENABLE_CUDASIM else out.copy_to_host()).reshape(count, seg_len)
    want = np.cumsum(data.reshape(count, seg_len).astype(np.float64), axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(seg_len))
    print(f"prefix sums of {count} segments of {seg_len}: match NumPy")
