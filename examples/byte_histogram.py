"""A 256-bin histogram of bytes, with numba_tiles intrinsics, ahead of CUB's DeviceHistogram.

``byte_histogram(x)`` counts the uint8 values of ``x`` (a device array; a NumPy array on the simulator)
and returns the 256 counts. The pattern (docs/guide/histogram.md; benchmarks/primitives.py times it):

- As many blocks as the GPU runs at once (``tiles.resident_blocks``), each counting every grid-th tile
  into its own shared counters, then adding them to the global histogram once: one global atomic per
  bin per block, not one per byte.
- 512 threads of 32 bytes each a tile: two 16-byte loads a thread (``block_load``'s default).
- ``block_histogram``'s default algorithm for 256 bins, ``"lanes"``: a copy of the counters per lane
  of a warp, so that a warp's 32 shared atomics never collide in a memory bank.
- The bytes after the last whole tile are counted with shared atomics by the threads of block 0.

    python examples/byte_histogram.py      # checks against NumPy (NUMBA_ENABLE_CUDASIM=1: on the CPU, small)
"""

import numpy as np
from numba import cuda, uint8, uint32

import numba_tiles as tiles

BLOCK = 512  # threads per block
ITEMS = 32  # bytes per thread per tile
TILE = BLOCK * ITEMS
BINS = 256


@cuda.jit
def histogram_kernel(x, out):
    items = cuda.local.array(ITEMS, uint8)
    counts = cuda.shared.array(BINS, uint32)
    for b in range(cuda.threadIdx.x, BINS, BLOCK):
        counts[b] = 0
    cuda.syncthreads()
    whole = x.size // TILE
    for t in range(cuda.blockIdx.x, whole, cuda.gridDim.x):  # every thread of the block makes each call
        tiles.block_load(x[t * TILE :], items, block_dim=BLOCK, items_per_thread=ITEMS)
        tiles.block_histogram(items, counts, block_dim=BLOCK, items_per_thread=ITEMS, bins=BINS, accumulate=True)
    if cuda.blockIdx.x == 0:  # the bytes after the last whole tile
        for i in range(whole * TILE + cuda.threadIdx.x, x.size, BLOCK):
            cuda.atomic.add(counts, x[i], 1)
        cuda.syncthreads()
    for b in range(cuda.threadIdx.x, BINS, BLOCK):
        cuda.atomic.add(out, b, counts[b])


def byte_histogram(x, out=None):
    """The 256 counts of the bytes of ``x``, added to ``out`` if given (a zeroed array of 256 uint32 otherwise)."""
    if out is None:
        out = np.zeros(BINS, np.uint32) if cuda.config.ENABLE_CUDASIM else cuda.to_device(np.zeros(BINS, np.uint32))
    histogram_kernel[tiles.resident_blocks(histogram_kernel, BLOCK, x, out), BLOCK](x, out)
    return out


if __name__ == "__main__":
    rng = np.random.default_rng()
    size = 3 * TILE + 1000 if cuda.config.ENABLE_CUDASIM else 2**30 + 1000
    data = rng.integers(0, 256, size, dtype=np.uint8)
    counts = byte_histogram(data if cuda.config.ENABLE_CUDASIM else cuda.to_device(data))
    got = counts if cuda.config.ENABLE_CUDASIM else counts.copy_to_host()
    np.testing.assert_array_equal(got, np.bincount(data, minlength=BINS))
    print(f"256-bin histogram of {size} bytes: matches NumPy")
