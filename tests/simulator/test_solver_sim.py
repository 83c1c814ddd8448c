"""tiles.Solver on Numba's simulator: its twin's factors and solutions against numpy.linalg on fresh random problems
(several a block, both arrangements and triangles), its LAPACK layouts (1-based pivots, Householder vectors), and
``info`` for the problems that fail and only those."""

import numpy as np
import pytest
from numba import float32

import numba_tiles as tiles

from ..support.compiler import cuda
from ..support.solvers import householder_q, permutation_of, random, run, spd

COUNT = 12


@pytest.mark.parametrize("fill_mode, arrangement", [("lower", "row_major"), ("upper", "col_major")])
def test_cholesky_solves_and_reports_the_failing_minor(fill_mode, arrangement, rng):
    n = 5
    s = tiles.Solver("posv", n, "float64", nrhs=2, fill_mode=fill_mode, arrangement=arrangement)
    assert s.batches_per_block == 6
    a = spd(rng, COUNT, n, "float64")
    a[7, 2, 2] = -50.0  # problem 7's third leading minor is not positive definite
    b = random(rng, (COUNT, n, 2), "float64")
    a_out, x, _, _, info = run(s, a, b)
    assert info.tolist() == [0] * 7 + [3] + [0] * 4
    good = np.arange(COUNT) != 7
    np.testing.assert_allclose(x[good], np.linalg.solve(a[good], b[good]), rtol=1e-10, atol=1e-10)
    factor = np.tril(a_out[0]) if fill_mode == "lower" else np.triu(a_out[0]).T
    np.testing.assert_allclose(factor @ factor.T, a[0], rtol=1e-10, atol=1e-10)


def test_lu_with_partial_pivoting_keeps_lapacks_pivots(rng):
    n = 6
    a = random(rng, (COUNT, n, n), "complex128")
    a[4, :, 2] = 0  # problem 4: a zero pivot in its third column
    b = random(rng, (COUNT, n, 1), "complex128")
    a_out, x, ipiv, _, info = run(tiles.Solver("gesv", n, "complex128", batches_per_block=3), a, b)
    assert info.tolist() == [0] * 4 + [3] + [0] * 7
    good = np.arange(COUNT) != 4
    np.testing.assert_allclose(x[good], np.linalg.solve(a[good], b[good]), rtol=1e-9, atol=1e-9)
    lower = np.tril(a_out[0], -1) + np.eye(n)
    np.testing.assert_allclose(lower @ np.triu(a_out[0]), a[0][permutation_of(ipiv[0], n)], atol=1e-10)
    assert ipiv.min() >= 1 and ipiv.max() <= n


def test_qr_and_least_squares(rng):
    m, n = 7, 4
    a = random(rng, (COUNT, m, n), "float64")
    h, _, _, tau, _ = run(tiles.Solver("geqrf", (m, n), "float64"), a)
    q = householder_q(h[3], tau[3])
    np.testing.assert_allclose(q[:, :n] @ np.triu(h[3][:n]), a[3], atol=1e-10)
    b = random(rng, (COUNT, m, 1), "float64")
    _, x, _, _, _ = run(tiles.Solver("gels", (m, n), "float64"), a, b)
    want = np.stack([np.linalg.lstsq(a[j], b[j], rcond=None)[0] for j in range(COUNT)])
    np.testing.assert_allclose(x[:, :n], want, atol=1e-10)


def test_operands_past_48_kib_go_to_the_launchs_dynamic_shared_memory(rng):
    n = 80
    s = tiles.Solver("posv", n, "float64", batches_per_block=1, block_dim=32)
    assert s.shared_memory_bytes == (n * n + n) * 8 > 48 * 1024 and s.b_start == n * n
    a = spd(rng, 2, n, "float64")
    b = random(rng, (2, n, 1), "float64")
    _, x, _, _, info = run(s, a, b)
    assert (info == 0).all()
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "function, arrangement, dtype",
    [("posv", "col_major", "float64"), ("gesv", "row_major", "complex128"), ("gels", "col_major", "float64")],
)
def test_padded_leading_dimensions(function, arrangement, dtype, rng):
    m, n = (6, 4) if function == "gels" else (5, 5)
    padded = (m + 3, m + 1)
    s = tiles.Solver(
        function, (m, n), dtype, nrhs=2, arrangement=arrangement, leading_dimension=padded, batches_per_block=3
    )
    lines = n if arrangement == "col_major" else m
    assert s.a_size == s.batches_per_block * lines * (m + 3) and s.leading_dimension == (s.lda, s.ldb)
    a = spd(rng, COUNT, n, dtype) if function == "posv" else random(rng, (COUNT, m, n), dtype)
    b = random(rng, (COUNT, m, 2), dtype)
    _, x, _, _, _ = run(s, a, b)  # (the padding holds NaNs: a solution that read it would be NaN)
    want = np.stack([np.linalg.lstsq(a[j], b[j], rcond=None)[0] for j in range(COUNT)])
    np.testing.assert_allclose(x[:, :n], want, rtol=1e-9, atol=1e-9)


def test_tile_load_stages_a_padded_matrix(rng):
    s = tiles.Solver("posv", 8, "float32", leading_dimension="padded", batches_per_block=1)

    @cuda.jit
    def solve(a, b, info):  # a: (problems * 8) x 8, b: problems x 8
        A = cuda.shared.array((s.m, s.lda), float32)
        B = cuda.shared.array(s.b_size, float32)
        k = cuda.blockIdx.x
        tiles.tile_load(a, A[:, : s.n], k * s.m, 0, block_dim=s.threads)
        for i in range(cuda.threadIdx.x, s.n, s.threads):
            B[i] = b[k, i]
        cuda.syncthreads()
        s.execute(A, B, info=info[k:])
        for i in range(cuda.threadIdx.x, s.n, s.threads):
            b[k, i] = B[i]

    a = spd(rng, 4, 8, "float32").astype(np.float32)
    b = random(rng, (4, 8), "float32").astype(np.float32)
    x, info = b.copy(), np.full(4, -1, np.int32)
    solve[4, s.threads](a.reshape(32, 8), x, info)
    assert not info.any()
    want = np.linalg.solve(a.astype(np.float64), b[..., None].astype(np.float64))[..., 0]
    np.testing.assert_allclose(x, want, rtol=1e-4, atol=1e-4)


def test_a_host_attribute_passed_as_a_constant_is_refused_as_the_compilers_do():
    s = tiles.Solver("posv", 8, "float32", batches_per_block=1)

    @cuda.jit
    def host_block(a):
        A = cuda.shared.array((8, 8), float32)
        tiles.tile_load(a, A, 0, 0, block_dim=s.block_dim)

    with pytest.raises(tiles.TilesError, match=r"tiles\.Solver\.block_dim: .* Fix: pass block_dim=solver.threads"):
        host_block[1, 32](np.zeros((8, 8), np.float32))
