"""Sorting many short segments, with numba_tiles intrinsics, ahead of torch.sort and CUB's segmented sort.

``segmented_sort(x, seg_len)`` sorts each run of ``seg_len`` items of ``x`` (a device array; a NumPy
array on the simulator) into a new array, for segments of up to ``BLOCK * ITEMS`` items. The pattern
(docs/guide/sorts.md; benchmarks/primitives.py times it):

- One block a segment: the whole segment is one tile, sorted in shared memory by ``block_radix_sort``
  and stored back, one read and one write of the data.
- 128 threads of 16 items: 64-byte loads and stores a thread (``block_load``'s default, 16-byte words).
- A shorter segment is a partial tile: the missing items load as the largest key (``oob_default``),
  so they sort last, and the store writes only the segment's items.

    python examples/segmented_sort.py      # checks against NumPy (NUMBA_ENABLE_CUDASIM=1: on the CPU, small)
"""

import numpy as np
from numba import cuda, int32

import numba_tiles as tiles

BLOCK = 128  # threads per block
ITEMS = 16  # int32 keys per thread
TILE = BLOCK * ITEMS  # the longest segment
LARGEST = np.iinfo(np.int32).max


@cuda.jit
def sort_kernel(x, y, seg_len):
    keys = cuda.local.array(ITEMS, int32)
    start = cuda.blockIdx.x * seg_len
    tiles.block_load(x[start:], keys, block_dim=BLOCK, items_per_thread=ITEMS, num_valid=seg_len, oob_default=LARGEST)
    tiles.block_radix_sort(keys, block_dim=BLOCK, items_per_thread=ITEMS)
    tiles.block_store(y[start:], keys, block_dim=BLOCK, items_per_thread=ITEMS, num_valid=seg_len)


def segmented_sort(x, seg_len, out=None):
    """``x``'s runs of ``seg_len`` int32 keys (``x.size`` a multiple of it; at most ``TILE``), each sorted,
    in ``out``."""
    if x.size % seg_len or not 0 < seg_len <= TILE:
        raise ValueError(f"{x.size} items are not a whole number of segments of 1 to {TILE} items")
    if out is None:
        out = np.empty_like(x) if cuda.config.ENABLE_CUDASIM else cuda.device_array_like(x)
    sort_kernel[x.size // seg_len, BLOCK](x, out, seg_len)
    return out


if __name__ == "__main__":
    rng = np.random.default_rng()
    seg_len, count = (1000, 3) if cuda.config.ENABLE_CUDASIM else (2048, 2**17)
    data = rng.integers(-(2**31), 2**31 - 1, seg_len * count, dtype=np.int32)
    out = segmented_sort(data if cuda.config.ENABLE_CUDASIM else cuda.to_device(data), seg_len)
    got = (out if cuda.config.ENABLE_CUDASIM else out.copy_to_host()).reshape(count, seg_len)
    np.testing.assert_array_equal(got, np.sort(data.reshape(count, seg_len), axis=1))
    print(f"{count} segments of {seg_len} sorted: match NumPy")
