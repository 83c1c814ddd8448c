"""Many small symmetric positive definite systems A x = b solved in one kernel by cuSOLVERDx's Cholesky (posv).

``solve(a, b)`` solves every ``a[i] @ x[i] = b[i]`` (``a``: problems x n x n, ``b``: problems x n, float32) in
place in ``b``, and returns each problem's ``info`` (0, or the order of the first leading minor of ``a[i]`` that is
not positive definite). Each block loops over groups of ``SOLVER.batches_per_block`` problems, ``gridDim.x`` apart:
it stages a group's matrices in shared memory, factors and solves them with one ``SOLVER.execute``, and writes the
solutions back (`group_kernel`, which benchmarks/solvers.py times for gesv and gels too). The same kernel runs on
the simulator, whose twin solves with NumPy.

    python examples/batched_cholesky.py      # 65,536 systems of 32 x 32 (NUMBA_ENABLE_CUDASIM=1: 16 of 8 x 8)
"""

import numpy as np
from numba import cuda, types

import numba_tiles as tiles

N = 8 if cuda.config.ENABLE_CUDASIM else 32
# (A's rows padded by an item in shared memory: the fast layout, docs/guide/solver.md)
SOLVER = tiles.Solver("posv", N, "float32", leading_dimension="padded")


def group_kernel(solver):
    """The kernel ``(a, b, info)`` (``a``, ``b``: every problem's A and B back to back, flat; ``info``: one a
    problem, each matrix C-ordered) in which each block loops over groups of ``solver.batches_per_block`` problems,
    ``gridDim.x`` apart: their A and B (and, for the functions that take them, tau and the pivots) in shared memory,
    in the solver's arrangement and leading dimensions. For posv, gesv and gels, whose solutions land in B."""
    S = solver
    dtype = getattr(types, S.dtype)
    pivots, householder = "ipiv" in S.operands, "tau" in S.operands
    a_items, b_items = S.m * S.n * S.batches_per_block, S.b_rows * S.nrhs * S.batches_per_block
    row = S.arrangement == "row_major"

    @cuda.jit(device=True, inline=True)
    def staged(i, rows, cols, ld):
        """Where item ``i`` of a group's C-ordered problems (each rows x cols) lies in shared memory: in the solver's
        arrangement, its rows (row-major) or columns ``ld`` items apart."""
        if row:  # (the problem's rows follow the previous problem's)
            return i // cols * ld + i % cols
        problem, r, c = i // (rows * cols), i // cols % rows, i % cols
        return (problem * cols + c) * ld + r

    @cuda.jit
    def solve_groups(a, b, info):
        A = cuda.shared.array(S.a_size, dtype)
        B = cuda.shared.array(S.b_size, dtype)
        P = cuda.shared.array(S.ipiv_size, types.int32)
        T = cuda.shared.array(S.tau_size, dtype)
        t = cuda.threadIdx.x
        for group in range(cuda.blockIdx.x, info.size // S.batches_per_block, cuda.gridDim.x):
            for i in range(t, a_items, S.threads):
                A[staged(i, S.m, S.n, S.lda)] = a[group * a_items + i]
            for i in range(t, b_items, S.threads):
                B[staged(i, S.b_rows, S.nrhs, S.ldb)] = b[group * b_items + i]
            cuda.syncthreads()
            if householder:  # (a constant: Numba compiles the one call the solver takes)
                S.execute(A, B, tau=T)
            elif pivots:
                S.execute(A, B, ipiv=P, info=info[group * S.batches_per_block :])
            else:
                S.execute(A, B, info=info[group * S.batches_per_block :])
            for i in range(t, b_items, S.threads):
                b[group * b_items + i] = B[staged(i, S.b_rows, S.nrhs, S.ldb)]
            cuda.syncthreads()  # (the next group's loads overwrite A and B)

    return solve_groups


solve_groups = group_kernel(SOLVER)


def solve(a, b, grid=None):
    """Solve ``a[i] @ x = b[i]`` for each problem, in place in ``b`` (device arrays: ``a`` problems x n x n, ``b``
    problems x n, float32, C-contiguous; the problems a multiple of ``SOLVER.batches_per_block``); ``info``, a device
    array of int32, one a problem. ``grid``: as `tiles.Solver.launch` takes it (by default a block a group of
    problems; ``"resident"``: the blocks the GPU runs at once, each looping over groups)."""
    problems = a.shape[0]
    if problems % SOLVER.batches_per_block:
        raise ValueError(f"the problems must be a multiple of {SOLVER.batches_per_block}")
    info = cuda.device_array(problems, np.int32)
    SOLVER.launch(solve_groups, a.reshape(-1), b.reshape(-1), info, problems=problems, grid=grid)
    return info


def spd_problems(problems, n=N, seed=2026):
    """Well-conditioned symmetric positive definite systems: (a, b) in float32."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((problems, n, n), dtype=np.float32)
    a = g @ g.transpose(0, 2, 1) + n * np.eye(n, dtype=np.float32)
    return a, rng.standard_normal((problems, n), dtype=np.float32)


def main():
    problems = 16 if cuda.config.ENABLE_CUDASIM else 65536
    a, b = spd_problems(problems)
    x = cuda.to_device(b)
    info = solve(cuda.to_device(a), x).copy_to_host()
    want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64)[..., None])[..., 0]
    error = np.abs(x.copy_to_host() - want).max() / np.abs(want).max()
    assert error < 1e-3 and not info.any(), (error, info)
    print(f"{problems} systems of {N} x {N} match NumPy (largest error {error:.1e}), every info 0")


if __name__ == "__main__":
    main()
