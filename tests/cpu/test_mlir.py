"""The intrinsics in numba-cuda-mlir kernels, with no GPU: typed by the same rules, lowered to MLIR that calls the
same entry points, linked with the same LTO-IR by ``tiles.compile``; each kernel against the same kernel compiled by
numba-cuda (its intrinsics' SASS: the same shuffles, barriers and no calls). And the numba-cuda-mlir hooks the
adapter (``numba_tiles/_backends/mlir.py``) relies on. Runs where numba-cuda-mlir is installed (the cu13 environment of
``make venv``: ``pip install 'numba-tiles[cu13,mlir]'``)."""

import operator
import re

import pytest

pytest.importorskip("numba_cuda_mlir")

from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402
from numba_cuda_mlir import cuda as mlir_cuda  # noqa: E402

import numba_tiles as tiles  # noqa: E402

from ..support.sass import instructions, sass  # noqa: E402

# (name, kernel body: one statement per line, over x and out (float32 or int32 arrays) and the tile `items`)
CASES = {
    "block_reduce": "s = tiles.block_reduce(x[i], '+', block_dim=128)\nout[i] = s",
    "block_reduce max, 4 items": "tiles.block_load(x[base:], items, block_dim=128, items_per_thread=4)\n"
    "out[i] = tiles.block_reduce(items, 'max', block_dim=128, items_per_thread=4)",
    "block_sum, 2-D block": "out[i] = tiles.block_sum(x[i], block_dim=(16, 8))",
    "block_scan exclusive": "out[i] = tiles.block_scan(x[i], '+', block_dim=128, exclusive=True)",
    "load, radix sort, store": "tiles.block_load(x[base:], items, block_dim=128, items_per_thread=4)\n"
    "tiles.block_radix_sort(items, block_dim=128, items_per_thread=4)\n"
    "tiles.block_store(out[base:], items, block_dim=128, items_per_thread=4)",
    "load transpose, exchange, store": "tiles.block_load(x[base:], items, block_dim=128, items_per_thread=4, "
    "algorithm='transpose')\n"
    "tiles.block_exchange(items, 'striped_to_blocked', block_dim=128, "
    "items_per_thread=4)\n"
    "tiles.block_store(out[base:], items, block_dim=128, items_per_thread=4)",
    "block_reduce by operator.add": "out[i] = tiles.block_reduce(x[i], operator.add, block_dim=128)",
    "uint64 block_reduce by min and operator.and_ (an identity over int64's range)": (
        "out[i] = tiles.block_reduce(x[i], min, block_dim=128) & tiles.block_reduce(x[i], operator.and_, block_dim=128)"
    ),
    "warp_reduce": "out[i] = tiles.warp_reduce(x[i], 'min')",
    "warp_reduce by min, scan by numpy.add": "out[i] = tiles.warp_reduce(x[i], min) + tiles.warp_scan(x[i], np.add)",
    "warp_scan": "out[i] = tiles.warp_scan(x[i], '+', exclusive=True)",
    "warp_sum, 16 lanes": "out[i] = tiles.warp_sum(x[i], warp_size=16)",
    "block_shuffle offset": "out[i] = tiles.block_shuffle(x[i], 'offset', block_dim=128, distance=1)",
}
# (the same over a loaded tile of int32 items, stored back)
TILE = {
    "block_sum of items": "out[i] = tiles.block_sum(items, block_dim=128, items_per_thread=4)",
    "block_scan of items": "tiles.block_scan(items, '+', block_dim=128, items_per_thread=4)",
    "merge sort": "tiles.block_merge_sort(items, '<', block_dim=128, items_per_thread=4)",
    "adjacent difference": "tiles.block_adjacent_difference(items, '-', block_dim=128, items_per_thread=4)",
    "discontinuity": "flags = cuda.local.array(4, np.int32)\n"
    "tiles.block_discontinuity(items, block_dim=128, items_per_thread=4, heads=flags)",
    "histogram": "counts = cuda.shared.array(16, np.int32)\n"
    "tiles.block_histogram(items, counts, block_dim=128, items_per_thread=4, bins=16)",
}
CASES.update(
    {
        name: "tiles.block_load(x[base:], items, block_dim=128, items_per_thread=4)\n" + body + "\n"
        "tiles.block_store(out[base:], items, block_dim=128, items_per_thread=4)"
        for name, body in TILE.items()
    }
)
KERNEL = """
def kernel(x, out):
    items = cuda.local.array(4, np.{dtype})
    i = cuda.grid(1)
    base = cuda.blockIdx.x * 512
{body}
"""


def kernel_of(compiler, body, dtype):
    """The case's kernel made with ``compiler`` (``cuda.jit`` of numba-cuda or of numba-cuda-mlir)."""
    import numpy as np

    scope = {"cuda": mlir_cuda if compiler is mlir_cuda.jit else cuda, "tiles": tiles, "np": np, "operator": operator}
    exec(KERNEL.format(dtype=dtype, body="\n".join("    " + line for line in body.splitlines())), scope)
    return compiler(scope["kernel"])


def compiled(compiler, body, dtype, tmp_path):
    """SASS of the case's kernel made with ``compiler``."""
    ty = getattr(types, dtype)
    return sass(tiles.compile(kernel_of(compiler, body, dtype), (ty[::1], ty[::1]), arch="sm_90"), tmp_path)


def counts(text):
    ops = [(op[1:] if op[0].startswith("@") else op)[0] for op in instructions(text) if op]
    names = [op.split(".")[0] for op in ops]
    found = {name: names.count(name) for name in ("SHFL", "BAR", "CALL", "LDL", "STL", "REDUX")}
    found["16-byte loads and stores"] = sum(op.endswith(".128") and op[:3] in ("LDG", "STG") for op in ops)
    return found, len(names)


@pytest.mark.parametrize("case", CASES)
def test_each_collective_compiles_to_the_same_code_as_under_numba_cuda(case, tmp_path):
    dtype = (
        "uint64" if "uint64" in case else "int32" if "sort" in case or "exchange" in case or case in TILE else "float32"
    )
    ours, total = counts(compiled(mlir_cuda.jit, CASES[case], dtype, tmp_path))
    theirs, total_theirs = counts(compiled(cuda.jit, CASES[case], dtype, tmp_path))
    assert ours["CALL"] == 0 and ours["LDL"] == 0 and ours["STL"] == 0, ours
    assert ours == theirs, (ours, theirs)
    # (the kernels' own code around the calls differs: indexing, the arrays' descriptors; and a vectorized load or
    # store has a second, item-by-item path for an unaligned tile, in which numba-cuda-mlir's code computes the
    # slice's address, x[base:], again for each item: up to half as many instructions again, none in the hot path)
    assert abs(total - total_theirs) <= max(16, 0.5 * total_theirs), (total, total_theirs)


def test_block_reduce_is_cubs_warp_shuffles_and_barriers(tmp_path):
    ours, _ = counts(compiled(mlir_cuda.jit, CASES["block_reduce"], "float32", tmp_path))
    assert ours["SHFL"] >= 5 and ours["BAR"] >= 1 and ours["CALL"] == 0, ours


def test_a_device_function_calls_them_and_any_arch_compiles(tmp_path):
    """An intrinsic in a @cuda.jit(device=True) helper of numba-cuda-mlir; the cubin is the arch asked for (its ELF
    flags), whatever the host (numba-cuda-mlir takes the host's from the driver: `mlir_compile.compile_kernel`)."""
    import struct

    @mlir_cuda.jit(device=True)
    def total(v):
        return tiles.block_reduce(v, "+", block_dim=128)

    @mlir_cuda.jit
    def kernel(x, out):
        out[mlir_cuda.blockIdx.x] = total(x[mlir_cuda.grid(1)])

    for arch, sm in (("sm_80", 80), ("sm_90", 90), ("sm_100", 100)):
        cubin = tiles.compile(kernel, (types.float32[::1], types.float32[::1]), arch=arch)
        assert struct.unpack_from("<I", cubin, 0x30)[0] >> 8 & 0xFF == sm, arch
        assert counts(sass(cubin, tmp_path))[0]["SHFL"] >= 5


def test_shared_memory_and_precompile_take_its_kernels():
    """tiles.shared_memory gives a numba-cuda-mlir kernel's static shared memory and its intrinsics' buffers, as for
    the same kernel under numba-cuda; tiles.precompile compiles it."""
    sig = (types.int32[::1], types.int32[::1])
    usage = {
        jit: tiles.shared_memory(kernel_of(jit, CASES["load, radix sort, store"], "int32"), sig, arch="sm_90")
        for jit in (mlir_cuda.jit, cuda.jit)
    }
    assert usage[mlir_cuda.jit] == usage[cuda.jit] and usage[cuda.jit]["buffers"], usage
    kernel = kernel_of(mlir_cuda.jit, CASES["block_reduce"], "float32")
    done = tiles.precompile(
        kernel, arch=["sm_80", "sm_90"], progress=False, signatures={kernel: [(types.float32[::1], types.float32[::1])]}
    )
    assert [arch for _, _, arch in done] == ["sm_80", "sm_90"]


def test_misuse_is_the_same_clear_error():
    @mlir_cuda.jit
    def kernel(x, out):
        out[0] = tiles.block_reduce(x[0], "^^", block_dim=128)

    with pytest.raises(tiles.TilesError, match=re.escape("tiles.block_reduce: op '^^' is not supported. Fix:")) as info:
        tiles.compile(kernel, (types.float32[::1], types.float32[::1]), arch="sm_90")
    # then where the call stands, as under numba-cuda
    assert re.search(
        r'File ".*test_mlir\.py", line \d+, in .*kernel:\n +out\[0\] = tiles\.block_reduce', str(info.value)
    )


def test_a_descriptions_host_attribute_is_our_error():
    solver = tiles.Solver("posv", 8, "float32")

    @mlir_cuda.jit
    def kernel(out):
        out[0] = solver.lda + len(solver.function)

    with pytest.raises(tiles.TilesError, match=r"tiles\.Solver\.function: a kernel has a Solver's sizes and methods"):
        tiles.compile(kernel, (types.float32[::1],), arch="sm_90")


# (user functions: an op, a comparison; each case's kernel over x and out, with `items` loaded and stored)
USER = {
    "block_reduce by a user op": "out[i] = tiles.block_reduce(x[i], larger, block_dim=128)",
    "block_scan by a user op": "out[i] = tiles.block_scan(x[i], larger, block_dim=128)",
    "merge sort by a user comparison": "tiles.block_load(x[base:], items, block_dim=128, items_per_thread=4)\n"
    "tiles.block_merge_sort(items, descending, block_dim=128, items_per_thread=4)\n"
    "tiles.block_store(out[base:], items, block_dim=128, items_per_thread=4)",
}


def user_kernel(compiler, body):
    """The USER case's kernel, its op and comparison @cuda.jit(device=True) functions of the same ``compiler``."""
    import numpy as np

    module = mlir_cuda if compiler is mlir_cuda.jit else cuda
    scope = {
        "cuda": module,
        "tiles": tiles,
        "np": np,
        "larger": module.jit(device=True)(lambda a, b: max(a, b)),
        "descending": module.jit(device=True)(lambda a, b: a > b),
    }
    exec(KERNEL.format(dtype="int32", body="\n".join("    " + line for line in body.splitlines())), scope)
    return compiler(scope["kernel"])


@pytest.mark.parametrize("case", USER)
def test_a_user_op_compiles_by_the_kernels_compiler_inlined_as_under_numba_cuda(case, tmp_path):
    """A numba-cuda-mlir device function as an op or a comparison: numba-cuda-mlir compiles it (C ABI, LTO-IR) and
    nvJitLink inlines it into CUB's code, with the same shuffles and barriers as under numba-cuda and no call."""
    sig = (types.int32[::1], types.int32[::1])
    ours, total = counts(sass(tiles.compile(user_kernel(mlir_cuda.jit, USER[case]), sig, arch="sm_90"), tmp_path))
    theirs, total_theirs = counts(sass(tiles.compile(user_kernel(cuda.jit, USER[case]), sig, arch="sm_90"), tmp_path))
    assert ours["CALL"] == 0 and ours["LDL"] == 0 and ours["STL"] == 0, ours
    assert ours == theirs, (ours, theirs)
    assert abs(total - total_theirs) <= max(16, 0.5 * total_theirs), (total, total_theirs)  # (as above)


def both_ways(source, sig, arch, tmp_path, counted):
    """The kernel ``source`` defines (``kernel``, over this module's names: ``cuda`` being each compiler's module)
    compiled by numba-cuda-mlir and by numba-cuda: {compiler: (counts of the ``counted`` opcodes, all
    instructions, the opcodes in order)}."""
    import math

    import numpy as np

    found = {}
    for module in (mlir_cuda, cuda):
        scope = {
            "cuda": module,
            "tiles": tiles,
            "np": np,
            "math": math,
            "MM": MM,
            "BF16": BF16,
            "FFT": FFT,
            "INVERSE": INVERSE,
            "REAL": REAL,
            "REAL_INVERSE": REAL_INVERSE,
            "RNG": RNG,
            "device": module.jit(device=True),
            "fast_device": module.jit(device=True, fastmath=True),
            "ZERO": np.float32(0),
            "HALF": np.float32(0.5),
            "ONE": np.float32(1),
            "K": np.float32(math.sqrt(2 / math.pi)),
            "C": np.float32(0.044715),
        }
        exec(source, scope)
        text = sass(tiles.compile(module.jit(scope["kernel"]), sig, arch=arch), tmp_path)
        names = [(op[1:] if op[0].startswith("@") else op)[0].split(".")[0] for op in instructions(text) if op]
        found[module.__name__] = ({n: names.count(n) for n in counted}, len(names), names, text)
    return found.values()


MM = tiles.Matmul((64, 64, 32), "float16", block_dim=128)
BF16 = tiles.Matmul((128, 128, 64), "int16", precision="bf16")
REGISTER_FORM = """
def kernel(a, b, c{extras}):
    sa = cuda.shared.array(MM.a_items, np.float16)
    sb = cuda.shared.array(MM.b_items, np.float16)
    acc = cuda.local.array(MM.accumulator_items, np.float32)
    for i in range(MM.accumulator_items):
        acc[i] = 0
    row, col = 64 * cuda.blockIdx.y, 64 * cuda.blockIdx.x
    for k in range(0, a.shape[1], 32):
        MM.load_a(a, sa, row, k)
        MM.load_b(b, sb, k, col)
        MM.multiply(sa, sb, acc)
    MM.store(acc, c, row, col, 1.5, 0.5{epilogue})
"""
# (the matmul's forms that take arrays: shared tiles by tiles.matmul, and a description's register form; for sm_80,
# as Matmul's docstrings and tests/cpu/test_matmul.py's register form are, whose programs of MM they share)
MATMULS = {
    "tiles.matmul of shared tiles": """
def kernel(a, b, c):
    sa = cuda.shared.array((16, 16), np.float32)
    sb = cuda.shared.array((16, 16), np.float32)
    sc = cuda.shared.array((16, 16), np.float32)
    row, col = 16 * cuda.blockIdx.y, 16 * cuda.blockIdx.x
    tiles.tile_load(c, sc, row, col, block_dim=32)
    beta = 0.5
    for k in range(0, a.shape[1], 16):
        tiles.tile_load(a, sa, row, k, block_dim=32, asynchronous=True)
        tiles.tile_load(b, sb, k, col, block_dim=32, asynchronous=True)
        tiles.tile_wait(block_dim=32)
        tiles.matmul(sa, sb, sc, 2.0, beta, shape=(16, 16, 16), block_dim=32)
        beta = 1.0
    tiles.tile_store(sc, c, row, col, block_dim=32)
""",
    "Matmul's register form": REGISTER_FORM.format(extras="", epilogue=""),
    # (fp16 tiles by the block's warps on MMA atoms, mma.cuh: the default, asked for whatever the environment says)
    "tiles.matmul of fp16 tiles by MMA atoms": """
def kernel(a, b, c):
    sa = cuda.shared.array((32, 32), np.float16)
    sb = cuda.shared.array((32, 32), np.float16)
    sc = cuda.shared.array((32, 32), np.float32)
    row, col = 32 * cuda.blockIdx.y, 32 * cuda.blockIdx.x
    tiles.tile_load(c, sc, row, col, block_dim=64)
    for k in range(0, a.shape[1], 32):
        tiles.tile_load(a, sa, row, k, block_dim=64)
        tiles.tile_load(b, sb, k, col, block_dim=64)
        tiles.matmul(sa, sb, sc, 1.0, 1.0, shape=(32, 32, 32), block_dim=64)
    tiles.tile_store(sc, c, row, col, block_dim=64)
""",
}


@pytest.mark.parametrize("case", MATMULS)
def test_the_matmul_forms_on_arrays_compile_to_the_same_code_as_under_numba_cuda(case, tmp_path, monkeypatch):
    """tile_load (asynchronous, then tile_wait), tiles.matmul and tile_store (float32: FFMA; fp16 by MMA atoms:
    HMMA), and a description's methods (load_a, load_b, multiply, store: numba-cuda-mlir types ``MM`` as the
    description and its methods as the intrinsics bound to it; fp16: HMMA): the same multiply-adds, copies and
    barriers as under numba-cuda."""
    from numba_tiles._matmul import mma_tiles

    if "atoms" in case:
        monkeypatch.setenv(mma_tiles.ENABLED, "1")
    dtype = types.float32 if case == "tiles.matmul of shared tiles" else types.float16
    sig = (dtype[:, ::1], dtype[:, ::1], types.float32[:, ::1])
    (ours, total, *_), (theirs, total_theirs, *_) = both_ways(
        MATMULS[case], sig, "sm_80", tmp_path, ("HMMA", "FFMA", "LDGSTS", "BAR", "CALL", "LDL", "STL")
    )
    assert ours == theirs and ours["FFMA" if dtype == types.float32 else "HMMA"] and not ours["LDL"] + ours["STL"], (
        ours,
        theirs,
    )
    assert abs(total - total_theirs) <= max(16, 0.1 * total_theirs), (total, total_theirs)


FFT = tiles.FFT(128, "complex64", arch="sm_80")
INVERSE = tiles.FFT(128, "complex64", direction="inverse", arch="sm_80")
FILTER = """
def kernel(x, spectrum):
    items = cuda.local.array(FFT.storage_size, np.complex64)
    row = cuda.blockIdx.x * FFT.ffts_per_block + cuda.threadIdx.y
    FFT.load(x[row, :100], items)
    FFT.execute(items)
    for i in range(FFT.elements_per_thread):
        items[i] *= spectrum[FFT.index(i)]
    INVERSE.execute(items)
    FFT.store(items, x[row])
"""
# (folded: real samples in pairs; the FFTs of tests/cpu/test_fft.py's convolution, whose programs they share)
REAL = tiles.FFT(1024, "float32", kind="r2c", arch="sm_90")
REAL_INVERSE = tiles.FFT(1024, "float32", kind="c2r", elements_per_thread=REAL.elements_per_thread, arch="sm_90")
REAL_FILTER = """
def kernel(x, spectrum):
    items = cuda.local.array(REAL.storage_size, np.complex64)
    row = cuda.blockIdx.x * REAL.ffts_per_block + cuda.threadIdx.y
    REAL.load(x[row], items)
    REAL.execute(items)
    for i in range(REAL.elements_per_thread // 2):
        items[i] *= spectrum[REAL.index(i)]
    REAL_INVERSE.execute(items)
    REAL_INVERSE.store(items, x[row])
"""


@pytest.mark.parametrize(
    "source, sig, arch",
    [
        (FILTER, (types.complex64[:, ::1], types.complex64[::1]), "sm_80"),
        (REAL_FILTER, (types.float32[:, ::1], types.complex64[::1]), "sm_90"),
    ],
    ids=["c2c", "r2c and c2r, folded"],
)
def test_an_fft_filter_compiles_to_the_same_code_as_under_numba_cuda(source, sig, arch, tmp_path):
    """An FFT description's methods (load, with zero fill for c2c, execute, index, the inverse in place, store) in a
    numba-cuda-mlir kernel: the same cuFFTDx code as under numba-cuda (its multiply-adds, shuffles and barriers), no
    calls, no local memory, and about as many instructions in all (the filter loop's own addressing is each
    compiler's: numba-cuda-mlir's real filter takes 16 more, its spectrum's addresses computed one by one)."""
    (ours, total, *_), (theirs, total_theirs, *_) = both_ways(
        source, sig, arch, tmp_path, ("FFMA", "BAR", "SHFL", "CALL", "LDL", "STL")
    )
    assert ours == theirs and ours["FFMA"] and ours["BAR"] and not ours["CALL"] + ours["LDL"] + ours["STL"], (
        ours,
        theirs,
    )
    assert total <= total_theirs + 16, (total, total_theirs)


RNG = tiles.Random("philox", "normal", "float32")
DRAWS = """
def kernel(out, seed):
    i = cuda.grid(1)
    state = cuda.local.array(RNG.state_size, np.uint64)
    RNG.init(state, seed, i)
    values = cuda.local.array(RNG.width, np.float32)
    total = np.float32(0)
    for _ in range(8):
        RNG.generate(state, values)
        for j in range(RNG.width):
            total += values[j]
    out[i] = total
"""


FILL = """
def kernel(out, seed):
    state = cuda.local.array(RNG.state_size, np.uint64)
    RNG.init(state, seed, cuda.grid(1))
    RNG.fill(state, out)
"""


@pytest.mark.parametrize("source", [DRAWS, FILL], ids=["a loop of generate", "fill"])
def test_a_random_generator_compiles_to_the_same_code_as_under_numba_cuda(source, tmp_path):
    """A `Random` description's methods (init, a loop of generate; a fill) in a numba-cuda-mlir kernel: cuRANDDx's
    Philox rounds (IMAD) and Box-Muller as under numba-cuda, the generator's state in registers, no more code."""
    sig = (types.float32[::1], types.uint64)
    (ours, total, *_), (theirs, total_theirs, *_) = both_ways(
        source, sig, "sm_80", tmp_path, ("IMAD", "MUFU", "LDL", "STL")
    )
    # (the same Box-Muller: its MUFU (log, sine, cosine, square root) counted alike; the compilers' integer code
    # around the rounds differs in how ptxas fuses it, so IMADs are only both there)
    assert ours["MUFU"] == theirs["MUFU"] > 0 and ours["IMAD"] and theirs["IMAD"], (ours, theirs)
    assert not ours["LDL"] + ours["STL"] + theirs["LDL"] + theirs["STL"], (ours, theirs)
    assert total <= 1.25 * total_theirs, (total, total_theirs)


WHOLE = {  # (a description's whole calls on its operands, a handle argument: arch, implementation, call)
    "tile by wgmma": ("sm_90a", "wgmma", "BF16.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, 1.5, 0.5)"),
    "batched by wgmma": ("sm_90a", "wgmma", "BF16.batched(ops)"),
    # (MM's tile with float32 alpha and beta on sm_80: the program Matmul's docstring example compiles)
    "tile by cp.async": ("sm_80", "cp.async", "MM.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, ONE, HALF)"),
}


@pytest.mark.parametrize("case", WHOLE)
def test_a_descriptions_whole_calls_take_its_operands_as_under_numba_cuda(case, tmp_path):
    """``ops = mm.operands(a, b, c)`` in a numba-cuda-mlir kernel: typed as the same handle (its arrays a tuple to
    numba-cuda-mlir), its members passed to the same entry point: the same wgmma or mma, TMA or cp.async and
    barrier instructions, and no local memory in the K loop. (Around it the register allocation may differ: for
    a cp.async 128 x 128 tile on sm_80, ptxas spilled three of C's 64-bit values before the loop under
    numba-cuda-mlir and none under numba-cuda.)"""
    arch, implementation, call = WHOLE[case]
    mm = MM if call.startswith("MM") else BF16
    sig = (mm.operands_type("float32", batched="batched" in case, implementation=implementation),)
    (ours, total, names, _), (theirs, total_theirs, *_) = both_ways(
        f"def kernel(ops):\n    {call}\n",
        sig,
        arch,
        tmp_path,
        ("HGMMA", "HMMA", "UTMALDG", "UTMASTG", "LDGSTS", "SYNCS", "BAR", "CALL"),
    )
    assert ours == theirs and ours["HGMMA" if implementation == "wgmma" else "HMMA"], (ours, theirs)
    products = [i for i, n in enumerate(names) if n in ("HGMMA", "HMMA")]
    assert not {n for n in names[products[0] : products[-1]] if n in ("LDL", "STL")}, "local memory in the K loop"
    assert abs(total - total_theirs) <= max(16, 0.1 * total_theirs), (total, total_theirs)


@pytest.mark.parametrize("implementation", ["wgmma", "libmathdx"])
def test_a_launch_links_hopper_code_for_sm_90a_and_compile_names_the_arch(implementation, tmp_path):
    """On an H100 numba-cuda-mlir compiles a kernel for sm_90 and links it so: a kernel whose wgmma tile needs
    sm_90a is linked for sm_90a, as numba-cuda links it (for sm_90, nvJitLink rejects its wgmma); ``tiles.compile``
    for a plain sm_90 that was asked for refuses it with the fix, as for numba-cuda's kernels."""
    import numba_cuda_mlir.tools as tools

    from numba_tiles._backends import mlir

    @mlir_cuda.jit
    def kernel(ops):
        BF16.tile(ops, mlir_cuda.blockIdx.y, mlir_cuda.blockIdx.x)

    sig = (BF16.operands_type("float32", implementation=implementation),)
    with pytest.raises(tiles.TilesError, match=r"links only for sm_90a, not sm_90.*Fix: pass arch='sm_90a'"):
        tiles.compile(kernel, sig, arch="sm_90")
    saved, tools._cached_cc = tools._cached_cc, (9, 0)  # (the launch path: the chip is the GPU's)
    try:
        cubin = bytes(mlir_cuda.compile_cubin(kernel.py_func, tuple(mlir.to_mlir(t) for t in sig)))
    finally:
        tools._cached_cc = saved
    assert "HGMMA" in sass(cubin, tmp_path)


def test_mm_launch_passes_operands_as_a_tuple_numba_cuda_mlirs_launcher_flattens_and_types_back():
    """What `Matmul.launch` gives a numba-cuda-mlir kernel for ``ops``: a tuple of its members that the launcher
    flattens into the four arrays and, rebuilt from them as it rebuilds a namedtuple, types as ``ops``'s handle."""
    import numpy as np
    from numba_cuda_mlir.descriptor import _flatten_arg

    from numba_tiles._backends import mlir

    class Stand:  # (what launch_arguments reads of an Operands: its type and its members)
        _numba_type_ = BF16.operands_type("float32", batched=True)

        def __iter__(self):
            return iter(members)

    members = (np.zeros(512, np.uint8), *(np.zeros((2, 64, 64), t) for t in ("int16", "int16", "float32")))

    @mlir_cuda.jit
    def kernel(ops, alpha):
        BF16.batched(ops, alpha)

    ops, alpha = mlir.launch_arguments((Stand(), 1.5))
    assert alpha == 1.5 and all(x is y for x, y in zip(ops, members)) and len(ops) == 4
    flat = []
    _flatten_arg(ops, flat)
    assert len(flat) == 4 and all(x is y for x, y in zip(flat, members))
    rebuilt = type(ops)(*flat)
    assert hasattr(ops, "_fields") and type(rebuilt) is type(ops)
    assert kernel.typeof_pyval(rebuilt) == mlir.to_mlir(Stand._numba_type_) == kernel.typeof_pyval(ops)
    assert mlir.to_numba_cuda(kernel.typeof_pyval(rebuilt)) is Stand._numba_type_


EPILOGUES = {  # (a store with an epilogue of two arrays; the wgmma tile's with a fastmath tanh GELU)
    "register form, relu(value * scale[row] + bias[col])": (
        "sm_80",
        ("HMMA", "FMNMX", "LDG", "STG"),
        (types.float16[:, ::1], types.float16[:, ::1], types.float32[:, ::1], types.UniTuple(types.float32[::1], 2)),
        """
@device
def scaled_relu(value, row, col, scale, bias):
    return max(value * scale[row] + bias[col], ZERO)
"""
        + REGISTER_FORM.format(extras=", extras", epilogue=", epilogue=scaled_relu, epilogue_args=extras"),
    ),
    "wgmma tile, tanh GELU under fastmath": (
        "sm_90a",
        ("HGMMA", "UTMALDG", "UTMASTG"),
        (BF16.operands_type("int16"), types.Tuple((types.float32[::1],))),
        """
@fast_device
def gelu(value, row, col, bias):
    v = value + bias[col]
    return HALF * v * (ONE + math.tanh(K * (v + C * v * v * v)))

def kernel(ops, extras):
    BF16.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, epilogue=gelu, epilogue_args=extras)
""",
    ),
}


@pytest.mark.parametrize("case", EPILOGUES)
def test_an_epilogue_is_inlined_into_the_store_as_under_numba_cuda(case, tmp_path):
    """``epilogue=`` in a numba-cuda-mlir kernel: numba-cuda-mlir compiles the function (C ABI), the store's
    functor calls it with the ``epilogue_args``' fields (`mlir.pack`), and nvJitLink inlines it: the same
    library instructions and the user's (FMNMX) as under numba-cuda, no local memory. numba-cuda-mlir
    0.6 computes ``math.tanh`` by libdevice's tanhf even under ``fastmath=True`` (numba-cuda: one MUFU.TANH), so
    the GELU's own instructions differ there (the guide says so)."""
    arch, counted, sig, source = EPILOGUES[case]
    (ours, total, _, text), (theirs, total_theirs, _, text_theirs) = both_ways(
        source, sig, arch, tmp_path, (*counted, "CALL", "LDL", "STL")
    )
    assert ours == theirs and all(ours[n] for n in counted) and not ours["LDL"] + ours["STL"], (ours, theirs)
    if "tanh" in case:
        # (numba-cuda-mlir's tanh: a change of it fails here, and the guide says it)
        assert text.count("MUFU.TANH") == 0 < text_theirs.count("MUFU.TANH")
    else:
        assert abs(total - total_theirs) <= max(16, 0.1 * total_theirs), (total, total_theirs)


def test_epilogue_args_it_cannot_pass_are_refused_naming_the_fix():
    @mlir_cuda.jit(device=True)
    def flagged(value, row, col, flag):
        return value if flag else -value

    @mlir_cuda.jit
    def kernel(ops, flag):
        BF16.tile(ops, 0, 0, epilogue=flagged, epilogue_args=(flag,))

    with pytest.raises(
        tiles.TilesError,
        match=r"Matmul\.tile: epilogue_args of bool are not passed in "
        r"numba-cuda-mlir kernels yet\. Fix: pass arrays and 32- or 64-bit",
    ):
        tiles.compile(kernel, (BF16.operands_type("float32"), types.boolean), arch="sm_90a")


@pytest.mark.parametrize(
    "body,message",
    [
        (
            "items = cuda.local.array(2, np.int32)\n    tiles.block_load(x, items, block_dim=128, items_per_thread=4)",
            r"tiles\.block_load: items has 2 items but items_per_thread=4\. Fix: make it at least "
            r"items_per_thread long",
        ),
        (
            "out[0] = tiles.block_sum(x[0], block_dim=128.0)",
            r"tiles\.block_sum: block_dim must be an int or a tuple of 1 "
            r"to 3 ints, got 128\.0\. Fix:",
        ),
    ],
)
def test_what_the_ir_knows_of_an_argument_is_checked_as_under_numba_cuda(body, message):
    """The checks no type tells (a local array's length, a float constant that Numba types as a run-time value)
    read the kernel's IR as numba-cuda-mlir holds it, as they do under numba-cuda: the same error, at compile time."""
    import numpy as np

    scope = {"cuda": mlir_cuda, "tiles": tiles, "np": np}
    exec(f"def kernel(x, out):\n    {body}\n", scope)
    with pytest.raises(tiles.TilesError, match=message):
        tiles.compile(mlir_cuda.jit(scope["kernel"]), (types.int32[::1], types.int32[::1]), arch="sm_90")


@pytest.mark.parametrize(
    "kernel,sig",
    [
        ("_tile_kernel(np.float32, '+', 4096, 16)", (types.float32[::1], types.float32[::1], types.int64)),
        (
            "_warp_kernel(np.float32, 'max', False)",
            (types.float32[::1], types.int64[::1], types.int64, types.float32[::1]),
        ),
    ],
    ids=["block_reduce of whole segments", "warp_reduce of CSR segments"],
)
def test_the_segmented_reduction_example_compiles_the_same_under_numba_cuda_mlir(kernel, sig, tmp_path):
    """examples/segmented_reduction.py's kernels, its source loaded a second time with numba-cuda-mlir's ``cuda``
    (as benchmarks/segmented_reduce.py's numba_tiles-mlir rows do): the same loads, shuffles, barriers and
    adds as under numba-cuda, no calls."""
    import importlib.util
    from pathlib import Path

    import numpy as np

    from examples import segmented_reduction

    spec = importlib.util.spec_from_file_location("segmented_reduction_mlir", Path(segmented_reduction.__file__))
    under_mlir = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(under_mlir)
    under_mlir.cuda = mlir_cuda
    counts = []
    for module in (under_mlir, segmented_reduction):
        text = sass(tiles.compile(eval(kernel, {"np": np}, vars(module)), sig, arch="sm_90"), tmp_path)
        names = [(op[1:] if op[0].startswith("@") else op)[0].split(".")[0] for op in instructions(text) if op]
        counts.append({n: names.count(n) for n in ("LDG", "SHFL", "BAR", "FADD", "FMNMX", "CALL")})
    assert counts[0] == counts[1] and counts[0]["LDG"] and counts[0]["SHFL"] and not counts[0]["CALL"], counts


def test_numba_cuda_mlirs_extension_loader_imports_us():
    """Our numba_cuda_mlir_extensions entry point: numba-cuda-mlir's loader (on its launch path) imports numba_tiles,
    whose import registers the intrinsics."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom numba_cuda_mlir.numba_cuda.core import entrypoints\nentrypoints.init_all()\n"
        "print('numba_tiles' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True"], done.stdout + done.stderr


def test_importing_numba_tiles_leaves_numba_cuda_mlir_unimported_and_its_import_registers_us():
    """``import numba_tiles`` does not import numba-cuda-mlir (half a second a process that never compiles with it
    would pay); a program that imports it afterwards compiles kernels calling the intrinsics all the same."""
    import subprocess
    import sys

    code = (
        "import sys\nimport numba_tiles as tiles\nprint('numba_cuda_mlir' in sys.modules)\n"
        "from numba_cuda_mlir import cuda\n"
        "@cuda.jit\ndef k(x, out):\n    out[0] = tiles.block_sum(x[cuda.threadIdx.x], block_dim=64)\n"
        "print(tiles.compile(k, 'void(float32[:], float32[:])', arch='sm_90')[:4] == b'\\x7fELF')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr


def test_the_numba_cuda_mlir_hooks_the_adapter_uses_are_there():
    """numba_tiles/_backends/mlir.py's private hooks, by name: a numba-cuda-mlir upgrade that moves one fails here."""
    import numba_cuda_mlir.tools as tools
    from numba_cuda_mlir import extending, lowering_utilities, models
    from numba_cuda_mlir.descriptor import mlir_target
    from numba_cuda_mlir.mlir_lowering import MLIRLower

    assert hasattr(tools, "_cached_cc")
    assert isinstance(mlir_target._typingctx_initialized, bool) and isinstance(mlir_target._targetctx_initialized, bool)
    for name in ("get_or_insert_function", "memref_data_pointer", "constant"):
        assert callable(getattr(lowering_utilities, name)), name
    for name in (
        "alloca",
        "get_storage_type",
        "as_storage",
        "from_storage",
        "lower_cast",
        "link_external_item",
        "load_var",
        "store_var",
        "get_numba_type",
    ):
        assert callable(getattr(MLIRLower, name)), name
    assert hasattr(extending, "typing_registry") and callable(extending.lower_builtin)
    from numba_cuda_mlir.numba_cuda.core.typeinfer import CallConstraint, ConstraintNetwork

    assert {"constraint", "typeinfer"} <= set(ConstraintNetwork.propagate.__code__.co_varnames)
    assert {"func", "loc"} <= set(CallConstraint.__init__.__code__.co_varnames)
    assert callable(models.mlir_data_manager.lookup) and issubclass(models.OpaqueModel, models.PrimitiveModel)
    from numba_cuda_mlir.descriptor import MLIRDispatcher

    assert "targetoptions" in vars(MLIRDispatcher(lambda: None, targetoptions={"device": True}))
    assert callable(extending.typing_registry.register_attr) and callable(extending.typeof_impl.register)
    assert callable(extending.lowering_registry.lower_getattr_generic)
    from numba_cuda_mlir.compiler import CodeLibrary, CompileResult, CUFunc

    assert callable(CodeLibrary.get_cufunc) and isinstance(CUFunc.handle, property)
    assert "_codelibrary" in CompileResult.__getattr__.__code__.co_consts
