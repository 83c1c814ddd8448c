"""Kernels that draw from a `tiles.Random`, shared by the simulator's and the GPU's tests: every thread its own
generator at ``(seed + thread * seed_step, subsequence = first + thread, offset)``, ``draws`` draws each, all of them
kept; and fills of an array by `Random.fill`, with what its docs say they hold computed from such draws."""

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


VIEWS = {"whole": lambda a: a, "every other": lambda a: a[::2], "one off": lambda a: a[1:]}  # (of a 1-D array)


def fill_kernel(rng, view="whole"):
    """A kernel filling the `VIEWS` ``view`` of its ``out`` (``out`` itself, ``out[::2]``, ``out[1:]``) by
    ``rng.fill``, thread ``t`` of the grid at ``(seed, subsequence = t)``."""
    every_other, one_off = view == "every other", view == "one off"

    @cuda.jit
    def fill(out, seed):
        state = cuda.local.array(rng.state_size, np.uint64)
        rng.init(state, seed, cuda.grid(1))
        if every_other:
            rng.fill(state, out[::2])
        elif one_off:
            rng.fill(state, out[1:])
        else:
            rng.fill(state, out)

    return fill


def view_length(view, size):
    """The length of an array whose `VIEWS` ``view`` holds ``size`` values."""
    return {"whole": size, "every other": 2 * size, "one off": size + 1}[view]


def filled(draws, size, width):
    """What a fill of ``size`` values by ``threads = draws.shape[0]`` threads holds, by `Random.fill`'s docs, from
    ``draws[t, d * width + j]`` (value ``j`` of draw ``d`` of thread ``t``, as `drawing_kernel` keeps them): pack ``p``
    is draw ``p // threads`` of thread ``p % threads``."""
    threads = draws.shape[0]
    packs = -(-size // width)
    p = np.arange(packs)
    by_pack = draws.reshape(threads, -1, width)[p % threads, p // threads]
    return by_pack.ravel()[:size]
