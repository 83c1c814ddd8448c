"""A ``@cuda.jit(cache=True)`` kernel that calls a built-in and a downstream intrinsic (tests/gpu/test_kernel_cache.py
runs it in fresh processes: ``python -m tests.downstream.cached SEED [--uncached]`` prints what the first launch
took; ``--uncached``: a plain ``@cuda.jit``)."""

import json
import sys
import time

start = time.perf_counter()

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

import numba_tiles as tiles  # noqa: E402

from .tiles_extras import block_argmax  # noqa: E402

BLOCK = 128


@cuda.jit(cache="--uncached" not in sys.argv)
def sum_and_peak(x, sums, where):
    i = cuda.grid(1)
    s = tiles.block_sum(x[i], block_dim=BLOCK)
    v, j = block_argmax(x[i], i, block_dim=BLOCK)
    if cuda.threadIdx.x == 0:
        sums[cuda.blockIdx.x], where[cuda.blockIdx.x] = s, j


def main(seed):
    blocks = 7
    x = np.random.default_rng(seed).random(blocks * BLOCK).astype(np.float32)
    sums, where = np.zeros(blocks, np.float32), np.zeros(blocks, np.int32)
    sum_and_peak[blocks, BLOCK](x, sums, where)
    first_launch = time.perf_counter() - start
    tiles_ = x.reshape(blocks, BLOCK)
    correct = bool(
        np.allclose(sums, tiles_.sum(axis=1), rtol=1e-5)
        and (where == tiles_.argmax(axis=1) + np.arange(blocks) * BLOCK).all()
    )
    stats = sum_and_peak.stats
    print(
        json.dumps(
            {
                "seconds_to_first_launch": first_launch,
                "correct": correct,
                "numba_cache_hits": sum(stats.cache_hits.values()),
                "numba_compiles": sum(stats.cache_misses.values()),
                "nvrtc": tiles.cache.stats()["nvrtc"],
                "links": tiles.cache.stats()["links"],
            }
        )
    )


if __name__ == "__main__":
    main(int(sys.argv[1]))
