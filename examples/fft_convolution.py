"""Many signals convolved with one filter in one kernel: cuFFTDx's r2c FFT, a pointwise product, its c2r inverse.

``convolve(x, h)`` gives each row of ``x`` (signals of ``LENGTH`` float32 samples; a device array, a NumPy
array on the simulator) convolved with the filter ``h`` (at most ``SIZE - LENGTH + 1`` taps): the rows of
``numpy.convolve(x[r], h)``. One block computes ``FORWARD.ffts_per_block`` signals, each in the registers of
its threads from load to store:

- ``FORWARD.load`` reads a signal into the r2c FFT's register layout, zero-padded to ``SIZE`` points (so that
  the circular convolution of the FFT is the linear one);
- ``FORWARD.execute`` and ``INVERSE.execute`` transform in place; between them each thread multiplies its
  items by the filter's spectrum at the frequency ``FORWARD.index(i)`` it holds, scaled by ``1 / SIZE`` (cuFFTDx
  normalizes neither direction);
- ``INVERSE.store`` writes the ``LENGTH + taps - 1`` samples of the result.

    python examples/fft_convolution.py      # checks against NumPy (NUMBA_ENABLE_CUDASIM=1: on the CPU, small)
"""

import numpy as np
from numba import complex64, cuda

import numba_tiles as tiles

SIZE = 64 if cuda.config.ENABLE_CUDASIM else 1024  # points of each FFT
LENGTH = 48 if cuda.config.ENABLE_CUDASIM else 768  # samples of each signal


def convolution_kernel(forward, inverse):
    """The kernel of ``forward`` (an r2c `tiles.FFT`) and ``inverse`` (its c2r): ``y[r] = x[r] (*) h`` for the
    filter's spectrum ``spectrum`` (``numpy.fft.rfft(h, size) / size``, complex64)."""

    @cuda.jit
    def convolution(x, spectrum, y):
        items = cuda.local.array(forward.storage_size, complex64)
        row = cuda.blockIdx.x * forward.ffts_per_block + cuda.threadIdx.y
        if row < x.shape[0]:
            forward.load(x[row], items)  # zeros past the signal's end
        forward.execute(items)  # every thread of the block, past the last row too
        for i in range(forward.elements_per_thread // 2 + 1):
            f = forward.index(i)
            if f < spectrum.size:
                items[i] *= spectrum[f]
        inverse.execute(items)
        if row < x.shape[0]:
            inverse.store(items, y[row])

    return convolution


FORWARD = tiles.FFT(SIZE, "float32", kind="r2c")
INVERSE = tiles.FFT(SIZE, "float32", kind="c2r", elements_per_thread=FORWARD.elements_per_thread)
convolution = convolution_kernel(FORWARD, INVERSE)


def convolve(x, h):
    """Each row of ``x`` convolved with ``h``: an array of ``x.shape[0]`` rows of ``LENGTH + h.size - 1``."""
    taps = h.size
    if taps > SIZE - LENGTH + 1:
        raise ValueError(f"a filter of at most {SIZE - LENGTH + 1} taps fits {SIZE}-point FFTs of {LENGTH} samples")
    spectrum = (np.fft.rfft(h.astype(np.float64), SIZE) / SIZE).astype(np.complex64)
    rows = x.shape[0]
    if cuda.config.ENABLE_CUDASIM:
        y = np.zeros((rows, LENGTH + taps - 1), np.float32)
    else:
        spectrum, y = cuda.to_device(spectrum), cuda.device_array((rows, LENGTH + taps - 1), np.float32)
    convolution[-(-rows // FORWARD.ffts_per_block), FORWARD.block_dim](x, spectrum, y)
    return y


if __name__ == "__main__":
    rng = np.random.default_rng()
    rows = 5 if cuda.config.ENABLE_CUDASIM else 2**20
    x = rng.standard_normal((rows, LENGTH)).astype(np.float32)
    h = rng.standard_normal(SIZE - LENGTH + 1).astype(np.float32)
    y = convolve(x if cuda.config.ENABLE_CUDASIM else cuda.to_device(x), h)
    got = y if cuda.config.ENABLE_CUDASIM else y.copy_to_host()
    checked = range(rows) if cuda.config.ENABLE_CUDASIM else rng.integers(0, rows, 100)
    for r in checked:
        np.testing.assert_allclose(got[r], np.convolve(x[r].astype(np.float64), h), rtol=1e-3, atol=1e-3)
    print(f"{rows} signals of {LENGTH} samples convolved with a {h.size}-tap filter: match NumPy")
