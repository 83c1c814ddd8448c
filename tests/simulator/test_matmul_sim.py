"""tiles.matmul, tile_load and tile_store on Numba's simulator: examples/gemm.py's kernel against NumPy."""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles
from examples import gemm

from .. import epilogues


@pytest.mark.parametrize("dtype,order,precision", [("float32", ("C", "C"), None), ("float64", ("F", "C"), None),
                                                   ("float64", ("C", "F"), None), ("float32", ("C", "C"), "tf32"),
                                                   ("int16", ("F", "C"), "bf16")])
def test_gemm_against_numpy(dtype, order, precision, rng):
    m, n, k = (int(v) for v in rng.integers(9, 24, 3))  # not multiples of the 8 x 8 x 4 tiles
    a = rng.standard_normal((k, m)).astype(np.float32).T  # a strided (transposed) view
    b = rng.standard_normal((k, n)).astype(np.float32)
    a, b = (gemm.bf16_bits(a).T.copy().T, gemm.bf16_bits(b)) if precision == "bf16" else (a.astype(dtype), b.astype(dtype))
    acc = "float64" if dtype == "float64" else "float32"
    c = rng.standard_normal((m, n)).astype(acc)
    kernel = gemm.make_gemm((8, 8, 4), dtype, acc, 32, order, precision)
    result = gemm.run(kernel, a, b, c, 0.5, -1.5, (8, 8, 4), 32)
    assert gemm.relative_error(result, a, b, c, 0.5, -1.5, precision) < (1e-3 if precision == "tf32" else 1e-6)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_gemm_against_numpy(dtype, rng):
    m, n, k = (int(v) for v in rng.integers(9, 24, 3))
    a, b, c = (rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in ((m, k), (k, n), (m, n)))
    a, b, c = a.astype(dtype), b.T.astype(dtype).T, c.astype(dtype)  # b: a strided view
    alpha, beta = 0.5 - 0.25j, -1.5 + 1j
    result = gemm.run(gemm.make_gemm((8, 8, 4), dtype, dtype, 32, ("C", "F")), a, b, c, alpha, beta, (8, 8, 4), 32)
    assert gemm.relative_error(result, a, b, c, alpha, beta) < (1e-5 if dtype == "complex64" else 1e-12)


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


@pytest.mark.parametrize("dtype,accumulator,named,out,staged,stages", [
    ("float32", "float32", None, "float32", False, 2), ("float64", "float64", None, "float64", True, 3),
    ("float16", "float32", None, "float16", True, 4), ("int16", "float32", "bf16", "float32", False, 3)])
def test_the_register_form_on_the_simulator(dtype, accumulator, named, out, staged, stages, rng):
    """examples/gemm.py's pipelined tiles.Matmul kernel on Numba's simulator, against NumPy."""
    m, n, k = 37, 21, 40
    a, b = (rng.standard_normal(shape).astype("float32" if named else dtype) for shape in ((m, k), (k, n)))
    if named:
        a, b = gemm.bf16_bits(a), gemm.bf16_bits(b)
    c = rng.standard_normal((m, n)).astype(out)
    kernel = gemm.make_pipelined_gemm((16, 16, 16), dtype, accumulator, 32, named, staged=staged, stages=stages)
    result = gemm.run(kernel, a, b, c, 0.75, -1.25, (16, 16, 16), 32)
    bound = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2}[out]
    assert gemm.relative_error(result, a, b, c, 0.75, -1.25, named) < bound


@pytest.mark.parametrize("dtype,precision,c_dtype", [("float16", None, "float32"), ("int16", "bf16", "int16"),
                                                     ("float32", "tf32", "float32")])
def test_pipeline_gemm_against_numpy(dtype, precision, c_dtype, rng):
    """tiles.PipelineMatmul's twin: examples/gemm.py's persistent kernel, sizes not multiples of the 64 x 64 tiles
    (tf32: B column-major, its one arrangement; A and B rounded to tf32 against a float64 reference)."""
    arrangement = ("row_major", "col_major") if precision == "tf32" else ("row_major", "row_major")
    mm = tiles.PipelineMatmul((64, 64, 16), dtype, precision=precision, c_dtype=c_dtype, block_dim=128,
                              arrangement=arrangement)
    m, n, k = (int(v) for v in rng.integers(65, 100, 3))
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    if precision == "bf16":
        a, b = gemm.bf16_bits(a), gemm.bf16_bits(b)
    else:
        a, b = a.astype(dtype), b.astype(dtype)
    if precision == "tf32":
        b = np.asfortranarray(b)
    c = gemm.bf16_bits(c) if c_dtype == "int16" else c
    expected = 0.5 * (gemm.values(a, precision) @ gemm.values(b, precision)) - 1.5 * gemm.values(c, precision if
                                                                                                c_dtype == "int16" else None)
    kernel = gemm.make_hopper_gemm(mm)
    pipe = mm.prepare(a, b)
    kernel[2, mm.threads](pipe, c, 0.5, -1.5)  # two blocks take the tiles in turn
    result = gemm.values(c, precision if c_dtype == "int16" else None)
    bound = 1e-2 if c_dtype == "int16" else 1e-3 if precision == "tf32" else 1e-6
    assert np.linalg.norm(result - expected) / np.linalg.norm(expected) < bound


@pytest.mark.parametrize("dtype,accumulator,named,out", [("float32", "float32", None, "float32"),
                                                         ("float16", "float32", None, "float16"),
                                                         ("int16", "float32", "bf16", "int16")])
@pytest.mark.parametrize("tma", [False, True])
def test_batched_gemm_against_numpy(dtype, accumulator, named, out, tma, rng):
    """Matmul.batched's and batched_tma's twins: examples/gemm.py's persistent batched kernel, two blocks taking
    5 products in turn (run_batched's 3 products a block)."""
    mm = tiles.Matmul((16, 16, 16), dtype, accumulator=accumulator, block_dim=32, precision=named)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((5, 12, 20), (5, 20, 9), (5, 12, 9)))
    a, b = (gemm.bf16_bits(a), gemm.bf16_bits(b)) if named else (a.astype(dtype), b.astype(dtype))
    c = gemm.bf16_bits(c) if out == "int16" else c.astype(out)
    c_kind = "bf16" if out == "int16" else None
    expected = 0.5 * np.einsum("imk,ikn->imn", gemm.values(a, named), gemm.values(b, named)) - 1.5 * gemm.values(c, c_kind)
    gemm.run_batched(mm, gemm.make_batched_gemm(mm, 3, tma), a, b, c, 0.5, -1.5, per_block=3)
    result = gemm.values(c, c_kind)
    assert np.linalg.norm(result - expected) / np.linalg.norm(expected) < (1e-2 if out != "float32" else 1e-6)


@pytest.mark.parametrize("dtype,precision,c_dtype", [("float16", None, "float16"), ("int16", "bf16", "float32")])
def test_pipeline_batched_against_numpy(dtype, precision, c_dtype, rng):
    """PipelineMatmul.batched's twin: examples/gemm.py's Hopper batched kernel, two blocks over 5 products smaller
    than the 64 x 64 tile, K not a multiple of its 16."""
    mm = tiles.PipelineMatmul((64, 64, 16), dtype, precision=precision, c_dtype=c_dtype)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((5, 50, 37), (5, 37, 61), (5, 50, 61)))
    a, b = (gemm.bf16_bits(a), gemm.bf16_bits(b)) if precision else (a.astype(dtype), b.astype(dtype))
    c = c.astype(c_dtype)
    expected = 0.5 * np.einsum("imk,ikn->imn", gemm.values(a, precision), gemm.values(b, precision)) - 1.5 * c
    gemm.run_hopper_batched(mm, gemm.make_hopper_batched(mm), a, b, c, 0.5, -1.5, blocks=2)
    bound = 1e-2 if c_dtype == "float16" else 1e-6
    assert np.linalg.norm(c - expected) / np.linalg.norm(expected) < bound


@pytest.mark.parametrize("precision,out,staged", [(None, "float32", False), (None, "float16", True),
                                                  ("bf16", "int16", True)])
def test_the_register_form_stores_through_the_epilogue(precision, out, staged, rng):
    epilogues.register_form(rng, (16, 16, 16), 32, precision, out, staged)


@pytest.mark.parametrize("precision,out,tma", [(None, "float16", False), ("bf16", "int16", True),
                                               (None, "float32", True)])
def test_a_batch_stores_through_the_epilogue(precision, out, tma, rng):
    epilogues.batch(rng, (16, 16, 16), 32, precision, out, tma)


def test_the_hopper_forms_store_through_the_epilogue(rng):
    epilogues.hopper_batch(rng, (64, 64, 16), "bf16", "float32")
    epilogues.hopper_tile(rng, (64, 64, 16), 128, "int16")
