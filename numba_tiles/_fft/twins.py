"""NumPy twins of `FFT`'s calls on the simulator: ``numpy.fft`` over the items of the block's threads, held in
cuFFTDx's register layout (item i of thread x holds element x + i * stride of FFT threadIdx.y, the real side
packed: see `calls.pairs`) and normalized as cuFFTDx does: neither direction is scaled, so an inverse is
``n * numpy.fft.ifft``."""

import numpy as np

from .._backends import simulated
from ..extending import error, simulated_block
from ..simulator import by_first_thread
from . import calls


def _thread_x():
    return simulated.simulated_thread().threadIdx.x


def _positions(fft, count, length, x, pairs):
    """(the items of thread ``x`` that exist, the elements they hold) for a side of ``count`` items a thread (real
    values in ``pairs``: value j holds element 2 * (x + j // 2 * stride) + j % 2)."""
    j = np.arange(count)
    at = 2 * (x + fft.stride * (j // 2)) + j % 2 if pairs else x + fft.stride * j
    return np.flatnonzero(at < length), at[at < length]


def _values(fft, array, dtype):
    """A thread's items as the values of one side: complex as they are, real packed in them."""
    return array.view(np.dtype(dtype)) if dtype == fft.precision else array


def _check_items(fft, name, array):
    if array.dtype != np.dtype(fft.value_type) or array.ndim != 1 or array.size < fft.storage_size:
        raise error(
            name,
            f"items is {array.dtype} {array.shape}; this FFT needs {fft.storage_size} items of {fft.value_type}",
            f"allocate cuda.local.array(fft.storage_size, {fft.value_type})",
        )


def execute(instance, args):
    fft, shared = args["mm"], args["shared"]
    name = instance.intrinsic
    _check_items(fft, name, args["items"])
    if shared is not None and shared.nbytes < fft.shared_memory_bytes:
        raise error(
            name,
            f"shared holds {shared.nbytes} bytes; this FFT needs {fft.shared_memory_bytes}",
            "allocate cuda.shared.array(fft.shared_memory_bytes, uint8, alignment=16)",
        )
    arrays, _ = simulated_block(name, fft.block_dim, args["items"])  # every thread's, x fastest

    def work():
        # (the threads of rows past a batch's end load nothing: their items hold whatever the array held)
        with np.errstate(all="ignore"):
            transform_block()

    def transform_block():
        (in_dtype, in_count, in_length), (out_dtype, out_count, out_length) = (
            calls.side(fft, False),
            calls.side(fft, True),
        )
        for y in range(fft.ffts_per_block):
            threads = arrays[y * fft.stride : (y + 1) * fft.stride]
            signal = np.zeros(in_length, in_dtype)
            for x, items in enumerate(threads):
                kept, at = _positions(fft, in_count, in_length, x, calls.pairs(fft, False))
                signal[at] = _values(fft, items, in_dtype)[kept]
            result = _transform(fft, signal.astype(np.complex128 if in_dtype == fft.value_type else np.float64))
            for x, items in enumerate(threads):
                kept, at = _positions(fft, out_count, out_length, x, calls.pairs(fft, True))
                _values(fft, items, out_dtype)[kept] = result[at]

    by_first_thread(instance, {"block_dim": fft.block_dim}, work)


def _transform(fft, signal):
    """cuFFTDx's transform of ``signal`` (float64 or complex128): unnormalized in both directions."""
    n = fft.size
    if fft.kind == "r2c":
        return np.fft.rfft(signal, n)
    if fft.kind == "c2r":
        return np.fft.irfft(signal, n) * n
    return np.fft.fft(signal, n) if fft.direction == "forward" else np.fft.ifft(signal, n) * n


def load(instance, args):
    fft, src, items = args["mm"], args["src"], args["items"]
    _check_items(fft, instance.intrinsic, items)
    dtype, count, length = calls.side(fft, False)
    kept, at = _positions(fft, count, length, _thread_x(), calls.pairs(fft, False))
    padded = np.zeros(length, dtype)
    padded[: min(len(src), length)] = src[:length]
    _values(fft, items, dtype)[kept] = padded[at]


def store(instance, args):
    fft, items, dst = args["mm"], args["items"], args["dst"]
    _check_items(fft, instance.intrinsic, items)
    dtype, count, length = calls.side(fft, True)
    kept, at = _positions(fft, count, length, _thread_x(), calls.pairs(fft, True))
    inside = at < len(dst)
    dst[at[inside]] = _values(fft, items, dtype)[kept[inside]]


def index(instance, args):
    return np.int64(_thread_x() + int(args["i"]) * args["mm"].stride)
