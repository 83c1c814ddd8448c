"""numba_tiles: block-cooperative CUB primitives as single-call intrinsics in ``@cuda.jit`` kernels.

Example::

    from numba import cuda
    import numba_tiles as tiles

    @cuda.jit
    def block_sums(x, out):
        i = cuda.grid(1)
        s = tiles.block_sum(x[i] if i < x.size else 0.0, block_dim=256)
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s
"""

__version__ = "0.1.0"

from . import cache  # noqa: E402
from ._compile import compile, precompile  # noqa: E402
from ._errors import TilesError  # noqa: E402
from .block import block_reduce, block_sum  # noqa: E402

__all__ = ["block_reduce", "block_sum", "compile", "precompile", "cache", "TilesError", "__version__"]
