"""tiles.matmul with tile_load / tile_store on the GPU: examples/gemm.py's kernel against a float64 NumPy reference.

Every precision × arrangement of the shared tiles × tile sizes (16 to 128 a side, square and not), by cuBLASDx
and by the warps' MMA atoms, 16-byte-aligned tiles (the ldmatrix paths) too,
with alpha and beta not 0 or 1, on matrices whose sizes are not multiples of the tile and
operands given as transposed (strided) views too; relative Frobenius error within the
precision's bound.
"""

import numpy as np
import pytest
from numba import cuda
from numba.cuda.cudadrv.devicearray import DeviceNDArray

from examples import gemm
from numba_tiles import _programs
from numba_tiles._matmul import mma_tiles

from ..support import matrices

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]

BOUND = {
    "float16": 1e-2,
    "float32": 1e-5,
    "float64": 1e-12,
    "tf32": 1e-3,
    "bf16": 1e-5,  # by C's (or the named)
    "complex64": 1e-5,
    "complex128": 1e-12,
}
PRECISIONS = [
    ("float16", "float32"),
    ("float16", "float16"),
    ("float32", "float32"),
    ("float64", "float64"),
    ("float32", "float32", "tf32"),
    ("int16", "float32", "bf16"),
    ("complex64", "complex64"),
    ("complex128", "complex128"),
]
TILES = [
    ((16, 16, 16), 32),
    ((32, 32, 32), 128),
    ((64, 64, 64), 128),
    ((32, 64, 16), 128),
    ((128, 64, 16), 256),
    ((64, 128, 32), (32, 8)),
]
CASES = (
    [(p, tile, block, ("C", "C"), None) for p in PRECISIONS for tile, block in TILES]
    + [
        (p, (32, 32, 32), 128, order, None)
        for p in (PRECISIONS[0], PRECISIONS[3], PRECISIONS[5], PRECISIONS[6])
        for order in (("F", "C"), ("C", "F"), ("F", "F"), ("C", "C", "F"))
    ]
    + [
        (p, tile, 128, order, 16)
        for p in PRECISIONS
        for tile, order in (((64, 64, 32), ("C", "C")), ((32, 32, 32), ("F", "C")))
    ]
)


def fits(precision, tile):
    """Static shared memory of the three tiles within a block's 48 KiB."""
    ab, acc = (np.dtype(d).itemsize for d in precision[:2])
    m, n, k = tile
    return (m * k + k * n) * ab + m * n * acc <= 48 * 1024


def random(rng, shape, dtype):
    """Standard normal values of ``dtype`` (complex ones in both parts)."""
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)
    return x.astype(dtype)


@pytest.mark.parametrize("precision,tile,block_dim,order,alignment", [c for c in CASES if fits(c[0], c[1])], ids=str)
def test_gemm_against_numpy(precision, tile, block_dim, order, alignment, rng, monkeypatch):
    """By cuBLASDx, each product (``NUMBA_TILES_MATMUL_ATOMS=0``: what the warps' form is held to, and where a
    user can turn to)."""
    monkeypatch.setenv(mma_tiles.ENABLED, "0")
    with _programs.recording() as lowered:
        check_gemm(precision, tile, block_dim, order, alignment, rng)
    assert not any(i.template.startswith("numba_tiles::mma_matmul<") for i, _ in lowered)


# The warps' form on MMA atoms (lto_libs/mma.cuh) where it serves: fp16, bf16, tf32 and fp64 tiles of whole atoms,
# each arrangement, aligned tiles (ldmatrix) and not, and a C that beta = 0 must not read (NaN). The first cases
# take every value of each parameter (what `--sanitize-subset` keeps); then every precision with every tile.
ATOM_PRECISIONS = [PRECISIONS[i] for i in (0, 1, 3, 4, 5)]
ATOM_CASES = [
    (ATOM_PRECISIONS[0], (64, 128, 32), (32, 8), "FC", 16, None),
    (ATOM_PRECISIONS[1], (32, 64, 16), 128, "CF", None, 0.0),
    (ATOM_PRECISIONS[3], (48, 80, 24), 96, "FF", None, None),
    (ATOM_PRECISIONS[2], (16, 16, 16), 32, "CC", 16, None),
    (ATOM_PRECISIONS[4], (64, 64, 64), 128, "FC", None, None),
    (ATOM_PRECISIONS[0], (128, 64, 16), 256, "CCF", None, None),
    (ATOM_PRECISIONS[3], (32, 32, 32), 128, "CF", None, None),
]
ATOM_CASES += [
    case
    for case in [(p, tile, block, "CC", None, None) for p in ATOM_PRECISIONS for tile, block in TILES]
    + [
        (p, (32, 32, 32), 128, o, a, None)
        for p in ATOM_PRECISIONS
        for o in ("FC", "CF", "FF", "CCF", "FFF")
        for a in (None, 16)
    ]
    + [(p, (64, 64, 32), 128, "CC", 16, 0.0) for p in ATOM_PRECISIONS]
    + [(PRECISIONS[4], (48, 80, 24), 96, "FC", None, None), (PRECISIONS[3], (24, 40, 12), 96, "FC", None, None)]
    if case not in ATOM_CASES
]


@pytest.mark.parametrize(
    "precision,tile,block_dim,order,alignment,beta", [c for c in ATOM_CASES if fits(*c[:2])], ids=str
)
def test_gemm_by_mma_atoms_against_numpy(precision, tile, block_dim, order, alignment, beta, rng, monkeypatch):
    monkeypatch.setenv(mma_tiles.ENABLED, "1")
    with _programs.recording() as lowered:
        check_gemm(precision, tile, block_dim, tuple(order), alignment, rng, beta)
    assert any(i.template.startswith("numba_tiles::mma_matmul<") for i, _ in lowered)


def check_gemm(precision, tile, block_dim, order, alignment, rng, beta=None):
    """examples/gemm.py's kernel on matrices whose sizes are not multiples of the tile, A and B stored or
    transposed, against NumPy; ``beta``: C's scale (0: C holds NaN, which the product must not read)."""
    dtype, acc, named = (*precision, None)[:3]
    m, n, k = (int(v) for v in rng.integers(1, 4, 3) * np.array(tile) + rng.integers(1, 17, 3))  # not multiples
    transposed = rng.integers(0, 2, 2)  # A and/or B as the transpose of a stored matrix: strided views
    a, b = (
        random(rng, shape, "float32" if named == "bf16" else dtype)
        for shape in ((k, m) if transposed[0] else (m, k), (n, k) if transposed[1] else (k, n))
    )
    if named == "bf16":  # bfloat16 values, stored as their bits
        a, b = matrices.bf16_bits(a), matrices.bf16_bits(b)
    a, b = (a.T if transposed[0] else a), (b.T if transposed[1] else b)
    c = random(rng, (m, n), acc)
    alpha = float(rng.uniform(0.5, 2))
    beta = float(rng.uniform(-2, -0.5)) if beta is None else beta
    if np.dtype(acc).kind == "c":
        alpha, beta = np.dtype(acc).type(alpha - 0.5j), np.dtype(acc).type(beta + 0.75j)
    kernel = gemm.make_gemm(tile, dtype, acc, block_dim, order, named, alignment)
    result = gemm.run(kernel, a, b, np.full_like(c, np.nan) if beta == 0 else c, alpha, beta, tile, block_dim)
    error = matrices.relative_error(result, a, b, c, alpha, beta, named)
    assert error < BOUND[named or acc], f"{m}x{n}x{k}: relative error {error:.2e}"


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "complex128"])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("cols", [64, 72, 37])  # whole 16-byte rows (the vector path) or not
@pytest.mark.parametrize("asynchronous", [False, True])
def test_tile_load_store_copy_every_item(dtype, order, cols, asynchronous, rng):
    """A matrix copied through (32, 16)-item tiles, some inside it (16-byte vectors where rows allow,
    cp.async ones when asynchronous), some over its edge (item by item, filled with -1 past the edge):
    every item arrives, nothing past it."""
    from numba import types as nbtypes

    import numba_tiles as tiles

    item = getattr(nbtypes, dtype)

    @cuda.jit
    def copy(src, dst, fills):
        tile = cuda.shared.array((32, 16), item)
        r, c = 32 * cuda.blockIdx.y, 16 * cuda.blockIdx.x
        tiles.tile_load(src, tile, r, c, -1, block_dim=64, asynchronous=asynchronous)
        if asynchronous:
            tiles.tile_wait(block_dim=64)
        if cuda.threadIdx.x == 0:  # what the fill wrote past the edge
            n = 0
            for i in range(32):
                for j in range(16):
                    if (r + i >= src.shape[0] or c + j >= src.shape[1]) and tile[i, j] == -1:
                        n += 1
            fills[cuda.blockIdx.y, cuda.blockIdx.x] = n
        tiles.tile_store(tile, dst, r, c, block_dim=64)

    rows = 96 + 5
    src = (rng.integers(-100, 100, (rows, cols)) if dtype == "int8" else rng.standard_normal((rows, cols))).astype(
        dtype
    )
    src = np.asfortranarray(src) if order == "F" else src
    dst = np.full_like(src, 7)
    grid = ((cols + 15) // 16, (rows + 31) // 32)
    fills = np.zeros(grid[::-1], np.int64)
    d_dst, d_fills = cuda.to_device(dst), cuda.to_device(fills)
    copy[grid, 64](cuda.to_device(src), d_dst, d_fills)
    np.testing.assert_array_equal(d_dst.copy_to_host(), src)
    expected = grid[0] * grid[1] * 32 * 16 - rows * cols
    assert d_fills.copy_to_host().sum() == expected


# The register form (tiles.Matmul): examples/gemm.py's own-loop kernel. (A and B's dtype,
# accumulator, precision name, C's dtype)
REGISTER_PRECISIONS = [
    ("float16", "float32", None, "float32"),
    ("float16", "float32", None, "float16"),
    ("float16", "float16", None, "float16"),
    ("float32", "float32", None, "float32"),
    ("float64", "float64", None, "float64"),
    ("float32", "float32", "tf32", "float32"),
    ("int16", "float32", "bf16", "float32"),
    ("int16", "float32", "bf16", "int16"),
]
REGISTER_TILES = [((16, 16, 16), 32), ((32, 64, 16), 128), ((64, 64, 32), 128), ((128, 128, 32), 256)]
ORDERS = ("row_major", "col_major")
REGISTER_CASES = (
    [
        (p, tile, block, ("row_major", "row_major"), staged, stages)
        for p in REGISTER_PRECISIONS
        for (tile, block), staged, stages in zip(REGISTER_TILES, (False, True, True, False), (2, 3, 4, 2))
    ]
    + [
        (p, (32, 32, 32), 64, (oa, ob), True, 3)
        for p in REGISTER_PRECISIONS[::3]
        for oa in ORDERS
        for ob in ORDERS
        if (oa, ob) != ("row_major", "row_major")
    ]
    # over 48 KiB of (dynamic) shared memory
    + [(p, (128, 128, 64), 256, ("row_major", "col_major"), True, 3) for p in REGISTER_PRECISIONS[:2]]
    + [(REGISTER_PRECISIONS[4], (64, 64, 32), 128, ("row_major", "row_major"), True, 4)]
)
BOUND_OF = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2, "int16": 1e-2}


def register_fits(precision, tile, staged, stages):
    dtype, acc = precision[:2]
    m, n, k = tile
    stage = m * (n + 32 // np.dtype(acc).itemsize) * np.dtype(acc).itemsize if staged else 0
    return stages * (m * k + k * n) * np.dtype(dtype).itemsize + stage <= 227 * 1024  # Hopper's opt-in limit


@pytest.mark.parametrize(
    "precision,tile,block_dim,arrangement,staged,stages",
    [c for c in REGISTER_CASES if register_fits(c[0], c[1], c[4], c[5])],
    ids=str,
)
def test_register_form_gemm_against_numpy(precision, tile, block_dim, arrangement, staged, stages, rng):
    dtype, acc, named, out = precision
    m, n, k = (int(v) for v in rng.integers(1, 4, 3) * np.array(tile) + rng.integers(1, 17, 3))  # not multiples
    # global A and B in the description's arrangement, or (one of them, at random) in the other order
    flip = rng.integers(0, 2, 2)
    orders = [
        ("F" if o == "col_major" else "C") if not f else ("C" if o == "col_major" else "F")
        for o, f in zip(arrangement, flip)
    ]
    a, b = (
        np.asarray(rng.standard_normal(shape), dtype="float32" if named == "bf16" else dtype, order=o)
        for shape, o in (((m, k), orders[0]), ((k, n), orders[1]))
    )
    if named == "bf16":
        a, b = (np.asarray(matrices.bf16_bits(x), order=o) for x, o in ((a, orders[0]), (b, orders[1])))
    c = rng.standard_normal((m, n)).astype("float32" if out == "int16" else out)
    c_in = matrices.bf16_bits(c) if out == "int16" else c
    alpha, beta = float(rng.uniform(0.5, 2)), float(rng.uniform(-2, -0.5))
    import numba_tiles as tiles

    mm = tiles.Matmul(tile, dtype, accumulator=acc, block_dim=block_dim, precision=named, arrangement=arrangement)
    kernel = gemm.make_own_loop(mm, staged, stages)
    result = gemm.run(kernel, a, b, c_in, alpha, beta, tile, block_dim)
    if out == "int16":
        result = matrices.values(result, "bf16")
        c = matrices.values(c_in, "bf16")
    error = matrices.relative_error(result, a, b, c, alpha, beta, named)
    bound = max(BOUND_OF[out], BOUND.get(named, 0), BOUND_OF[acc])
    assert error < bound, f"{m}x{n}x{k}, A {orders[0]}, B {orders[1]}: relative error {error:.2e}"


# A batched test's products: the tile's size, the same with beta 0 (C = alpha A B: what a float C's bulk copy
# takes), or ragged.
BATCH_SIZES = ["whole", "whole, beta 0", "ragged"]


def batch_scales(sizes, rng):
    """alpha and beta of a batched test: neither 0 nor 1, but beta 0 where ``sizes`` says so."""
    return float(rng.uniform(0.5, 2)), 0.0 if "beta 0" in sizes else float(rng.uniform(-2, -0.5))


# Matmul.batched by cp.async (any GPU): examples/gemm.py's batched kernel. (precision, tile, block, stages)
BATCHED_CASES = (
    [(p, (64, 64, 64), 128, 3) for p in REGISTER_PRECISIONS]
    + [(p, (32, 64, 16), 128, 2) for p in REGISTER_PRECISIONS[::2]]
    + [(p, (16, 16, 16), 32, 4) for p in REGISTER_PRECISIONS[1::2]]
    + [(REGISTER_PRECISIONS[6], (128, 128, 32), 256, 2)]
)


@pytest.mark.parametrize("precision,tile,block_dim,stages", BATCHED_CASES, ids=str)
@pytest.mark.parametrize("sizes", BATCH_SIZES)
def test_batched_gemm_against_numpy(precision, tile, block_dim, stages, sizes, rng):
    """Each product is the tile's size (the vector path; with beta 0, a float C's one bulk copy on sm_90), or
    smaller with a K that is not a multiple of the K-tile (item by item at the edges); fewer blocks than
    products (the persistent loop), A as a strided view."""
    import numba_tiles as tiles

    dtype, acc, named, out = precision
    m, n, k, count = batch_sizes(tile, sizes, rng)
    mm = tiles.Matmul(tile, dtype, accumulator=acc, block_dim=block_dim, precision=named, stages=stages)
    wide, b, c = (
        rng.standard_normal(shape).astype("float32") for shape in ((count, m, k + 3), (count, k, n), (count, m, n))
    )
    if named == "bf16":
        wide, b = matrices.bf16_bits(wide), matrices.bf16_bits(b)
    else:
        wide, b = wide.astype(dtype), b.astype(dtype)
    a = wide[:, :, 1 : k + 1]  # strided rows, an offset
    c_in = matrices.bf16_bits(c) if out == "int16" else c.astype(out)
    alpha, beta = batch_scales(sizes, rng)
    d_a, d_b, d_c = cuda.to_device(wide)[:, :, 1 : k + 1], cuda.to_device(b), cuda.to_device(c_in)
    launch(mm, "cp.async", d_a, d_b, d_c, alpha, beta, grid=int(rng.integers(1, count // 3)))
    check_batched(d_c, c_in, a, b, alpha, beta, precision, f"{m}x{n}x{k} x {count}")


def launch(mm, implementation, a, b, c, alpha, beta, grid=None):
    """examples/gemm.py's batched kernel of ``mm`` on device arrays, by ``implementation``."""
    ops = mm.operands(a, b, c, implementation=implementation)
    mm.launch(gemm.make_batched(mm), ops, alpha, beta, grid=grid)


def batch_sizes(tile, sizes, rng):
    """(m, n, k, count) of a batched test: the tile's m, n, k ("whole"), or m, n under it and a k that is
    not a multiple of the K-tile ("ragged"); 40 to 89 products."""
    m, n, k = tile
    if sizes == "ragged":
        m, n = (int(rng.integers(1, v + 1)) for v in (m, n))
        k = int(rng.integers(1, 4)) * k + int(rng.integers(1, k))
    return m, n, k, int(rng.integers(40, 90))


def check_batched(d_c, c_in, a, b, alpha, beta, precision, case):
    """The batched kernel's C against float64 NumPy, over the whole batch (a product left out would count for
    about 1/count of it, far over the bound; one small product's own relative error is not bounded: its few
    sums may cancel)."""
    _, acc, named, out = precision
    result = matrices.values(d_c.copy_to_host(), "bf16" if out == "int16" else None)
    old = matrices.values(c_in, "bf16" if out == "int16" else None)
    expected = alpha * np.einsum("imk,ikn->imn", matrices.values(a, named), matrices.values(b, named)) + beta * old
    bound = max(BOUND_OF[out], BOUND.get(named, 0), BOUND_OF[acc])
    error = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    assert error < bound, f"{case}: relative error {error:.2e}"


# Matmul.batched by TMA (sm_90 and later): the same loop, A and B by TMA from tensor maps made on the host.
# (precision, tile, block, stages, arrangement)
tma = pytest.mark.skipif(
    not (cuda.is_available() and cuda.get_current_device().compute_capability >= (9, 0)),
    reason="TMA needs sm_90 or later",
)
TMA_CASES = (
    [(p, (64, 64, 64), 128, 3, ("row_major", "row_major")) for p in REGISTER_PRECISIONS]
    + [(p, (32, 64, 16), 128, 2, ("col_major", "row_major")) for p in REGISTER_PRECISIONS[::2]]
    + [(p, (64, 32, 32), 64, 4, ("row_major", "col_major")) for p in REGISTER_PRECISIONS[1::2]]
    + [(REGISTER_PRECISIONS[6], (128, 128, 64), 256, 3, ("col_major", "col_major"))]
)


@tma
@pytest.mark.parametrize("precision,tile,block_dim,stages,arrangement", TMA_CASES, ids=str)
@pytest.mark.parametrize("sizes", BATCH_SIZES)
def test_batched_tma_gemm_against_numpy(precision, tile, block_dim, stages, arrangement, sizes, rng):
    """Products of the tile's size, or smaller with a K that is not a multiple of the K-tile (TMA fills the
    edges with zeros); A's and B's lines padded (a view of wider arrays), either arrangement; fewer blocks
    than products."""
    import numba_tiles as tiles

    dtype, acc, named, out = precision
    m, n, k, count = batch_sizes(tile, sizes, rng)
    mm = tiles.Matmul(
        tile, dtype, accumulator=acc, block_dim=block_dim, precision=named, arrangement=arrangement, stages=stages
    )
    a, b, c = (rng.standard_normal(shape).astype("float32") for shape in ((count, m, k), (count, k, n), (count, m, n)))
    a, b = (matrices.bf16_bits(x) if named == "bf16" else x.astype(dtype) for x in (a, b))
    c_in = matrices.bf16_bits(c) if out == "int16" else c.astype(out)

    def lined(x, order):
        """x on the device in ``order``, its lines padded to a multiple of 16 bytes plus 16 (a view)."""
        lines = x if order == "row_major" else x.transpose(0, 2, 1)
        step = 16 // x.itemsize
        wide = np.zeros(lines.shape[:2] + (-(-lines.shape[2] // step) * step + step,), x.dtype)
        wide[:, :, : lines.shape[2]] = lines
        device = cuda.to_device(wide)
        per_line, per_batch = wide.strides[1], wide.strides[0]
        strides = (per_batch, per_line, x.itemsize) if order == "row_major" else (per_batch, x.itemsize, per_line)
        return DeviceNDArray(x.shape, strides, x.dtype, gpu_data=device.gpu_data)

    alpha, beta = batch_scales(sizes, rng)
    d_a, d_b, d_c = lined(a, arrangement[0]), lined(b, arrangement[1]), cuda.to_device(c_in)
    launch(mm, "tma", d_a, d_b, d_c, alpha, beta, grid=int(rng.integers(1, count // 3)))
    check_batched(d_c, c_in, a, b, alpha, beta, precision, f"{m}x{n}x{k} x {count}, {arrangement}")


@pytest.mark.parametrize("implementation", ["cp.async", pytest.param("tma", marks=tma)])
@pytest.mark.parametrize("tile,stages", [((32, 32, 16), 2), ((64, 64, 16), 3)], ids=str)
def test_batched_float64_over_several_k_tiles(tile, stages, implementation, rng):
    """float64 products of the whole tile over 2 to 6 K-tiles, 128 threads: before the accumulator's zero was
    hidden from ptxas (see matmul.cuh's batched_loop), rows 8-15 of every 16 of C came out wrong whenever a
    product took more than one K-tile."""
    import numba_tiles as tiles

    precision = REGISTER_PRECISIONS[4]
    mm = tiles.Matmul(tile, "float64", block_dim=128, stages=stages)
    m, n, k, count = tile[0], tile[1], tile[2] * int(rng.integers(2, 7)), int(rng.integers(40, 90))
    a, b, c_in = (rng.standard_normal(shape) for shape in ((count, m, k), (count, k, n), (count, m, n)))
    d_a, d_b, d_c = cuda.to_device(a), cuda.to_device(b), cuda.to_device(c_in)
    alpha, beta = batch_scales("ragged", rng)
    launch(mm, implementation, d_a, d_b, d_c, alpha, beta, grid=int(rng.integers(1, count // 3)))
    check_batched(d_c, c_in, a, b, alpha, beta, precision, f"{m}x{n}x{k} x {count}")


@tma
@pytest.mark.parametrize("precision", REGISTER_PRECISIONS[:2], ids=str)
def test_batched_tma_with_more_blocks_than_products(precision, rng):
    """Each block starts its first K-tile before it reads the batch's sizes: blocks left without a product
    wait for that load before they end. More blocks than products, then the same kernel with fewer (a
    float32 C's stage of its own, an fp16 C's written over the buffer just multiplied); ragged m, K over
    several K-tiles or under one."""
    import numba_tiles as tiles

    dtype, acc, named, out = precision
    mm = tiles.Matmul((64, 64, 64), dtype, accumulator=acc, block_dim=128, stages=2)
    for blocks in ("more", "fewer"):
        # (m under the tile; n and k whole 16-byte lines, as TMA takes A and B)
        m, n, k, count = int(rng.integers(1, 65)), 8 * int(rng.integers(1, 9)), 8 * int(rng.integers(1, 30)), 60
        a, b, c = (rng.standard_normal(s).astype("float32") for s in ((count, m, k), (count, k, n), (count, m, n)))
        a, b, c_in = a.astype(dtype), b.astype(dtype), c.astype(out)
        d_a, d_b, d_c = cuda.to_device(a), cuda.to_device(b), cuda.to_device(c_in)
        alpha, beta = batch_scales("ragged", rng)
        grid = count + int(rng.integers(1, 300)) if blocks == "more" else int(rng.integers(1, count // 3))
        launch(mm, "tma", d_a, d_b, d_c, alpha, beta, grid=grid)
        check_batched(d_c, c_in, a, b, alpha, beta, precision, f"{m}x{n}x{k} x {count}, {grid} blocks")


TOO_LITTLE_SHARED_CHILD = r"""
import numpy as np
from numba import cuda
import numba_tiles as tiles
from examples import gemm
from numba_tiles import _programs
from numba_tiles._matmul import mma_tiles

mm = tiles.Matmul((64, 64, 64), "float16", block_dim=128, stages=2)
kernel = gemm.make_batched(mm)
a, b = (cuda.to_device(np.ones((8, 64, 64), np.float16)) for _ in range(2))
c = cuda.to_device(np.zeros((8, 64, 64), np.float16))
ops = mm.operands(a, b, c, implementation="{implementation}")
grid, block, need = mm.launch_config(kernel, ops, 1.0, 0.0)
print("NEED", need, flush=True)
kernel[4, block, 0, need](ops, 1.0, 0.0)   # the bytes mm.launch gives: fine
assert (c.copy_to_host() == 64).all()
kernel[4, block, 0, need - 16](ops, 1.0, 0.0)   # 16 bytes less: stops with a message, before any load
cuda.synchronize()
"""


@pytest.mark.parametrize("implementation", ["cp.async", pytest.param("tma", marks=tma)])
def test_batched_with_too_little_shared_memory_stops_with_a_message(implementation):
    """The size check comes before the block's early first load: too little dynamic shared memory (a launch not by
    mm.launch) is a message, not a fault from a copy into bytes the block lacks."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])
    )
    run = subprocess.run(
        [sys.executable, "-c", TOO_LITTLE_SHARED_CHILD.replace("{implementation}", implementation)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode != 0 and "CUDA_ERROR_ASSERT" in run.stderr, run.stdout + run.stderr[-3000:]
    need = int(run.stdout.split("NEED ")[1].split()[0])
    assert (
        f"tiles.Matmul.batched: shared holds {need - 16} bytes (stride 1); it needs {need} contiguous" in run.stdout
    ), run.stdout


MLIR_KERNELS = """
@cuda.jit
def tile(ops, alpha, beta, cols, count):
    mm.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, alpha, beta)

@cuda.jit
def resident(ops, alpha, beta, cols, count):
    for t in range(cuda.blockIdx.x, count, cuda.gridDim.x):
        mm.tile(ops, t // cols, t % cols, alpha, beta)

@cuda.jit
def gemm(ops, alpha, beta, cols, count):
    mm.gemm(ops, alpha, beta)

@cuda.jit
def batched(ops, alpha, beta, cols, count):
    mm.batched(ops, alpha, beta)
"""


@pytest.mark.parametrize(
    "form,implementation",
    [
        ("tile", "wgmma"),
        ("tile", "libmathdx"),
        ("tile", "cp.async"),
        ("resident", None),
        ("gemm", "wgmma"),
        ("gemm", "libmathdx"),
        ("gemm", "cp.async"),
        ("batched", "tma"),
        ("batched", "wgmma"),
        ("batched", "cp.async"),
    ],
    ids=str,
)
def test_numba_cuda_mlir_kernels_launch_through_mm_launch(form, implementation, rng):
    """``mm.tile``, ``mm.gemm`` and ``mm.batched`` in numba-cuda-mlir kernels, launched by ``mm.launch`` (``ops`` as
    the tuple of its arrays that its launcher takes, dynamic shared memory over 48 KiB, the resident grid from the
    occupancy of its kernel), A, B and C its own device arrays: C against NumPy, ragged sizes."""
    mlir_cuda = pytest.importorskip("numba_cuda_mlir.cuda")
    import numba_tiles as tiles

    mm = tiles.Matmul((128, 128, 64), "float16", accumulator="float32")
    batch = form == "batched"
    ndim = 3 if batch else 2
    if implementation and implementation not in mm._implementations(
        tuple(cuda.get_current_device().compute_capability), "float32", ndim
    ):
        pytest.skip(f"{implementation} does not compute this Matmul's {form} on this GPU")
    scope = {"cuda": mlir_cuda, "mm": mm}
    exec(MLIR_KERNELS, scope)
    # (n and k whole 16-byte lines, as TMA takes A and B)
    m, n, k = (
        (int(rng.integers(1, 129)), 8 * int(rng.integers(1, 17)), 8 * int(rng.integers(1, 40)))
        if batch
        else (int(rng.integers(200, 700)), 8 * int(rng.integers(25, 90)), 8 * int(rng.integers(10, 90)))
    )
    lead = (int(rng.integers(50, 300)),) if batch else ()
    a, b, c = (
        rng.standard_normal((*lead, *s)).astype(t)
        for s, t in (((m, k), "float16"), ((k, n), "float16"), ((m, n), "float32"))
    )
    alpha, beta = float(rng.uniform(0.5, 2)), float(rng.uniform(-1, 1))
    d_c = mlir_cuda.to_device(c)
    ops = mm.operands(mlir_cuda.to_device(a), mlir_cuda.to_device(b), d_c, implementation=implementation)
    cols = -(-n // 128)
    grid = "resident" if form in ("resident", "gemm") else None
    mm.launch(scope[form], ops, alpha, beta, cols, cols * -(-m // 128), grid=grid)
    expected = alpha * np.matmul(a.astype(np.float64), b.astype(np.float64)) + beta * c
    error = np.linalg.norm(d_c.copy_to_host() - expected) / np.linalg.norm(expected)
    assert error < BOUND["float16"], f"{form} by {ops.implementation}, {lead} {m}x{n}x{k}: relative error {error:.2e}"
