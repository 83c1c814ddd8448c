"""tiles.FFT on the GPU against NumPy's transforms of fresh random data: every kind in both precisions, sizes from 2
to the largest cuFFTDx computes on this GPU (powers of two and others), several FFTs a block, zero-padded partial
loads, and forward-inverse round trips in place; examples/fft_convolution.py against numpy.convolve."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles

from ..support import ffts

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]

ROOT = Path(__file__).resolve().parents[2]
ARCH = "sm_%d%d" % cuda.get_current_device().compute_capability if cuda.is_available() else "sm_90"
WANTED = (2, 3, 7, 12, 32, 100, 128, 243, 625, 1000, 1024, 2048, 4096, 8192, 16384, 32768)
COMPLEX = {"float32": "complex64", "float64": "complex128"}


def sizes(precision):
    """The sizes above that cuFFTDx computes on this GPU in ``precision``, and its largest."""
    supported = tiles.FFT.supported_sizes(precision, ARCH)
    return sorted({s for s in WANTED if s in supported} | {supported[-1]})


CASES = [(kind, p, size) for p in ("float32", "float64") for kind in ("c2c", "r2c", "c2r") for size in sizes(p)]


def rows_for(fft):
    """Rows that leave the last block part-filled, fewer for large sizes."""
    return max(3 * fft.ffts_per_block + 1, 4) if fft.size <= 4096 else 5


@pytest.mark.parametrize("kind, precision, size", CASES)
def test_transforms_match_numpy(kind, precision, size, rng):
    fft = tiles.FFT(size, COMPLEX[precision] if kind == "c2c" else precision, kind=kind)
    x, y, expected = ffts.case(rng, fft, rows_for(fft))
    got = ffts.launch(ffts.transform_kernel(fft), fft, x, y)
    assert ffts.error(got, expected) < ffts.BOUND[precision] * (4 if precision == "float32" else 1)


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("size, ffts_per_block", [(64, 1), (64, 5), (100, 2), (1024, 4), (1000, 1)])
def test_ffts_a_block_of_any_count(precision, size, ffts_per_block, rng):
    fft = tiles.FFT(size, COMPLEX[precision], direction="inverse", ffts_per_block=ffts_per_block)
    x, y, expected = ffts.case(rng, fft, 3 * ffts_per_block + 2)
    got = ffts.launch(ffts.transform_kernel(fft), fft, x, y)
    assert ffts.error(got, expected) < ffts.BOUND[precision]


@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
@pytest.mark.parametrize("size, length", [(128, 1), (128, 50), (1000, 999), (4096, 3000)])
def test_partial_loads_read_zeros_past_the_end(kind, size, length, rng):
    fft = tiles.FFT(size, "complex64" if kind == "c2c" else "float32", kind=kind)
    length = min(length, size // 2 + 1) if kind == "c2r" else length
    x, y, expected = ffts.case(rng, fft, 2 * fft.ffts_per_block + 1, length)
    got = ffts.launch(ffts.transform_kernel(fft, length=length), fft, x, y)
    assert ffts.error(got, expected) < 4 * ffts.BOUND["float32"]


@pytest.mark.parametrize("kind", ["r2c", "c2r"])
@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("size", [64, 100, 4096])
def test_sequences_not_aligned_to_two_values_move_value_by_value(kind, precision, size, rng):
    """``x[row, 1:]`` and ``y[row, 1:]``: for a folded FFT (powers of two) the real side is held in pairs, which a
    whole row moves two values at a time; a row one value off that alignment must move value by value."""
    fft = tiles.FFT(size, precision, kind=kind)
    x, y, expected = ffts.case(rng, fft, 2 * fft.ffts_per_block + 1)
    wide = np.zeros((x.shape[0], x.shape[1] + 1), x.dtype)
    wide[:, 1:] = x
    out = np.zeros((y.shape[0], y.shape[1] + 1), y.dtype)
    got = ffts.launch(ffts.offset_kernel(fft), fft, wide, out)
    assert ffts.error(got[:, 1:], expected) < 4 * ffts.BOUND[precision] and not got[:, 0].any()


@pytest.mark.parametrize("size", [6, 64, 128, 4096])
def test_real_samples_sit_where_the_docs_say(size, rng):
    """The r2c's real side in registers, read through ``index`` as `FFT`'s docs say (folded for 64, 128 and 4096
    points: in pairs)."""
    fft = tiles.FFT(size, "float32", kind="r2c")
    x = rng.standard_normal((2 * fft.ffts_per_block + 1, size)).astype(np.float32)
    got = ffts.launch(ffts.real_items_kernel(fft), fft, x, np.zeros_like(x))
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("size", [2, 7, 128, 1000, 4096])
def test_a_round_trip_in_place_gives_size_times_the_input(precision, size, rng):
    forward = tiles.FFT(size, COMPLEX[precision])
    inverse = tiles.FFT(
        size,
        COMPLEX[precision],
        direction="inverse",
        elements_per_thread=forward.elements_per_thread,
        ffts_per_block=forward.ffts_per_block,
    )
    x, y, _ = ffts.case(rng, forward, 2 * forward.ffts_per_block + 1)
    got = ffts.launch(ffts.transform_kernel(forward, then=inverse), forward, x, y)
    assert ffts.error(got, size * x.astype(np.complex128)) < 4 * ffts.BOUND[precision]


def test_the_convolution_example_matches_numpy():
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "fft_convolution.py")],
        env=dict(os.environ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0 and "match" in run.stdout, run.stdout + run.stderr[-3000:]


@pytest.mark.parametrize("grid", [None, "resident"])
@pytest.mark.parametrize("size", [1024, 16384])
def test_a_launch_from_the_description_covers_every_row(size, grid, rng):
    """``fft.launch`` over 1001 rows, a block a group or the resident blocks looping over them; 16384 points of
    complex64 work in more than 48 KiB: the launch's dynamic shared memory."""
    fft = tiles.FFT(size, "complex64")
    x, y, expected = ffts.case(rng, fft, 1001)
    out = cuda.to_device(y)
    fft.launch(ffts.looping_kernel(fft), cuda.to_device(x), out, rows=1001, grid=grid)
    assert ffts.error(out.copy_to_host(), expected) < ffts.BOUND["float32"]
