"""tiles.matmul, tile_load and tile_store on Numba's simulator: examples/gemm.py's kernel against NumPy."""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles
from examples import gemm


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
    kernel = gemm.make_gemm((8, 8, 4), dtype, acc, 16, order, precision)
    result = gemm.run(kernel, a, b, c, 0.5, -1.5, (8, 8, 4), 16)
    assert gemm.relative_error(result, a, b, c, 0.5, -1.5, precision) < (1e-3 if precision == "tf32" else 1e-6)


def test_matmul_checks_the_tile_sizes():
    @cuda.jit
    def wrong(x):
        sa = cuda.shared.array((8, 4), np.float32)
        sc = cuda.shared.array((8, 8), np.float32)
        tiles.matmul(sa, sa, sc, shape=(8, 8, 4), block_dim=4)

    with pytest.raises(tiles.TilesError, match=r"tiles.matmul: b is 8 x 4; shape=\(8, 8, 4\) needs 4 x 8"):
        wrong[1, 4](np.zeros(1, np.float32))
