"""tiles.Random on Numba's simulator: its twins' draws against values computed here from Philox's published answers
and a plain PCG, subsequences and offsets as cuRANDDx counts them, and the distributions' shapes."""

import numpy as np
import pytest
from numba import cuda, float32, uint64

import numba_tiles as tiles
from numba_tiles._random import twins

from ..support import randoms
from ..support.randoms import launch_draws

KEY0_COUNTER0 = [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]  # Random123: Philox4x32-10 of key 0, counter 0


def test_philox_bits_and_uniform_values_are_the_published_words():
    bits = launch_draws(tiles.Random("philox", "bits"), 1, 1)
    assert bits[0].tolist() == KEY0_COUNTER0
    uniform = launch_draws(tiles.Random("philox", "uniform", "float32"), 1, 1)
    want = np.array(KEY0_COUNTER0, np.float32) * np.float32(2.0**-32) + np.float32(2.0**-33)
    assert uniform[0].tolist() == want.tolist()
    doubles = launch_draws(tiles.Random("philox", "uniform", "float64", low=-2.0, high=2.0), 1, 1)
    a, b, c, d = KEY0_COUNTER0
    unit = [((x ^ (y << 21)) * 2.0**-53 + 2.0**-54) for x, y in ((a, b), (c, d))]
    assert doubles[0].tolist() == [u * 4.0 - 2.0 for u in unit]


def test_subsequences_and_offsets_move_the_philox_counter():
    rng = tiles.Random("philox", "bits")
    seed = 0x1234_5678_9ABC_DEF0
    out = launch_draws(rng, 3, 2, seed=seed, first=5, offset=7)
    key = [seed & 0xFFFFFFFF, seed >> 32]
    for t in range(3):  # thread t: subsequence 5 + t (the counter's upper half), offset 7 draws (its lower half)
        assert out[t, :4].tolist() == twins.philox([7, 0, 5 + t, 0], key)
        assert out[t, 4:].tolist() == twins.philox([8, 0, 5 + t, 0], key)
    ahead = launch_draws(rng, 1, 1, seed=seed, first=5, offset=8)
    assert ahead[0].tolist() == out[0, 4:].tolist()


def test_pcg_skips_ahead_as_stepping_does():
    """PCG's offset (by squaring, as cuRANDDx) lands where stepping the LCG one word at a time does."""
    seed, subsequence = 987654321, 3
    stream = (subsequence * 2 + twins.PCG_INCREMENT) & twins.M64
    state, expected = seed, []
    for _ in range(6):
        old = state
        state = (old * twins.PCG_MULTIPLIER + stream) & twins.M64
        shifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        expected.append(((shifted >> rot) | (shifted << (-rot & 31))) & 0xFFFFFFFF)
    out = launch_draws(tiles.Random("pcg", "bits"), 1, 4, seed=seed, first=subsequence, offset=2)
    assert out[0].tolist() == expected[2:]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_values_have_their_mean_and_spread(dtype):
    rng = tiles.Random("philox", "normal", dtype, mean=3.0, stddev=2.0)
    out = launch_draws(rng, 64, 64 // rng.width, seed=11)
    values = out.ravel()
    assert abs(values.mean() - 3.0) < 0.15 and abs(values.std() - 2.0) < 0.15
    assert len({row.tobytes() for row in out}) == len(out)  # (every thread its own stream)


def test_log_normal_values_are_exp_of_the_normal_values_of_the_same_stream():
    normal = launch_draws(tiles.Random("philox", "normal", "float64", mean=0.5, stddev=0.25), 8, 3, seed=5)
    log_normal = launch_draws(tiles.Random("philox", "log_normal", "float64", mean=0.5, stddev=0.25), 8, 3, seed=5)
    np.testing.assert_allclose(log_normal, np.exp(normal), rtol=1e-15)


def test_a_state_too_small_is_refused():
    rng = tiles.Random()

    @cuda.jit
    def small(out):
        state = cuda.local.array(2, uint64)
        rng.init(state, 1)
        values = cuda.local.array(rng.width, float32)
        rng.generate(state, values)
        out[0] = values[0]

    with pytest.raises(tiles.TilesError, match=r"a generator needs 4 uint64"):
        small[1, 1](np.zeros(1, np.float32))


def test_pcg_subsequences_of_one_seed_begin_alike():
    """cuRANDDx starts every PCG subsequence of a seed at the seed's state, each with its own increment: their first
    words are one, and so are the next while the increments' differences stay out of the state's high bits (hence
    the docs' advice: PCG threads take seeds of their own)."""
    out = launch_draws(tiles.Random("pcg", "bits"), 4, 4, seed=99)
    assert [len(set(out[:, d].tolist())) for d in range(4)] == [1, 1, 4, 4]


@pytest.mark.parametrize("view", ["whole", "every other", "one off"])
@pytest.mark.parametrize(
    "generator, distribution, dtype", [("philox", "uniform", "float32"), ("philox", "normal", "float64")]
)
def test_a_fill_holds_each_threads_draws_in_turn(generator, distribution, dtype, view):
    """``Random.fill`` of 2 x 3 threads over an array whose size leaves a partial last pack: pack p is draw p // 6
    of thread p % 6, as a kernel's own loop of ``generate`` draws them; through a strided or offset view too."""
    rng = tiles.Random(generator, distribution, dtype)
    size = 6 * 3 * rng.width + 1  # (in the view)
    length = randoms.view_length(view, size)
    out = np.zeros(length, dtype)
    randoms.fill_kernel(rng, view)[2, 3](out, np.uint64(11))
    draws = randoms.launch_draws(rng, 6, 4, seed=11)
    np.testing.assert_array_equal(randoms.VIEWS[view](out), randoms.filled(draws, size, rng.width))
    assert view != "every other" or not out[1::2].any()
