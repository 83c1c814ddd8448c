"""NumPy twin of `Solver.execute` on the simulator: each problem of the block solved in float64 (complex128) and
written back in the operands' dtype as cuSOLVERDx leaves them (LAPACK's layouts: the factor in A's triangle, LU's
unit-lower L below U, QR's Householder vectors below R with their scales in tau, 1-based pivots) and with its
``info`` (the first failing leading minor for Cholesky, the first zero pivot for LU)."""

import numpy as np

from ..extending import error
from ..simulator import by_first_thread
from . import layout


def _flat(name, solver, operand, array):
    array = np.asarray(array)
    if array.size < solver.sizes[operand] or not array.flags.c_contiguous:
        raise error(
            name,
            f"{operand} holds {array.size} items{'' if array.flags.c_contiguous else ' (not C-contiguous)'}; "
            f"this solver needs {solver.sizes[operand]} in one dense block",
            f"allocate cuda.shared.array(solver.{operand}_size, ...)",
        )
    return array.reshape(-1)


def _matrix(flat, j, rows, cols, row_major, ld):
    """Problem ``j``'s rows x cols matrix of ``flat``, a view in the solver's arrangement, its rows (row-major) or
    columns ``ld`` items apart."""
    lines, length = (rows, cols) if row_major else (cols, rows)
    part = flat[j * lines * ld : (j + 1) * lines * ld].reshape(lines, ld)[:, :length]
    return part if row_major else part.T


def _cholesky(w):
    """(L with w = L L^H, 0), or (None, the order of the first leading minor that is not positive definite)."""
    n = w.shape[0]
    lower = np.zeros_like(w)
    for j in range(n):
        d = (w[j, j] - np.vdot(lower[j, :j], lower[j, :j])).real
        if not d > 0:
            return None, j + 1
        lower[j, j] = np.sqrt(d)
        lower[j + 1 :, j] = (w[j + 1 :, j] - lower[j + 1 :, :j] @ lower[j, :j].conj()) / lower[j, j]
    return lower, 0


def _lu(w, pivot):
    """LAPACK's getrf in place on ``w``: (1-based pivots, info)."""
    n = min(w.shape)
    pivots, info = np.arange(1, n + 1), 0
    for j in range(n):
        if pivot:
            p = j + int(np.argmax(np.abs(w[j:, j])))
            pivots[j] = p + 1
            w[[j, p]] = w[[p, j]]
        if w[j, j] == 0 and not info:
            info = j + 1
        w[j + 1 :, j] /= w[j, j]
        w[j + 1 :, j + 1 :] -= np.outer(w[j + 1 :, j], w[j, j + 1 :])
    return pivots, info


def _triangular(t, b, lower, unit=False):
    """``t``'s triangle solved for ``b`` by substitution: a zero on the diagonal gives infinities and NaNs, as on
    the GPU (``numpy.linalg.solve`` would raise)."""
    x = b.copy()
    n = t.shape[0]
    for i in range(n) if lower else reversed(range(n)):
        done = slice(0, i) if lower else slice(i + 1, n)
        x[i] -= t[i, done] @ x[done]
        if not unit:
            x[i] /= t[i, i]
    return x


def _lu_solve(w, pivots, b):
    for j, p in enumerate(pivots):
        b[[j, p - 1]] = b[[p - 1, j]]
    return _triangular(w, _triangular(w, b, lower=True, unit=True), lower=False)


def execute(instance, args):
    solver, name = args["mm"], instance.intrinsic
    ops = {p: _flat(name, solver, p, args[p]) for p in solver.operands}
    m, n, k = solver.m, solver.n, solver.nrhs
    row = solver.arrangement == "row_major"
    wide = np.complex128 if solver.complex else np.float64
    b_rows = layout.b_rows(solver.function, m, n)
    lower = solver.fill_mode == "lower"

    def solve_one(j):
        a = _matrix(ops["a"], j, m, n, row, solver.lda)
        b = _matrix(ops["b"], j, b_rows, k, row, solver.ldb) if "b" in ops else None
        w = a.astype(wide)
        f = solver.function
        if f in ("potrf", "posv"):
            h = np.tril(w) + np.tril(w, -1).conj().T if lower else np.triu(w) + np.triu(w, 1).conj().T
            factor, info = _cholesky(h)
            ops["info"][j] = info
            if info:
                return
            mask = np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))
            a[mask] = (factor if lower else factor.conj().T)[mask]
            w = a.astype(wide)
        if f in ("potrs", "posv"):
            factor = np.tril(w) if lower else np.triu(w).conj().T
            b[...] = _triangular(factor.conj().T, _triangular(factor, b.astype(wide), lower=True), lower=False)
        if f in ("getrf", "gesv", "getrs"):
            pivot = solver.pivot == "partial"
            if f != "getrs":
                pivots, info = _lu(w, pivot)
                a[...] = w
                ops["info"][j] = info
                if "ipiv" in ops:
                    ops["ipiv"][j * min(m, n) : (j + 1) * min(m, n)] = pivots
            else:
                pivots = ops["ipiv"][j * n : (j + 1) * n] if pivot else np.arange(1, n + 1)
            if f != "getrf":
                b[...] = _lu_solve(w, pivots, b.astype(wide))
        if f in ("geqrf", "gels"):
            h, tau = np.linalg.qr(w, mode="raw")
            a[...] = h.T
            ops["tau"][j * min(m, n) : (j + 1) * min(m, n)] = tau
        if f == "gels":
            b[:n] = np.linalg.lstsq(w, b.astype(wide), rcond=None)[0]

    def work():
        with np.errstate(all="ignore"):
            for j in range(solver.batches_per_block):
                solve_one(j)

    by_first_thread(instance, {"block_dim": solver.block_dim}, work)
