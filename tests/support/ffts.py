"""The FFT kernels the simulator's and the GPU's tests launch, their inputs, and NumPy's results for them."""

import numpy as np
from numba import complex64, complex128, cuda, uint8

import numba_tiles as tiles


def dynamic(fft):
    """Whether ``fft`` works in more shared memory than a block's static 48 KiB: the launch's dynamic then."""
    return fft.shared_memory_bytes > tiles.extending.STATIC_SHARED_BYTES


def transform_kernel(fft, then=None, length=None):
    """A kernel of ``fft`` over the rows of ``x`` into the rows of ``y`` (``then``: an FFT run after it in place; a
    round trip), reading the first ``length`` items of each row (None: all of it; the rest as zeros)."""
    items_type = complex64 if fft.value_type == "complex64" else complex128
    second = then or fft
    read = length if length is not None else fft.size
    in_dynamic = dynamic(fft)

    @cuda.jit
    def transform(x, y):
        items = cuda.local.array(fft.storage_size, items_type)
        row = cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y
        if row < x.shape[0]:
            fft.load(x[row, :read], items)
        if in_dynamic:
            shared = cuda.shared.array(0, uint8)
            fft.execute(items, shared)
            if then is not None:
                second.execute(items, shared)
        else:
            fft.execute(items)
            if then is not None:
                second.execute(items)
        if row < x.shape[0]:
            second.store(items, y[row])

    return transform


def looping_kernel(fft):
    """A kernel of ``fft`` over the rows of ``x`` into the rows of ``y``, its blocks looping over the groups of
    ``ffts_per_block`` rows ``cuda.gridDim.x`` apart (any grid covers them: `FFT.launch`'s, or the resident one)."""
    items_type = complex64 if fft.value_type == "complex64" else complex128
    in_dynamic = dynamic(fft)

    @cuda.jit
    def looping(x, y):
        items = cuda.local.array(fft.storage_size, items_type)
        groups = (x.shape[0] + fft.ffts_per_block - 1) // fft.ffts_per_block
        for group in range(cuda.blockIdx.x, groups, cuda.gridDim.x):
            row = group * fft.ffts_per_block + cuda.threadIdx.y
            if row < x.shape[0]:
                fft.load(x[row], items)
            if in_dynamic:
                fft.execute(items, cuda.shared.array(0, uint8))
            else:
                fft.execute(items)
            if row < x.shape[0]:
                fft.store(items, y[row])

    return looping


def offset_kernel(fft):
    """A kernel of ``fft`` from ``x[row, 1:]`` into ``y[row, 1:]``: sequences one value past the start of their rows
    (for a real side held in pairs, not aligned to two values)."""
    items_type = complex64 if fft.value_type == "complex64" else complex128

    @cuda.jit
    def offset(x, y):
        items = cuda.local.array(fft.storage_size, items_type)
        row = cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y
        if row < x.shape[0]:
            fft.load(x[row, 1:], items)
        fft.execute(items)
        if row < x.shape[0]:
            fft.store(items, y[row, 1:])

    return offset


def real_items_kernel(fft):
    """A kernel writing where an r2c's ``load`` put each real sample of ``x[row]``, as `FFT`'s docs say: folded,
    item ``i`` holds samples ``2 * index(i)`` and ``2 * index(i) + 1``; else real value ``j`` of the items is
    sample ``index(j)``. ``y[row]`` should then be ``x[row]``."""
    items_type = complex64 if fft.value_type == "complex64" else complex128
    folded = fft.real_mode == "folded"

    @cuda.jit
    def real_items(x, y):
        items = cuda.local.array(fft.storage_size, items_type)
        row = cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y
        if row < x.shape[0]:
            fft.load(x[row], items)
            for i in range(fft.elements_per_thread // 2):
                if folded:
                    y[row, 2 * fft.index(i)] = items[i].real
                    y[row, 2 * fft.index(i) + 1] = items[i].imag
                else:
                    y[row, fft.index(2 * i)] = items[i].real
                    y[row, fft.index(2 * i + 1)] = items[i].imag

    return real_items


def launch(kernel, fft, x, y):
    """``kernel`` over ``x``'s rows: on the GPU from and to device arrays, on the simulator on these arrays."""
    grid = -(-x.shape[0] // fft.ffts_per_block)
    if cuda.config.ENABLE_CUDASIM:
        kernel[grid, fft.block_dim](x, y)
        return y
    x, out = cuda.to_device(x), cuda.to_device(y)
    shared = tiles.allow_dynamic_shared_memory(kernel, fft.shared_memory_bytes, x, out) if dynamic(fft) else 0
    kernel[grid, fft.block_dim, 0, shared](x, out)
    return out.copy_to_host()


def case(rng, fft, rows, length=None):
    """``(x, y, expected)`` for ``fft`` over ``rows`` random rows (``length``: read only that many samples of each,
    the rest zeros): NumPy's transform, unnormalized as cuFFTDx's, in float64."""
    n = fft.size
    read = n if length is None else length
    if fft.kind == "c2r":
        x = np.fft.rfft(rng.standard_normal((rows, n))).astype(fft.value_type)
        padded = np.zeros((rows, n // 2 + 1), np.complex128)
        padded[:, :read] = x[:, :read]
        return x, np.zeros((rows, n), fft.precision), np.fft.irfft(padded, n) * n
    if fft.kind == "r2c":
        x = rng.standard_normal((rows, n)).astype(fft.precision)
        padded = np.zeros((rows, n))
        padded[:, :read] = x[:, :read]
        return x, np.zeros((rows, n // 2 + 1), fft.value_type), np.fft.rfft(padded)
    x = (rng.standard_normal((rows, n)) + 1j * rng.standard_normal((rows, n))).astype(fft.value_type)
    padded = np.zeros((rows, n), np.complex128)
    padded[:, :read] = x[:, :read]
    forward = fft.direction == "forward"
    return x, np.zeros_like(x), np.fft.fft(padded) if forward else np.fft.ifft(padded) * n


def error(got, expected):
    """The largest error relative to the largest value of the result."""
    return np.abs(got - expected).max() / max(np.abs(expected).max(), 1e-30)


BOUND = {"float32": 1e-5, "float64": 1e-12}  # (relative to the result's largest value: FFTs grow like log n)
