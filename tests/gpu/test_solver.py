"""tiles.Solver on the GPU: every function and dtype at sizes from 1 to the largest a block's shared memory holds,
checked against numpy.linalg on fresh random problems (factors by reconstruction, solutions against
``numpy.linalg.solve``/``lstsq``), in both arrangements and triangles; failing inputs (a matrix that is not positive
definite, a singular one) report ``info`` for their own problem only."""

import numpy as np
import pytest

import numba_tiles as tiles

from ..support.compiler import cuda
from ..support.solvers import householder_q, permutation_of, random, run, spd

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]

TOL = {"float32": 2e-3, "complex64": 2e-3, "float64": 1e-9, "complex128": 1e-9}
SIZES = (1, 5, 32, 64)
REAL = ("float32", "float64")
COMPLEX = ("complex64", "complex128")
COUNT = 96  # problems a launch (a multiple of every batches_per_block used here)


def close(got, want, dtype, scale=1.0):
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1.0)
    assert err <= TOL[dtype] * scale, err


def sizes(dtype, fill_mode="lower"):
    """The sizes a test runs (one after the other: the sanitizer's subset keeps a test's parameters, not its loops)."""
    return (7,) if "complex" in dtype else SIZES if fill_mode == "lower" else (5, 32)


@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_cholesky_factors_and_solves(dtype, rng):
    for function, fill_mode in ((f, m) for f in ("posv", "potrf") for m in ("lower", "upper")):
        for n in sizes(dtype, fill_mode):
            cholesky_case(function, n, dtype, fill_mode, rng)


def cholesky_case(function, n, dtype, fill_mode, rng):
    s = tiles.Solver(function, n, dtype, fill_mode=fill_mode, nrhs=3 if function == "posv" else 1)
    a = spd(rng, COUNT, n, dtype)
    b = random(rng, (COUNT, n, 3), dtype) if function == "posv" else None
    a_out, b_out, _, _, info = run(s, a, b)
    assert (info == 0).all()
    if function == "posv":
        close(b_out, np.linalg.solve(a, b), dtype, scale=n)
    factor = np.tril(a_out) if fill_mode == "lower" else np.conj(np.swapaxes(np.triu(a_out), 1, 2))
    close(factor @ np.conj(np.swapaxes(factor, 1, 2)), a, dtype, scale=n)


@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_potrs_solves_with_numpys_factor_in_both_arrangements(dtype, rng):
    n = 24
    for arrangement in ("row_major", "col_major"):
        s = tiles.Solver("potrs", n, dtype, nrhs=2, arrangement=arrangement)
        a = spd(rng, COUNT, n, dtype)
        b = random(rng, (COUNT, n, 2), dtype)
        _, b_out, _, _, _ = run(s, np.linalg.cholesky(a), b)
        close(b_out, np.linalg.solve(a, b), dtype, scale=n)


@pytest.mark.parametrize("dtype", REAL + COMPLEX)
@pytest.mark.parametrize("pivot", ["partial", None])
def test_lu_factors_and_solves(dtype, pivot, rng):
    for function in ("gesv", "getrf"):
        for n in sizes(dtype):
            lu_case(function, n, dtype, pivot, rng)


def lu_case(function, n, dtype, pivot, rng):
    s = tiles.Solver(function, n, dtype, pivot=pivot)
    a = random(rng, (COUNT, n, n), dtype)
    if pivot is None:  # (diagonally dominant: no pivot is needed)
        a = a + 2 * n * np.eye(n)
    b = random(rng, (COUNT, n, 1), dtype) if function == "gesv" else None
    a_out, b_out, ipiv, _, info = run(s, a, b)
    assert (info == 0).all()
    if function == "gesv":
        close(b_out, np.linalg.solve(a, b), dtype, scale=10 * n)
    lower = np.tril(a_out, -1) + np.eye(n)
    for j in range(COUNT):
        order = permutation_of(ipiv[j], n) if pivot else np.arange(n)
        close(lower[j] @ np.triu(a_out[j]), a[j][order], dtype, scale=n)
        if pivot:  # partial pivoting: every multiplier at most 1 in size (complex: |re| + |im| picks the pivot)
            assert np.abs(lower[j]).max() <= (np.sqrt(2) if "complex" in dtype else 1) + 1e-5


@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_every_count_of_right_hand_sides_solves(dtype, rng):
    """At 40 rows, blocks of 64 threads for even counts; a warp where cuSOLVERDx 0.5 needs one (odd counts past
    one), which an odd count gets by default."""
    n = 40
    counts = range(2, 8) if dtype == "float64" else (3, 4)
    for function, nrhs in ((f, k) for f in ("posv", "gesv") for k in counts):
        s = tiles.Solver(function, n, dtype, nrhs=nrhs, batches_per_block=1, block_dim=None if nrhs % 2 else 64)
        assert s.threads == (32 if nrhs % 2 else 64)
        a = spd(rng, COUNT, n, dtype)
        b = random(rng, (COUNT, n, nrhs), dtype)
        _, x, _, _, info = run(s, a, b)
        assert (info == 0).all()
        close(x, np.linalg.solve(a, b), dtype, scale=n)


@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_getrs_solves_with_getrf_s_factors(dtype, rng):
    n = 20
    a = random(rng, (COUNT, n, n), dtype)
    b = random(rng, (COUNT, n, 4), dtype)
    a_out, _, ipiv, _, info = run(tiles.Solver("getrf", n, dtype), a)
    _, x, _, _, _ = run(tiles.Solver("getrs", n, dtype, nrhs=4), a_out, b, ipiv=ipiv)
    close(x, np.linalg.solve(a, b), dtype, scale=50 * n)


@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_qr_factors_and_least_squares(dtype, rng):
    shapes = [(1, 1), (8, 5), (64, 32), (33, 33), (12, 7)] if dtype in REAL else [(12, 7), (33, 20)]
    for m, n in shapes:
        qr_case(m, n, dtype, rng)


def qr_case(m, n, dtype, rng):
    a = random(rng, (COUNT, m, n), dtype)
    h, _, _, tau, _ = run(tiles.Solver("geqrf", (m, n), dtype), a)
    for j in range(0, COUNT, 7):
        q = householder_q(h[j], tau[j])
        close(q[:, :n] @ np.triu(h[j][:n]), a[j], dtype, scale=m)
    b = random(rng, (COUNT, m, 2), dtype)
    _, x, _, _, _ = run(tiles.Solver("gels", (m, n), dtype, nrhs=2), a, b)
    want = np.stack([np.linalg.lstsq(a[j], b[j], rcond=None)[0] for j in range(COUNT)])
    close(x[:, :n], want, dtype, scale=100 * m)


@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_the_largest_problem_a_block_holds(dtype, rng):
    for function in ("posv", "gesv"):
        largest_case(function, dtype, rng)


def largest_case(function, dtype, rng):
    n = tiles.Solver.largest_size(function, dtype)
    s = tiles.Solver(function, n, dtype, batches_per_block=1)
    count = 8
    a = spd(rng, count, n, dtype) if function == "posv" else random(rng, (count, n, n), dtype) + n * np.eye(n)
    b = random(rng, (count, n, 1), dtype)
    _, x, _, _, info = run(s, a, b)
    assert (info == 0).all()
    close(x, np.linalg.solve(a, b), dtype, scale=10 * n)


@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_info_reports_the_failing_problem_only(dtype, rng):
    """Problems that are not positive definite (posv) or singular (gesv) report the 1-based order of the first
    failing minor / the first zero pivot; the others in the same blocks solve."""
    n = 8
    b = random(rng, (COUNT, n, 1), dtype)
    a = spd(rng, COUNT, n, dtype)
    bad = {3: 1, 10: 5, 41: 8}  # problem → the leading minor that fails
    for j, order in bad.items():
        a[j, order - 1, order - 1] = -1e3
    expect_info("posv", a, b, bad, dtype, scale=n)
    a = random(rng, (COUNT, n, n), dtype)
    singular = {0: 1, 17: 4, 95: 8}  # problem → a column of zeros (which elimination keeps zero): a zero pivot
    for j, column in singular.items():
        a[j, :, column - 1] = 0
    expect_info("gesv", a, b, singular, dtype, scale=10 * n)


def expect_info(function, a, b, failing, dtype, scale):
    """``function`` on ``a`` and ``b`` reports ``failing`` (problem → info) and solves every other problem."""
    _, x, _, _, info = run(tiles.Solver(function, a.shape[1], dtype), a, b)
    want = np.zeros(COUNT, np.int32)
    for j, value in failing.items():
        want[j] = value
    np.testing.assert_array_equal(info, want)
    good = want == 0
    close(x[good], np.linalg.solve(a[good], b[good]), dtype, scale=scale)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("function", ["posv", "gesv", "gels"])
def test_padded_leading_dimensions(function, dtype, rng):
    m, n = (40, 32) if function == "gels" else (32, 32)
    for arrangement in ("row_major", "col_major"):
        lines = (n, 1) if arrangement == "row_major" else (m, m)
        s = tiles.Solver(
            function, (m, n), dtype, arrangement=arrangement, leading_dimension=(lines[0] + 1, lines[1] + 2)
        )
        a = spd(rng, COUNT, n, dtype) if function == "posv" else random(rng, (COUNT, m, n), dtype)
        b = random(rng, (COUNT, m, 1), dtype)
        _, x, _, _, _ = run(s, a, b)  # (the padding holds NaNs: a solution that read it would be NaN)
        want = np.stack([np.linalg.lstsq(a[j], b[j], rcond=None)[0] for j in range(COUNT)])
        close(x[:, :n], want, dtype, scale=n)
