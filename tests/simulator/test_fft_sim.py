"""tiles.FFT on Numba's simulator: its twins (numpy.fft in cuFFTDx's register layout) against NumPy's transforms of
fresh random data, every kind in both precisions, several FFTs a block, partial loads, round trips and a filter
through ``index``; examples/fft_convolution.py against numpy.convolve."""

from pathlib import Path

import numpy as np
import pytest
from numba import complex64, cuda

import numba_tiles as tiles

from ..support import ffts

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", ["c2c", "r2c", "c2r"])
@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("size, ffts_per_block", [(2, None), (7, 3), (60, 2), (128, 1)])
def test_transforms_match_numpy(kind, precision, size, ffts_per_block, rng):
    dtype = precision if kind != "c2c" else {"float32": "complex64", "float64": "complex128"}[precision]
    fft = tiles.FFT(size, dtype, kind=kind, ffts_per_block=ffts_per_block)
    x, y, expected = ffts.case(rng, fft, 5)
    got = ffts.launch(ffts.transform_kernel(fft), fft, x, y)
    assert ffts.error(got, expected) < ffts.BOUND[precision]


@pytest.mark.parametrize("kind, length", [("c2c", 50), ("r2c", 1), ("c2r", 20)])
def test_partial_loads_read_zeros_past_the_end(kind, length, rng):
    fft = tiles.FFT(64, "float32" if kind != "c2c" else "complex64", kind=kind)
    x, y, expected = ffts.case(rng, fft, 3, length)
    got = ffts.launch(ffts.transform_kernel(fft, length=length), fft, x, y)
    assert ffts.error(got, expected) < ffts.BOUND["float32"]


@pytest.mark.parametrize("size", [6, 64])
def test_real_samples_sit_where_the_docs_say(size, rng):
    """As on the GPU: the r2c's real side in registers, folded (64 points: in pairs) or not (6)."""
    fft = tiles.FFT(size, "float32", kind="r2c")
    x = rng.standard_normal((fft.ffts_per_block + 1, size)).astype(np.float32)
    got = ffts.launch(ffts.real_items_kernel(fft), fft, x, np.zeros_like(x))
    np.testing.assert_array_equal(got, x)


def test_an_inverse_runs_on_the_forwards_items_in_place(rng):
    forward = tiles.FFT(100, "complex128", ffts_per_block=2)
    inverse = tiles.FFT(
        100, "complex128", direction="inverse", elements_per_thread=forward.elements_per_thread, ffts_per_block=2
    )
    x, y, _ = ffts.case(rng, forward, 3)
    got = ffts.launch(ffts.transform_kernel(forward, then=inverse), forward, x, y)
    assert ffts.error(got, 100 * x) < 1e-12  # (neither direction is normalized)


def test_index_names_each_items_frequency(rng):
    fft = tiles.FFT(32, "complex64", elements_per_thread=4, ffts_per_block=1)
    inverse = tiles.FFT(32, "complex64", direction="inverse", elements_per_thread=4, ffts_per_block=1)

    @cuda.jit
    def filtered(x, spectrum):
        items = cuda.local.array(fft.storage_size, complex64)
        fft.load(x[cuda.blockIdx.x], items)
        fft.execute(items)
        for i in range(fft.elements_per_thread):
            items[i] *= spectrum[fft.index(i)]
        inverse.execute(items)
        fft.store(items, x[cuda.blockIdx.x])

    x = (rng.standard_normal((2, 32)) + 1j * rng.standard_normal((2, 32))).astype(np.complex64)
    spectrum = (rng.standard_normal(32) + 1j * rng.standard_normal(32)).astype(np.complex64)
    expected = np.fft.ifft(np.fft.fft(x) * spectrum) * 32
    filtered[2, fft.block_dim](x, spectrum)
    assert ffts.error(x, expected) < 1e-5


def test_a_launch_of_another_block_is_refused():
    fft = tiles.FFT(64, "complex64", ffts_per_block=2)
    kernel = ffts.transform_kernel(fft)
    x = np.zeros((2, 64), np.complex64)
    with pytest.raises(tiles.TilesError, match=r"block_dim=\(\d+, 2, 1\) but the kernel was launched with blocks"):
        kernel[1, (fft.stride, 1)](x, x.copy())


@pytest.mark.parametrize("grid", [None, "resident", 3])
def test_a_launch_from_the_description_covers_every_row(grid, rng):
    """``fft.launch``: its blocks of ``block_dim`` over the groups of ``ffts_per_block`` rows (7 rows: the last group
    half empty), a block a group or fewer blocks looping over them."""
    fft = tiles.FFT(16, "complex64", ffts_per_block=2)
    x, y, expected = ffts.case(rng, fft, 7)
    fft.launch(ffts.looping_kernel(fft), x, y, rows=7, grid=grid)
    assert ffts.error(y, expected) < ffts.BOUND["float32"]
