"""tiles.Random on the GPU: every generator, distribution and dtype draws what the simulator's twins draw for the
same (seed, subsequence, offset) — raw words and uniform values equal, normal values within the fast sine's error —
over many seeds, far subsequences and offsets; and 10^7 draws of each distribution have its mean, spread and shape
(a Kolmogorov-Smirnov test); a fill holds each thread's draws in turn, as its docs say."""

import math

import numpy as np
import pytest

import numba_tiles as tiles
from numba_tiles.random import WIDTHS

from ..support import randoms
from ..support.compiler import cuda
from ..support.randoms import launch_draws, twin_draws

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]

PARAMETERS = {
    ("uniform", "float64"): {"low": -3.0, "high": 5.0},
    ("log_normal", "float32"): {"mean": 0.5, "stddev": 0.5},
}
DESCRIPTIONS = {f"{g} {d} {t}": tiles.Random(g, d, t, **PARAMETERS.get((d, t), {})) for g, d, t in WIDTHS}
NORMAL_BOUND = {"float32": 2e-5, "float64": 1e-12}  # (relative to the value's size, at least 1)


@pytest.mark.parametrize("name", DESCRIPTIONS)
def test_the_gpu_draws_what_the_simulator_draws(name, rng):
    description = DESCRIPTIONS[name]
    for _ in range(4):
        seed = int(rng.integers(0, 2**64, dtype=np.uint64))
        first = int(rng.integers(0, 2**40))
        offset = int(rng.integers(0, 2**40)) if rng.random() < 0.5 else int(rng.integers(0, 8))
        step = int(rng.integers(0, 2**64, dtype=np.uint64)) if rng.random() < 0.5 else 0
        got = launch_draws(description, 96, 3, seed, first, offset, step)
        want = twin_draws(description, 96, 3, seed, first, offset, step)
        if "normal" in description.distribution:
            bound = NORMAL_BOUND[description.dtype] * np.maximum(np.abs(want), 1)
            assert (np.abs(got.astype(np.float64) - want) <= bound).all(), (name, seed, first, offset, step)
        else:
            assert got.tobytes() == want.tobytes(), (name, seed, first, offset, step)


def _normal_cdf(x):
    return 0.5 * (1 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2)))


@pytest.mark.parametrize("name", [n for n in DESCRIPTIONS if "bits" not in n])
def test_ten_million_draws_have_the_distributions_shape(name):
    """Mean and variance within 5 standard errors, and the Kolmogorov-Smirnov distance of the 10^7 draws below its
    0.1% critical value (1.95 / sqrt(n))."""
    description = DESCRIPTIONS[name]
    threads = 2**15
    draws = -(-(10**7) // (threads * description.width))
    # (Philox: a subsequence a thread; PCG: a seed a thread, as the docs advise)
    step = 0x9E3779B97F4A7C15 if description.generator == "pcg" else 0
    values = launch_draws(description, threads, draws, 2026, 0, 0, step).ravel().astype(np.float64)
    n = values.size
    if description.distribution == "uniform":
        low, high = description.parameters
        mean, var = (low + high) / 2, (high - low) ** 2 / 12
        sample = np.sort(values)
        cdf = (sample - low) / (high - low)
        kurtosis = 9 / 5
    elif description.distribution == "normal":
        mean, std = description.parameters
        var, kurtosis = std**2, 3
        sample = np.sort(values)
        cdf = _normal_cdf((sample - mean) / std)
    else:  # log-normal: exp of a normal value of mean mu and deviation s
        mu, s = description.parameters
        mean, var = math.exp(mu + s * s / 2), (math.exp(s * s) - 1) * math.exp(2 * mu + s * s)
        kurtosis = math.exp(4 * s * s) + 2 * math.exp(3 * s * s) + 3 * math.exp(2 * s * s) - 3
        sample = np.sort(values)
        cdf = _normal_cdf((np.log(sample) - mu) / s)
    assert abs(values.mean() - mean) < 5 * math.sqrt(var / n), (values.mean(), mean)
    # (the sample variance's standard error: var * sqrt((kurtosis - 1) / n))
    assert abs(values.var() - var) < 5 * var * math.sqrt((kurtosis - 1) / n) + 1e-9, (values.var(), var)
    m = sample.size
    distance = max(np.max(np.arange(1, m + 1) / m - cdf), np.max(cdf - np.arange(m) / m))
    assert distance < 1.95 / math.sqrt(m), distance


@pytest.mark.parametrize("view", ["whole", "every other", "one off"])
@pytest.mark.parametrize("name", DESCRIPTIONS)
def test_a_fill_holds_each_threads_draws_in_turn(name, view, rng):
    """``Random.fill`` by 5 blocks of 96 threads of a million-odd values (a partial last pack): pack p is draw p //
    480 of thread p % 480, as a kernel's own loop of ``generate`` draws it on the GPU; packs go out as 16-byte
    stores where the array allows, value by value through a strided or misaligned view."""
    description = DESCRIPTIONS[name]
    threads, seed = 5 * 96, int(rng.integers(0, 2**64, dtype=np.uint64))
    size = 10**6 + 3
    length = randoms.view_length(view, size)
    out = cuda.to_device(np.zeros(length, description.dtype))
    randoms.fill_kernel(description, view)[5, 96](out, np.uint64(seed))
    got = randoms.VIEWS[view](out.copy_to_host())
    draws = launch_draws(description, threads, -(-size // (threads * description.width)), seed)
    assert got.tobytes() == randoms.filled(draws, size, description.width).tobytes(), (name, view, seed)
