"""tiles.FFT with no GPU: descriptions read from cuFFTDx's database (and checked against cuFFTDx's traits through
NVRTC), misuse as clear errors, and a convolution kernel compiled for sm_90 with no calls and no local
memory."""

import re
import threading

import pytest
from numba import complex64, complex128, cuda

import numba_tiles as tiles
from examples import fft_convolution
from numba_tiles import _programs, _stats, _toolchain
from numba_tiles._library import CUFFTDX

from ..support import ffts
from ..support.sass import instructions, registers, sass


def test_descriptions_take_cufftdx_suggestions_and_name_their_sizes():
    # cuFFTDx 1.5 suggests 32 a thread and 2 FFTs a block; the default takes its first record of at most 16 a thread
    fft = tiles.FFT(1024, "complex64", arch="sm_90")
    assert (fft.elements_per_thread, fft.ffts_per_block, fft.block_dim, fft.stride, fft.threads) == (
        16,
        1,
        (64, 1, 1),
        64,
        64,
    )
    assert (fft.storage_size, fft.shared_memory_bytes, fft.precision, fft.value_type) == (
        16,
        4096,
        "float32",
        "complex64",
    )
    assert tiles.FFT(256, "complex64", arch="sm_90").block_dim == (16, 8, 1)  # cuFFTDx's suggestion, 16 a thread
    chosen = tiles.FFT(1024, "complex64", elements_per_thread=8, ffts_per_block=3, arch="sm_90")
    assert (chosen.block_dim, chosen.shared_memory_bytes) == ((128, 3, 1), 3 * 8192)
    assert tiles.FFT(7, "complex128").block_dim == (1, 32, 1)  # one thread an FFT, 32 FFTs a block
    real = tiles.FFT(100, "float32", kind="r2c")
    assert (real.direction, real.dtype, real.value_type) == ("forward", "float32", "complex64")
    assert tiles.FFT(100, "float64", kind="c2r").direction == "inverse"
    # r2c and c2r of powers of two run folded: a 2048-point c2c of 16 complex values a thread, one item more
    half = tiles.FFT(4096, "float32", kind="r2c", arch="sm_90")
    assert (half.real_mode, half.elements_per_thread, half.block_dim, half.storage_size) == (
        "folded",
        32,
        (128, 1, 1),
        17,
    )
    assert (real.real_mode, fft.real_mode) == ("normal", None)
    assert (
        tiles.FFT(1024, "complex64")
        == tiles.FFT(1024, "complex64")
        != tiles.FFT(1024, "complex64", direction="inverse")
    )
    assert 32768 in tiles.FFT.supported_sizes("float32", "sm_80") and 32768 not in tiles.FFT.supported_sizes("float64")


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((1023, "complex64"), {}, r"no block FFT of 1023 points .* the nearest are 1000 and 1024"),
        ((65536, "complex64"), {}, r"the nearest are 32768\b"),
        ((1024, "complex64"), {"elements_per_thread": 5}, r"pass elements_per_thread=2 or 4 or 8 or 16 or 32"),
        ((1024, "float32"), {"kind": "c2r", "elements_per_thread": 2}, r"elements_per_thread=4 or 8 or 16 or 32 or 64"),
        (
            (100, "float32"),
            {},
            r"a c2c FFT takes dtype complex64 or complex128, got float32. Fix: pass dtype='complex64'",
        ),
        (
            (100, "complex128"),
            {"kind": "r2c"},
            r"takes dtype float32 or float64, got complex128. Fix: pass dtype='float64'",
        ),
        ((64, "float16"), {"kind": "r2c"}, r"half precision is not supported"),
        ((64, "float32"), {"kind": "c2r", "direction": "forward"}, r"a c2r FFT is inverse"),
        ((64, "complex64"), {"kind": "dct"}, r"kind='dct' is not supported"),
        ((4096, "complex64"), {"elements_per_thread": 4, "ffts_per_block": 2}, r"more than CUDA's 1024"),
        ((64, "complex64"), {"arch": "sm_88"}, r"no FFTs for sm_88"),
    ],
)
def test_an_unsupported_description_is_refused_with_the_fix(args, kwargs, message):
    with pytest.raises(tiles.TilesError, match=message):
        tiles.FFT(*args, **kwargs)


# (kind, direction, size, elements a thread or None, FFTs a block or None) on an arch, in a precision: NVRTC
# evaluates cuFFTDx's traits of each, and each is compared with the description's.
CASES = {
    ("sm_90", "float32"): [
        ("c2c", "forward", 2, None, None),
        ("c2c", "inverse", 7, None, None),
        ("r2c", "forward", 100, None, 3),
        ("c2r", "inverse", 1000, None, None),
        ("c2c", "forward", 1024, 8, None),
        ("c2c", "forward", 1024, None, None),
        ("r2c", "forward", 4096, None, None),
        ("c2c", "forward", 32768, None, None),
        ("c2r", "inverse", 8192, None, None),
    ],
    ("sm_80", "float64"): [
        ("c2c", "forward", 3, None, None),
        ("c2r", "inverse", 64, None, 2),
        ("r2c", "forward", 1024, 16, None),
        ("c2c", "inverse", 12167, None, None),
        ("c2c", "forward", 16384, None, None),
    ],
}


@pytest.mark.heavy
@pytest.mark.parametrize("arch, precision", list(CASES))
def test_descriptions_are_cufftdx_own_traits(arch, precision):
    """Each case's elements a thread, FFTs a block, block, storage and shared memory (and the suggestions, where left
    out) are cuFFTDx's traits as NVRTC evaluates them: one program a precision, a bit a case. Elements a thread left
    out are cuFFTDx's suggestion, or 16 or fewer where it suggests more."""
    cxx = {"float32": "float", "float64": "double"}[precision]
    terms = []
    for bit, (kind, direction, size, ept, fpb) in enumerate(CASES[arch, precision]):
        fft = tiles.FFT(
            size,
            precision if kind != "c2c" else "complex" + str(2 * int(precision[-2:])),
            kind=kind,
            direction=direction,
            elements_per_thread=ept,
            ffts_per_block=fpb,
            arch=arch,
        )
        suggesting = (
            f"cufftdx::Size<{size}>() + cufftdx::Precision<{cxx}>() + cufftdx::Type<cufftdx::fft_type::{kind}>() + "
            f"cufftdx::Direction<cufftdx::fft_direction::{direction}>() + cufftdx::SM<__CUDA_ARCH__>() + "
            "cufftdx::Block()"
        )
        if fft.real_mode == "folded":
            suggesting += " + cufftdx::RealFFTOptions<cufftdx::complex_layout::natural, cufftdx::real_mode::folded>()"
        described = f"{suggesting} + cufftdx::ElementsPerThread<{fft.elements_per_thread}>()" + (
            f" + cufftdx::FFTsPerBlock<{fpb}>()" if fpb else ""
        )
        suggested = "decltype(" + suggesting + ")::elements_per_thread"
        taken = f" && ({suggested} == {fft.elements_per_thread} || {suggested} > 16)" if ept is None else ""
        ffts = "F::ffts_per_block" if fpb else "F::suggested_ffts_per_block"
        # (FFTs a block left out: cuFFTDx's own default is 1, tiles.FFT's its suggestion)
        complete = "F" if fpb else f"decltype(F() + cufftdx::FFTsPerBlock<{ffts}>())"
        check = (
            f"(F::elements_per_thread == {fft.elements_per_thread} && {ffts} == {fft.ffts_per_block} && "
            f"{complete}::block_dim.x == {fft.block_dim[0]} && {complete}::block_dim.y == {fft.block_dim[1]} && "
            f"{complete}::storage_size == {fft.storage_size} && "
            f"{complete}::shared_memory_size == {fft.shared_memory_bytes} && !F::requires_workspace{taken})"
        )
        terms.append(f"([] {{ using F = decltype({described}); return {check}; }}() ? 1ull << {bit} : 0ull)")
    value = _programs.constant(" | ".join(terms), CUFFTDX[precision].header("fft.cuh"), arch)
    assert value == (1 << len(terms)) - 1, [c for i, c in enumerate(CASES[arch, precision]) if not value >> i & 1]


@pytest.mark.parametrize(
    "size, dtype, kind, signature, loads, stores",
    [
        (1024, "complex64", "c2c", "void(complex64[:, ::1], complex64[:, ::1])", 16, 16),
        # folded: 512 complex points of 8 a thread; the real samples move two a load, the 513 frequencies one a
        # store (the last, 512, held by thread 0 alone). (The FFT of the convolution test below: its program shared)
        (1024, "float32", "r2c", "void(float32[:, ::1], complex64[:, ::1])", 8, 9),
    ],
)
def test_default_ffts_keep_their_items_in_registers_on_sm_90(size, dtype, kind, signature, loads, stores, tmp_path):
    """cuFFTDx's suggestion for 1024 points there, 32 elements a thread, took 255 registers and spilled to local
    memory; the default takes 16. A whole contiguous row goes in and out by constant offsets from one address, 64
    bits a move (item by item, the index arithmetic of a 1024-point row had taken about two thirds as many
    instructions as the FFT)."""
    fft = tiles.FFT(size, dtype, kind=kind, arch="sm_90")
    assert (fft.real_mode, fft.storage_size) == (("folded", 9) if kind == "r2c" else (None, 16))
    code = sass(tiles.compile(ffts.looping_kernel(fft), signature, arch="sm_90"), tmp_path)
    opcodes = {ins[1 if ins[0].startswith("@") else 0].split(".")[0] for ins in instructions(code) if ins}
    assert not opcodes & {"LDL", "STL"}, fft
    assert len(re.findall(r"LDG\.E\.64 R\d+, desc\[UR\d+\]\[R\d+\.64\+0x", code)) >= loads - 1
    assert len(re.findall(r"STG\.E\.64 desc\[UR\d+\]\[R\d+\.64\+0x", code)) >= stores - 1


@pytest.mark.parametrize(
    "dtype, kind, signature",
    [
        ("complex64", "c2c", "void(complex64[:, ::1], complex64[:, ::1])"),
        ("float32", "r2c", "void(float32[:, ::1], complex64[:, ::1])"),
    ],
)
def test_a_block_a_group_keeps_the_registers_low(dtype, kind, signature):
    """The kernel the guide's fast launch teaches (a block a group of rows, no loop) holds few registers a thread, so
    an SM runs many of its blocks: the 1024-point FFTs take 56 on sm_90. A kernel's own loop over the rows keeps as
    few: load and store compute their items' offsets in a strided row each time, where the compiler had kept all of
    them in registers across the loop (142 for the 4096-point c2c loop, against 48 without)."""
    fft = tiles.FFT(1024, dtype, kind=kind, arch="sm_90")
    assert registers(tiles.compile(ffts.transform_kernel(fft), signature, arch="sm_90")) <= 64
    assert registers(tiles.compile(ffts.looping_kernel(fft), signature, arch="sm_90")) <= 64


@pytest.mark.heavy
def test_a_convolution_kernel_compiles_without_calls_or_local_memory(tmp_path):
    """examples/fft_convolution.py's kernel (r2c, a product by the filter's spectrum, c2r) for 1024 points: the
    items stay in registers (no LDL/STL), cuFFTDx's code is inlined (no CALL), its exchanges go through shared
    memory, and the block's barriers are cuFFTDx's."""
    forward = tiles.FFT(1024, "float32", kind="r2c", arch="sm_90")
    inverse = tiles.FFT(1024, "float32", kind="c2r", elements_per_thread=forward.elements_per_thread, arch="sm_90")
    kernel = fft_convolution.convolution_kernel(forward, inverse)
    code = sass(tiles.compile(kernel, "void(float32[:, ::1], complex64[::1], float32[:, ::1])", arch="sm_90"), tmp_path)
    opcodes = {ins[1 if ins[0].startswith("@") else 0].split(".")[0] for ins in instructions(code) if ins}
    assert not opcodes & {"CALL", "LDL", "STL"}, sorted(opcodes)
    assert {"LDS", "STS", "BAR"} <= opcodes and re.search(r"\bFFMA\b", code), sorted(opcodes)


def test_kernels_misusing_an_fft_are_refused_at_typing():
    """Errors of the calls' arguments come at typing (no NVRTC): wrong dtypes, and a description whose sizes are not
    cuFFTDx's on the kernel's arch."""
    fft = tiles.FFT(128, "complex64", arch="sm_90")

    @cuda.jit
    def wrong_items(x):
        items = cuda.local.array(fft.storage_size, complex128)
        fft.load(x, items)

    with pytest.raises(tiles.TilesError, match=r"items holds complex128; this FFT's items are complex64"):
        tiles.compile(wrong_items, "void(complex64[::1])", arch="sm_90")

    @cuda.jit
    def wrong_source(x):
        items = cuda.local.array(fft.storage_size, complex64)
        fft.load(x, items)

    with pytest.raises(tiles.TilesError, match=r"src holds float32; this c2c FFT's input is complex64"):
        tiles.compile(wrong_source, "void(float32[::1])", arch="sm_90")

    real = tiles.FFT(64, "float32", kind="r2c", arch="sm_90")  # 32 FFTs a block there, 16 on sm_80

    @cuda.jit
    def other_arch(x):
        items = cuda.local.array(real.storage_size, complex64)
        real.execute(items)

    with pytest.raises(tiles.TilesError, match=r"describe it for the kernel's arch: tiles.FFT\(..., arch='sm_80'\)"):
        tiles.compile(other_arch, "void(float32[::1])", arch="sm_80")
    big = tiles.FFT(16384, "complex64", arch="sm_90")

    @cuda.jit
    def too_big(x):
        items = cuda.local.array(big.storage_size, complex64)
        big.execute(items)

    with pytest.raises(tiles.TilesError, match=r"pass shared=cuda.shared.array\(0, uint8\)"):
        tiles.compile(too_big, "void(float32[::1])", arch="sm_90")


def test_a_description_compiles_its_execute_ahead_and_a_kernel_finds_it_made(monkeypatch, tmp_path):
    """Made on a GPU machine (here: one that says sm_80), a description starts cuFFTDx's program of ``execute`` in
    the background; a kernel that calls it compiles only the layout's (CUB) program of its own."""
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NUMBA_TILES_BACKGROUND", "1")
    monkeypatch.setattr(_toolchain, "current_device_cc", lambda: (8, 0))
    before = _stats.snapshot()["nvrtc"]
    fft = tiles.FFT(32, "complex64", arch="sm_80")  # (a description no other test compiles)
    while ahead := [t for t in threading.enumerate() if t.name == "numba_tiles ahead"]:
        ahead[0].join()
    assert _stats.snapshot()["nvrtc"] - before == 1

    def spectra(x):
        items = cuda.local.array(fft.storage_size, complex64)
        fft.load(x, items)
        fft.execute(items)
        fft.store(items, x)

    tiles.compile(spectra, "void(complex64[::1])", arch="sm_80", output="ltoir")
    assert _stats.snapshot()["nvrtc"] - before == 2
