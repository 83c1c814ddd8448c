"""Kernels that draw from a `tiles.Random`, shared by the simulator's and the GPU's tests: every thread its own
generator at ``(seed + thread * seed_step, subsequence = first + thread, offset)``, ``draws`` draws each, all of them
kept."""

import numpy as np

from .compiler import cuda  # (numba-cuda's, or numba-cuda-mlir's under NUMBA_TILES_TEST_COMPILER=mlir)


def drawing_kernel(rng):
    """``out[t, d * width + j]``: value ``j`` of draw ``d`` of thread ``t`` (``out`` of ``draws * rng.width``
    columns), thread ``t`` at seed ``seed + t * seed_step`` (wrapping at 2^64) and subsequence ``first + t``."""
    item = np.dtype(rng.dtype).type

    @cuda.jit
    def draw(out, seed, seed_step, first, offset):
        t = cuda.grid(1)
        if t < out.shape[0]:
            state = cuda.local.array(rng.state_size, np.uint64)
            rng.init(state, seed + np.uint64(t) * seed_step, first + t, offset)
            values = cuda.local.array(rng.width, item)
            for d in range(out.shape[1] // rng.width):
                rng.generate(state, values)
                for j in range(rng.width):
                    out[t, d * rng.width + j] = values[j]

    return draw


def launch_draws(rng, threads, draws, seed=0, first=0, offset=0, seed_step=0):
    """What `drawing_kernel` writes for ``threads`` threads of ``draws`` draws each (blocks of at most 128 threads),
    as a host array: on the GPU, or the simulator's twins' under NUMBA_ENABLE_CUDASIM=1."""
    out = cuda.device_array((threads, draws * rng.width), np.dtype(rng.dtype))
    block = min(threads, 128)
    drawing_kernel(rng)[-(-threads // block), block](out, np.uint64(seed), np.uint64(seed_step), first, offset)
    return out.copy_to_host()


class _Call:
    intrinsic = "Random (host)"


def twin_draws(rng, threads, draws, seed, first=0, offset=0, seed_step=0):
    """What `drawing_kernel` writes, drawn on the host by the simulator's twins (numba_tiles/_random/twins.py)."""
    from numba_tiles._random import twins

    out = np.zeros((threads, draws * rng.width), np.dtype(rng.dtype))
    for t in range(threads):
        state = np.zeros(rng.state_size, np.uint64)
        twins.init(
            _Call,
            {
                "mm": rng,
                "state": state,
                "seed": (seed + t * seed_step) % 2**64,
                "subsequence": first + t,
                "offset": offset,
            },
        )
        values = np.zeros(rng.width, np.dtype(rng.dtype))
        for d in range(draws):
            twins.generate(_Call, {"mm": rng, "state": state, "out": values})
            out[t, d * rng.width : (d + 1) * rng.width] = values
    return out
