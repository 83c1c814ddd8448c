"""tiles.matmul, tile_load, tile_store and tiles.Matmul on Numba's simulator: examples/gemm.py's kernels against
NumPy."""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles
from examples import gemm

from ..support import epilogues, matrices


@pytest.mark.parametrize(
    "dtype,order,precision",
    [
        ("float32", ("C", "C"), None),
        ("float64", ("F", "C"), None),
        ("float64", ("C", "F", "F"), None),
        ("float32", ("C", "C"), "tf32"),
        ("int16", ("F", "C"), "bf16"),
    ],
)
def test_gemm_against_numpy(dtype, order, precision, rng):
    m, n, k = (int(v) for v in rng.integers(9, 24, 3))  # not multiples of the 8 x 8 x 4 tiles
    a = rng.standard_normal((k, m)).astype(np.float32).T  # a strided (transposed) view
    b = rng.standard_normal((k, n)).astype(np.float32)
    a, b = (
        (matrices.bf16_bits(a).T.copy().T, matrices.bf16_bits(b))
        if precision == "bf16"
        else (a.astype(dtype), b.astype(dtype))
    )
    acc = "float64" if dtype == "float64" else "float32"
    c = rng.standard_normal((m, n)).astype(acc)
    kernel = gemm.make_gemm((8, 8, 4), dtype, acc, 32, order, precision)
    result = gemm.run(kernel, a, b, c, 0.5, -1.5, (8, 8, 4), 32)
    assert matrices.relative_error(result, a, b, c, 0.5, -1.5, precision) < (1e-3 if precision == "tf32" else 1e-6)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_gemm_against_numpy(dtype, rng):
    m, n, k = (int(v) for v in rng.integers(9, 24, 3))
    a, b, c = (rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in ((m, k), (k, n), (m, n)))
    a, b, c = a.astype(dtype), b.T.astype(dtype).T, c.astype(dtype)  # b: a strided view
    alpha, beta = 0.5 - 0.25j, -1.5 + 1j
    result = gemm.run(gemm.make_gemm((8, 8, 4), dtype, dtype, 32, ("C", "F")), a, b, c, alpha, beta, (8, 8, 4), 32)
    assert matrices.relative_error(result, a, b, c, alpha, beta) < (1e-5 if dtype == "complex64" else 1e-12)


def test_matmul_checks_the_tile_sizes():
    @cuda.jit
    def wrong(x):
        sa = cuda.shared.array((8, 4), np.float32)
        sc = cuda.shared.array((8, 8), np.float32)
        tiles.matmul(sa, sa, sc, shape=(8, 8, 4), block_dim=32)

    with pytest.raises(tiles.TilesError, match=r"tiles.matmul: b is 8 x 4; shape=\(8, 8, 4\) needs 4 x 8"):
        wrong[1, 32](np.zeros(1, np.float32))


def test_asynchronous_loads_are_ready_after_tile_wait(rng):
    @cuda.jit
    def two(x, out):
        first = cuda.shared.array((4, 4), np.float64)
        second = cuda.shared.array((4, 4), np.float64)
        tiles.tile_load(x, first, 0, 0, block_dim=16, asynchronous=True)
        tiles.tile_load(x, second, 4, 2, -1.0, block_dim=16, asynchronous=True)
        tiles.tile_wait(block_dim=16)
        t = cuda.threadIdx.x
        out[t // 4, t % 4] = first[t // 4, t % 4] + second[t // 4, t % 4]

    x = rng.standard_normal((7, 5))
    out = np.zeros((4, 4))
    two[1, 16](x, out)
    second = np.full((4, 4), -1.0)
    second[:3, :3] = x[4:7, 2:5]
    np.testing.assert_array_equal(out, x[:4, :4] + second)


@pytest.mark.parametrize(
    "dtype,accumulator,named,out,staged,stages",
    [
        ("float32", "float32", None, "float32", False, 2),
        ("float64", "float64", None, "float64", True, 3),
        ("float16", "float32", None, "float16", True, 4),
        ("int16", "float32", "bf16", "float32", False, 3),
    ],
)
def test_the_register_form_on_the_simulator(dtype, accumulator, named, out, staged, stages, rng):
    """examples/gemm.py's own-loop tiles.Matmul kernel on Numba's simulator, against NumPy."""
    m, n, k = 37, 21, 40
    a, b = (rng.standard_normal(shape).astype("float32" if named else dtype) for shape in ((m, k), (k, n)))
    if named:
        a, b = matrices.bf16_bits(a), matrices.bf16_bits(b)
    c = rng.standard_normal((m, n)).astype(out)
    mm = tiles.Matmul((16, 16, 16), dtype, accumulator=accumulator, block_dim=32, precision=named)
    result = gemm.run(gemm.make_own_loop(mm, staged, stages), a, b, c, 0.75, -1.25, (16, 16, 16), 32)
    bound = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2}[out]
    assert matrices.relative_error(result, a, b, c, 0.75, -1.25, named) < bound


@pytest.mark.parametrize(
    "dtype,precision,c_dtype",
    [
        ("float16", None, "float32"),
        ("int16", "bf16", "int16"),
        ("float32", "tf32", "float32"),
        ("float64", None, "float64"),
    ],
)
def test_tile_gemm_against_numpy(dtype, precision, c_dtype, rng):
    """Matmul.tile's twin: examples/gemm.py's one-line kernel launched by Matmul.launch, sizes not multiples of the
    16 x 16 tiles (tf32: A and B rounded to tf32 against a float64 reference)."""
    mm = tiles.Matmul((16, 16, 8), dtype, precision=precision, block_dim=32)
    m, n, k = (int(v) for v in rng.integers(17, 40, 3))
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    a, b = (matrices.bf16_bits(a), matrices.bf16_bits(b)) if precision == "bf16" else (a.astype(dtype), b.astype(dtype))
    c = matrices.bf16_bits(c) if c_dtype == "int16" else c.astype(c_dtype)
    c_kind = precision if c_dtype == "int16" else None
    expected = 0.5 * (matrices.values(a, precision) @ matrices.values(b, precision)) - 1.5 * matrices.values(c, c_kind)
    ops = mm.operands(a, b, c)
    assert ops.implementation == "cp.async" and ops.threads == 32
    mm.launch(gemm.make_tile_gemm(mm), ops, 0.5, -1.5)
    bound = 1e-2 if c_dtype == "int16" else 1e-3 if precision == "tf32" else 1e-6
    assert np.linalg.norm(matrices.values(c, c_kind) - expected) / np.linalg.norm(expected) < bound


@pytest.mark.parametrize("dtype,precision", [("float16", None), ("int16", "bf16"), ("float64", None)])
@pytest.mark.parametrize("grid", [None, 1, 4, "resident"])
def test_whole_gemm_against_numpy(dtype, precision, grid, rng):
    """Matmul.gemm's twin: all of C by the default grid (a block a tile), one block, four (each several tiles, in
    gemm's order) and the resident grid, sizes not multiples of the 16 x 16 tiles."""
    mm = tiles.Matmul((16, 16, 8), dtype, precision=precision, block_dim=32)
    m, n, k = (int(v) for v in rng.integers(17, 70, 3))
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    a, b = (matrices.bf16_bits(a), matrices.bf16_bits(b)) if precision else (a.astype(dtype), b.astype(dtype))
    c = c.astype(mm.accumulator)
    expected = 0.5 * (matrices.values(a, precision) @ matrices.values(b, precision)) - 1.5 * c
    mm.launch(gemm.make_whole_gemm(mm), mm.operands(a, b, c), 0.5, -1.5, grid=grid)
    bound = 1e-12 if dtype == "float64" else 1e-6
    assert np.linalg.norm(c - expected) / np.linalg.norm(expected) < bound


@pytest.mark.parametrize("tiles_m,tiles_n", [(1, 1), (3, 5), (8, 2), (17, 3), (20, 9)])
def test_the_gemm_order_takes_every_tile_once_in_groups_of_rows(tiles_m, tiles_n):
    from numba_tiles._matmul.twins import GEMM_GROUP, gemm_tile

    order = [gemm_tile(t, tiles_m, tiles_n) for t in range(tiles_m * tiles_n)]
    assert sorted(order) == [(i, j) for i in range(tiles_m) for j in range(tiles_n)]
    groups = [i // GEMM_GROUP for i, _ in order]
    assert groups == sorted(groups)  # a group of rows at a time, down each column of it
    first = order[: min(tiles_m, GEMM_GROUP)]
    assert first == [(i, 0) for i in range(min(tiles_m, GEMM_GROUP))]


@pytest.mark.parametrize(
    "dtype,accumulator,named,out",
    [
        ("float32", "float32", None, "float32"),
        ("float16", "float32", None, "float16"),
        ("int16", "float32", "bf16", "int16"),
    ],
)
@pytest.mark.parametrize("grid", [None, 2, 9])
def test_batched_gemm_against_numpy(dtype, accumulator, named, out, grid, rng):
    """Matmul.batched's twin: examples/gemm.py's batched kernel over 5 products smaller than the tile, K not a
    multiple of it, with mm.launch's grid, two blocks taking them in turn, and more blocks than products."""
    mm = tiles.Matmul((16, 16, 16), dtype, accumulator=accumulator, block_dim=32, precision=named)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((5, 12, 20), (5, 20, 9), (5, 12, 9)))
    a, b = (matrices.bf16_bits(a), matrices.bf16_bits(b)) if named else (a.astype(dtype), b.astype(dtype))
    c = matrices.bf16_bits(c) if out == "int16" else c.astype(out)
    c_kind = "bf16" if out == "int16" else None
    expected = 0.5 * np.einsum(
        "imk,ikn->imn", matrices.values(a, named), matrices.values(b, named)
    ) - 1.5 * matrices.values(c, c_kind)
    mm.launch(gemm.make_batched(mm), mm.operands(a, b, c), 0.5, -1.5, grid=grid)
    result = matrices.values(c, c_kind)
    assert np.linalg.norm(result - expected) / np.linalg.norm(expected) < (1e-2 if out != "float32" else 1e-6)


def test_operands_of_another_description_are_refused():
    mm, other = tiles.Matmul((16, 16, 16), "float32", block_dim=32), tiles.Matmul((16, 16, 8), "float32", block_dim=32)
    a, b, c = (np.zeros(s, np.float32) for s in ((20, 20), (20, 20), (20, 20)))
    with pytest.raises(tiles.TilesError, match=r"tiles.Matmul.tile: ops were made by another description"):
        gemm.make_tile_gemm(mm)[1, 32](other.operands(a, b, c), 1.0, 0.0)
    with pytest.raises(
        tiles.TilesError,
        match=r"tiles.Matmul.launch: it needs one Operands of Matmul\(shape=\(16, 16, "
        r"16\).*Fix: pass ops = mm.operands\(a, b, c\) of this Matmul",
    ):
        mm.launch(gemm.make_tile_gemm(mm), other.operands(a, b, c), 1.0, 0.0)


@pytest.mark.parametrize(
    "precision,out,staged", [(None, "float32", False), (None, "float16", True), ("bf16", "int16", True)]
)
def test_the_register_form_stores_through_the_epilogue(precision, out, staged, rng):
    epilogues.register_form(rng, (16, 16, 16), 32, precision, out, staged)


@pytest.mark.parametrize(
    "precision,out,implementation",
    [(None, "float16", "cp.async"), ("bf16", "int16", "tma"), (None, "float32", "wgmma")],
)
def test_a_batch_stores_through_the_epilogue(precision, out, implementation, rng):
    epilogues.batch(rng, (16, 16, 16), 32, precision, out, implementation)


@pytest.mark.parametrize("call,out", [("tile", "int16"), ("tile", "float32"), ("gemm", "int16")])
def test_a_tile_stores_through_the_epilogue(call, out, rng):
    epilogues.tile(rng, (16, 16, 16), out, None, call=call)
