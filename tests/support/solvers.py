"""Kernels that run a `tiles.Solver` on many problems, each block ``batches_per_block`` of them, and the problems'
NumPy references (computed with numpy.linalg, independently of the simulator's twin)."""

import functools

import numpy as np

from numba_tiles.extending import STATIC_SHARED_BYTES

from .compiler import cuda

_DTYPES = {"float32": np.float32, "float64": np.float64, "complex64": np.complex64, "complex128": np.complex128}
STAGED = {"a": "A", "b": "B", "tau": "T"}  # the operands staged in shared memory, and their names in the kernel


@functools.cache
def solve_kernel(solver):
    """A kernel ``(a, b, ipiv, tau, info)`` over flat arrays of every problem's operands (those the solver does not
    take unused): A, B and tau staged in shared memory (static, or dynamic past 48 KiB), ipiv and info passed as
    slices of global memory."""
    operands = solver.operands
    call = ", ".join(
        ["A"]
        + [
            {
                "b": "b=B",
                "tau": "tau=T",
                "ipiv": "ipiv=ipiv[k * S.ipiv_size :]",
                "info": "info=info[k * S.batches_per_block :]",
            }[p]
            for p in operands[1:]
        ]
    )
    staged = {p: name for p, name in STAGED.items() if p in operands}
    dynamic = solver.shared_memory_bytes > STATIC_SHARED_BYTES  # (past it, in the launch's dynamic shared memory)
    lines = ["def kernel(a, b, ipiv, tau, info):", "    t, k = cuda.threadIdx.x, cuda.blockIdx.x"]
    if dynamic:
        lines.append("    memory = cuda.shared.array(0, ITEM)")
    for p, name in staged.items():
        lines += [
            f"    {name} = memory[S.{p}_start : S.{p}_start + S.{p}_size]"
            if dynamic
            else f"    {name} = cuda.shared.array(S.{p}_size, DTYPE)",
            f"    for i in range(t, S.{p}_size, S.threads):",
            f"        {name}[i] = {p}[k * S.{p}_size + i]",
        ]
    lines += ["    cuda.syncthreads()", f"    S.execute({call})"]
    for p, name in staged.items():
        lines += [f"    for i in range(t, S.{p}_size, S.threads):", f"        {p}[k * S.{p}_size + i] = {name}[i]"]
    # (NumPy's: either compiler's; the simulator's dynamic shared memory takes a dtype, not a scalar type)
    scope = {"cuda": cuda, "S": solver, "DTYPE": _DTYPES[solver.dtype], "ITEM": np.dtype(_DTYPES[solver.dtype])}
    exec("\n".join(lines), scope)
    return cuda.jit(scope["kernel"])


def run(solver, a, b=None, ipiv=None):
    """Run ``solver`` on the problems ``a`` (count x m x n) and ``b`` (count x rows x nrhs) in its arrangement:
    (a, b, ipiv, tau, info) after it, as arrays of the problems."""
    count = a.shape[0]
    assert count % solver.batches_per_block == 0
    dtype = _DTYPES[solver.dtype]
    order = "C" if solver.arrangement == "row_major" else "F"

    def lines(m):  # a matrix's rows (row-major) or columns
        return np.asarray(m, dtype) if order == "C" else np.asarray(m, dtype).T

    def flat(x, ld):  # each problem's matrix in the solver's arrangement, its lines ld apart, back to back
        if x is None:
            return np.zeros(1, dtype)
        padded = [np.pad(lines(m), ((0, 0), (0, ld - lines(m).shape[1])), constant_values=np.nan) for m in x]
        return np.concatenate([m.ravel() for m in padded])

    k = min(solver.m, solver.n)
    arrays = [
        cuda.to_device(flat(a, solver.lda)),
        cuda.to_device(flat(b, solver.ldb)),
        cuda.to_device(
            np.ascontiguousarray(ipiv, np.int32).ravel() if ipiv is not None else np.zeros(count * k, np.int32)
        ),
        cuda.to_device(np.zeros(count * k, dtype)),
        cuda.to_device(np.full(count, -7, np.int32)),
    ]
    solver.launch(solve_kernel(solver), *arrays, problems=count)
    cuda.synchronize()
    a_out, b_out, ipiv_out, tau_out, info = (x.copy_to_host() for x in arrays)

    def shaped(x, rows, cols, ld):
        if order == "C":
            return x.reshape(count, rows, ld)[:, :, :cols]
        return x.reshape(count, cols, ld)[:, :, :rows].transpose(0, 2, 1)

    b_rows = max(solver.m, solver.n) if solver.function == "gels" else solver.n
    return (
        shaped(a_out, solver.m, solver.n, solver.lda),
        shaped(b_out, b_rows, solver.nrhs, solver.ldb) if b is not None else None,
        ipiv_out.reshape(count, k),
        tau_out.reshape(count, k),
        info,
    )


def spd(rng, count, n, dtype):
    """Symmetric (Hermitian) positive definite matrices, well conditioned."""
    g = random(rng, (count, n, n), dtype)
    return g @ np.conj(np.swapaxes(g, 1, 2)) + n * np.eye(n)


def random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(_DTYPES[dtype]).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x


def permutation_of(pivots, n):
    """The row order LAPACK's 1-based ``pivots`` make: P A = A[order]."""
    order = np.arange(n)
    for j, p in enumerate(pivots):
        order[[j, p - 1]] = order[[p - 1, j]]
    return order


def householder_q(h, tau):
    """Q = H_1 ... H_k from LAPACK's QR layout: the vectors below R's diagonal of ``h`` (m x n), their ``tau``."""
    m = h.shape[0]
    q = np.eye(m, dtype=np.result_type(h, tau, np.float64))
    for i in range(len(tau)):
        v = np.zeros(m, q.dtype)
        v[i] = 1
        v[i + 1 :] = h[i + 1 :, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v.conj()))
    return q
