"""cuFFTDx's database of block FFTs, read in Python: which sizes an arch computes, and a description's sizes.

cuFFTDx ships, beside its C++ records, the same records as JSON (``cufftdx/database/records/<arch>/``): for each
size of a forward c2c FFT in each precision, its implementations, the first being cuFFTDx's suggestion. The
inverse, r2c and c2r FFTs of a size run the c2c forward's implementations (``database/detail/block_fft.hpp``
forwards their records to it); an r2c or c2r FFT of a power-of-two size runs folded (``real_mode::folded``: the
c2c implementations of half its size, on its real values taken in pairs as complex ones), and the arches without
records of their own run another's. `Sizes` applies cuFFTDx's rules (``traits/detail/check_and_get_trait.hpp``,
``detail/fft_execution.hpp``) to them; ``fft.cuh`` checks each result against cuFFTDx's own trait when it
compiles.
"""

import bisect
import dataclasses
import functools
import json

from .. import _toolchain
from .._errors import error

# cuFFTDx's arch (__CUDA_ARCH__) whose records an arch without its own runs (database/detail/block_fft.hpp).
FORWARDED = {720: 700, 860: 700, 870: 800, 1010: 1000, 1030: 1000, 1210: 1200}
PRECISIONS = {"float32": "fp32", "float64": "fp64"}  # the real dtype of a precision → the records' name
# The most elements a thread that a left-out elements_per_thread takes. cuFFTDx suggests 32 for some sizes (1024, 8192
# and 16384 points in single precision on sm_90); in a Numba kernel's loop such an FFT holds 255 registers and spills
# to local memory, and on an H200 it ran slower than the same size at 16 (a 1024-point c2c: 0.66 against 0.47 ms for
# half a GiB).
DEFAULT_MAX_ELEMENTS = 16


def record_arch(name, arch):
    """cuFFTDx's arch whose records ``arch`` (``"sm_90"``) runs, as a number (900)."""
    number = arch[3:].rstrip("a").rstrip("f")
    code = int(number[:-1]) * 100 + int(number[-1]) * 10
    code = FORWARDED.get(code, code)
    if not (_records_dir() / str(code)).is_dir():
        have = sorted({f"sm_{a // 100}{a // 10 % 10}" for a in (*_archs(), *FORWARDED)}, key=lambda a: int(a[3:]))
        raise error(
            name, f"cuFFTDx {_toolchain.mathdx_version('cufftdx')} has no FFTs for {arch}", f"use one of {have}"
        )
    return code


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What cuFFTDx makes of one block FFT: its elements a thread, FFTs a block, block, storage a thread (complex
    values) and shared memory (bytes, for the whole block); ``suggested_ffts_per_block`` for its elements a
    thread; ``folded``: an r2c or c2r run as a c2c FFT of half its size."""

    elements_per_thread: int
    ffts_per_block: int
    block_dim: tuple
    storage_size: int
    shared_memory_bytes: int
    suggested_ffts_per_block: int
    folded: bool


def folds(kind, size):
    """Whether cuFFTDx runs an FFT of ``kind`` and ``size`` folded: r2c and c2r of power-of-two sizes from 4 (its
    block fold's condition; a 2-point one has no 1-point c2c to run)."""
    return kind != "c2c" and size >= 4 and size & (size - 1) == 0


def sizes(name, size, real_dtype, arch, elements_per_thread=None, ffts_per_block=None, kind="c2c"):
    """`Sizes` of a block FFT of ``kind`` and ``size`` points in the precision of ``real_dtype`` (float32, float64)
    on ``arch`` (its direction changes none of them): for what is left out (None), cuFFTDx's suggestion, its first
    implementation of at most `DEFAULT_MAX_ELEMENTS` complex elements a thread. A folded FFT (`folds`) runs the
    implementations of ``size // 2``, two real elements to each complex one, and holds one more item (the
    frequency ``size // 2``) than they do."""
    code = record_arch(name, arch)
    table = _records(code, PRECISIONS[real_dtype])
    if size not in table:
        raise error(
            name, f"cuFFTDx computes no block FFT of {size} points in {real_dtype} on {arch}", _nearest(size, table)
        )
    folded = folds(kind, size)
    per = 2 if folded else 1  # elements of the FFT to a complex element of the implementation
    blobs = table[size // per]
    default = next((b for b in blobs if b["ept"] <= DEFAULT_MAX_ELEMENTS), blobs[0])
    if elements_per_thread is None:
        chosen = default
    else:
        # search_by_ept: the first implementation of that many elements a thread
        chosen = next((b for b in blobs if b["ept"] * per == elements_per_thread), None)
        if chosen is None:
            offered = sorted({b["ept"] * per for b in blobs})
            raise error(
                name,
                f"cuFFTDx has no {size}-point {kind} FFT of {elements_per_thread} elements a thread on {arch} "
                f"({real_dtype})",
                f"pass elements_per_thread={' or '.join(map(str, offered))}, or leave it out (the default: "
                f"{default['ept'] * per})",
            )
    suggested = chosen["fpb"]
    fpb = suggested if ffts_per_block is None else ffts_per_block
    return Sizes(
        elements_per_thread=chosen["ept"] * per,
        ffts_per_block=fpb,
        block_dim=(size // per // chosen["ept"], fpb, 1),
        storage_size=chosen["storage"] + (1 if folded else 0),
        shared_memory_bytes=chosen["smem"] * fpb,
        suggested_ffts_per_block=suggested,
        folded=folded,
    )


def supported_sizes(arch, real_dtype):
    """The sizes cuFFTDx computes as block FFTs on ``arch`` in the precision of ``real_dtype``, ascending."""
    return sorted(_records(record_arch("FFT", arch), PRECISIONS[real_dtype]))


def _nearest(size, table):
    """A fix naming the supported sizes nearest ``size``: the one below and the one above."""
    ordered = sorted(table)
    at = bisect.bisect_left(ordered, size)
    near = [s for s in (ordered[at - 1] if at else None, ordered[at] if at < len(ordered) else None) if s]
    return (
        f"use a size cuFFTDx supports: the nearest are {' and '.join(map(str, near))} (sizes 2 to {ordered[-1]} "
        "with small prime factors; others need Bluestein's workspace, which tiles.FFT does not make)"
    )


def _records_dir():
    return _toolchain.mathdx_include_dirs()[0] / "cufftdx" / "database" / "records"


@functools.cache
def _archs():
    return tuple(sorted(int(p.name) for p in _records_dir().iterdir() if p.name.isdigit()))


@functools.cache
def _records(code, precision):
    """{size: its implementations (dicts of ept, store, storage, fpb, smem, id), cuFFTDx's choice first}."""
    data = json.loads((_records_dir() / str(code) / f"database_{precision}_fwd.json").read_text())
    assert (data["type"], data["direction"]) == ("c2c", "forward"), "cuFFTDx's records changed form"
    return {r["size"]: r["blobs"] for r in data["database"]}
