"""numba_tiles: block-cooperative CUB primitives as single-call intrinsics in ``@cuda.jit`` kernels.

Example::

    from numba import cuda, float32
    import numba_tiles as tiles

    TPB = 256

    @cuda.jit
    def block_sums(x, out):
        i = cuda.grid(1)
        v = x[i] if i < x.size else float32(0)  # (0.0 would make v, and the sum, float64)
        s = tiles.block_reduce(v, "+", block_dim=TPB)   # valid in thread 0, as in CUB
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s
"""

import os as _os

from . import _library, _link, _pch, _programs, cache
from ._backends import numba_cuda_compile, simulated
from ._compile import compile, precompile
from ._errors import TilesError
from ._occupancy import resident_blocks
from ._shared_memory import allow_dynamic_shared_memory, shared_memory, temp_bytes
from ._version import __version__
from .block import (
    block_adjacent_difference,
    block_discontinuity,
    block_exchange,
    block_histogram,
    block_load,
    block_merge_sort,
    block_radix_sort,
    block_reduce,
    block_scan,
    block_shuffle,
    block_store,
    block_sum,
)
from .fft import FFT
from .matmul import Matmul, matmul
from .random import Random
from .solver import Solver
from .tile import tile_load, tile_store, tile_wait
from .warp import warp_reduce, warp_scan, warp_sum

if not simulated.simulator_enabled():
    numba_cuda_compile.link_line_info_with_nvrtc()  # (else @cuda.jit(lineinfo=True) fails to link any intrinsic)
    numba_cuda_compile.cache_kernels_with_intrinsics(_programs.kernel_cache_stamp)  # @cuda.jit(cache=True)
    numba_cuda_compile.link_through(_link.link)  # a kernel's first launch takes its linked cubin from the disk cache
    if _os.environ.get("NUMBA_TILES_PREPARE", "1") != "0" and not numba_cuda_compile.loaded_as_extension():
        # The user's first kernel is about a second away: parse CUB's base headers for this GPU meanwhile
        # (not when numba-cuda's extension loader imports us, in a process that may never use us).
        _pch.prepare_for_current_device(_library.CUB)
else:
    simulated.count_barriers()  # (the twins' check that a warp's lanes all come tells passed barriers apart)

__all__ = [
    "block_load",
    "block_store",
    "block_reduce",
    "block_sum",
    "block_scan",
    "block_exchange",
    "block_histogram",
    "block_radix_sort",
    "block_merge_sort",
    "block_adjacent_difference",
    "block_discontinuity",
    "block_shuffle",
    "warp_reduce",
    "warp_sum",
    "warp_scan",
    "tile_load",
    "tile_store",
    "tile_wait",
    "matmul",
    "Matmul",
    "FFT",
    "Random",
    "Solver",
    "compile",
    "precompile",
    "shared_memory",
    "temp_bytes",
    "allow_dynamic_shared_memory",
    "resident_blocks",
    "cache",
    "TilesError",
    "__version__",
]
