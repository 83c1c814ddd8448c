"""Pi by Monte Carlo in one kernel: points drawn by cuRANDDx's Philox in registers, counted, reduced by the block.

``estimate_pi(points)`` draws ``points`` points in the unit square and counts those inside the quarter circle,
without ever storing a sample: each thread of the grid (a block for each ``POINTS_A_BLOCK`` points) starts its own
Philox subsequence (``RNG.init(state, SEED, thread)``) and draws 4 floats at a time (two points), counting in a
register; the block sums its threads' counts with ``tiles.block_sum`` and one atomic add a block gives the total. The
same seed gives the same count on every GPU and on the simulator (whose twin steps the same generator).

    python examples/monte_carlo.py      # 2^32 points (NUMBA_ENABLE_CUDASIM=1: on the CPU, 2^12)
"""

import math

import numpy as np
from numba import cuda, float32, int64, uint64

import numba_tiles as tiles

RNG = tiles.Random("philox", "uniform", "float32")
SEED = 2026
TPB = 32 if cuda.config.ENABLE_CUDASIM else 256  # threads a block
DRAWS = 4 if cuda.config.ENABLE_CUDASIM else 256  # draws a thread: 2 points each
POINTS_A_BLOCK = TPB * DRAWS * RNG.width // 2


@cuda.jit
def count_inside(draws, total):
    thread = cuda.grid(1)
    state = cuda.local.array(RNG.state_size, uint64)
    RNG.init(state, SEED, thread)  # a subsequence a thread: independent streams
    values = cuda.local.array(RNG.width, float32)
    inside = int64(0)
    for _ in range(draws):
        RNG.generate(state, values)
        for p in range(0, RNG.width, 2):
            x, y = values[p], values[p + 1]
            inside += x * x + y * y <= 1
    block = tiles.block_sum(inside, block_dim=TPB)  # valid in thread 0
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(total, 0, block)


def count(points, total):
    """Add the count of ``points`` points inside the quarter circle to ``total[0]`` (``points`` a multiple of
    ``POINTS_A_BLOCK``): one launch, a block for each ``POINTS_A_BLOCK`` points."""
    blocks = points // POINTS_A_BLOCK
    if blocks * POINTS_A_BLOCK != points:
        raise ValueError(f"points must be a multiple of {POINTS_A_BLOCK}")
    count_inside[blocks, TPB](DRAWS, total)


def estimate_pi(points):
    """4 x the share of ``points`` uniform points of the unit square inside the quarter circle."""
    total = np.zeros(1, np.int64) if cuda.config.ENABLE_CUDASIM else cuda.to_device(np.zeros(1, np.int64))
    count(points, total)
    inside = total[0] if cuda.config.ENABLE_CUDASIM else total.copy_to_host()[0]
    return 4 * inside / points


def standard_error(points):
    """The estimate's standard error from ``points`` points: 4 sqrt(p (1 - p) / n) for p = pi / 4."""
    return 4 * math.sqrt(math.pi / 4 * (1 - math.pi / 4) / points)


if __name__ == "__main__":
    points = 2**12 if cuda.config.ENABLE_CUDASIM else 2**32
    pi = estimate_pi(points)
    error = standard_error(points)
    assert abs(pi - math.pi) < 5 * error, (pi, math.pi, error)
    print(f"pi ~ {pi:.8f} from {points} points: matches math.pi within 5 standard errors ({5 * error:.1e})")
