"""How many blocks of a kernel the GPU runs at once: the grid of a persistent kernel."""

import math

from . import _backends
from ._backends import simulated
from ._errors import error

SIMULATED_BLOCKS = 2  # on the simulator, which runs every thread in Python: a grid-stride loop still loops


def resident_blocks(kernel, block_dim, *args, shared_bytes=0):
    """How many blocks of ``kernel``, launched with ``args``, ``block_dim`` threads a block and ``shared_bytes`` of
    dynamic shared memory, the current GPU runs at once: the driver's occupancy query, over all its SMs.

    A kernel whose blocks loop over the work (``for t in range(cuda.blockIdx.x, tiles, cuda.gridDim.x)``)
    launched with this grid keeps every SM busy with no second wave, and adds its block's partial results to
    the output once per block. The kernel is compiled for ``args`` first if it was not. On Numba's simulator
    it is 2.

    Example::

        import numpy as np
        from numba import cuda, float32
        import numba_tiles as tiles

        @cuda.jit
        def total(x, out):
            acc = float32(0)
            for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
                acc += x[i]
            s = tiles.block_sum(acc, block_dim=256)
            if cuda.threadIdx.x == 0:
                cuda.atomic.add(out, 0, s)

        cubin = tiles.compile(total, "void(float32[::1], float32[::1])")   # no GPU needed
        if cuda.is_available():
            x, out = cuda.to_device(np.ones(10000, np.float32)), cuda.to_device(np.zeros(1, np.float32))
            total[tiles.resident_blocks(total, 256, x, out), 256](x, out)
            assert out.copy_to_host()[0] == 10000
    """
    threads = math.prod(block_dim) if isinstance(block_dim, tuple) else block_dim
    if not isinstance(threads, int) or not 0 < threads <= 1024:
        raise error(
            "resident_blocks",
            f"block_dim={block_dim!r} is not a block of 1 to 1024 threads",
            "pass the launch's block shape, e.g. 256 or (16, 16)",
        )
    if simulated.simulator_enabled():
        return SIMULATED_BLOCKS
    return _backends.of_kernel(kernel).resident_blocks(kernel, args, threads, shared_bytes)


def launch_groups(kernel, args, block_dim, shared_memory_bytes, groups, grid, stream):
    """Launch ``kernel`` with ``args`` in blocks of ``block_dim`` over ``groups`` groups of work (a description's
    `launch`: `FFT`'s rows, `Solver`'s problems): the dynamic shared memory its calls need where it is over a
    block's static shared memory (the kernel let to take it), and the grid: by default a block a group,
    ``"resident"`` the blocks the GPU runs at once (at most one a group), or a grid of the caller's."""
    from ._library import STATIC_SHARED_BYTES
    from ._shared_memory import allow_dynamic_shared_memory

    groups = max(groups, 1)
    shared = shared_memory_bytes if shared_memory_bytes > STATIC_SHARED_BYTES else 0
    if shared:
        allow_dynamic_shared_memory(kernel, shared, *args)
    if grid is None:
        grid = groups
    elif grid == "resident":
        grid = max(min(resident_blocks(kernel, block_dim, *args, shared_bytes=shared), groups), 1)
    kernel[grid, block_dim, stream, shared](*args)
