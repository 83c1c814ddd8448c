"""tiles_extras' device functions: each calls a built-in intrinsic and one of tiles_extras' own.

Their block shape is the package's constant ``BLOCK``: a device function's intrinsics are
compiled for the block shape they name, like a kernel's.
"""

from numba import cuda, float32

import numba_tiles as tiles

from . import block_argmax, block_topk

BLOCK = 128  # the block shape these helpers are written for
ITEMS = 4  # items per thread of top_k_mean
K = 8  # how many items top_k_mean averages


@cuda.jit(device=True)
def peak_share(value, index):
    """(the block's largest value, its index, its share of the block's sum), in every thread."""
    total = tiles.block_reduce(value, "+", block_dim=BLOCK, broadcast=True)
    peak, where = block_argmax(value, index, block_dim=BLOCK)
    return peak, where, peak / total


@cuda.jit(device=True)
def top_k_mean(x, start):
    """The mean of the K largest of the block's BLOCK * ITEMS items of ``x`` from ``start``, in every thread."""
    items = cuda.local.array(ITEMS, float32)
    best = cuda.local.array(K, float32)
    tiles.block_load(x[start:], items, block_dim=BLOCK, items_per_thread=ITEMS, algorithm="transpose")
    block_topk(items, best, k=K, block_dim=BLOCK, items_per_thread=ITEMS)
    total = float32(0)
    for j in range(K):
        total += best[j]
    return total / K
