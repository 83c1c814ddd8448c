"""numba_tiles: block-cooperative CUB primitives as single-call intrinsics in ``@cuda.jit`` kernels.

Example::

    from numba import cuda
    import numba_tiles as tiles

    TPB = 256

    @cuda.jit
    def block_sums(x, out):
        i = cuda.grid(1)
        v = x[i] if i < x.size else 0.0
        s = tiles.block_reduce(v, "+", block_dim=TPB)   # valid in thread 0, as in CUB
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s
"""

__version__ = "0.1.0"

from . import cache  # noqa: E402
from ._compile import compile, precompile  # noqa: E402
from ._errors import TilesError  # noqa: E402
from ._shared_memory import shared_memory, temp_bytes  # noqa: E402
from .block import (block_exchange, block_histogram, block_load, block_merge_sort, block_radix_sort,  # noqa: E402
                    block_reduce, block_scan, block_store, block_sum)
from .warp import warp_reduce, warp_scan, warp_sum  # noqa: E402

__all__ = [
    "block_load", "block_store", "block_reduce", "block_sum", "block_scan", "block_exchange",
    "block_histogram", "block_radix_sort", "block_merge_sort", "warp_reduce", "warp_sum", "warp_scan",
    "compile", "precompile", "shared_memory", "temp_bytes", "cache", "TilesError", "__version__",
]
