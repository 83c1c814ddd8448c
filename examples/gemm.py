"""GEMMs with the tile API, C = alpha * A @ B + beta * C, checked against NumPy: the forms a kernel takes.

- `make_gemm`: `tiles.matmul` on shared tiles that `tiles.tile_load` fills (zeros past the edges) and
  `tiles.tile_store` empties (nothing past the edges); any dtype, complex ones too.
- `make_tile_gemm`, `make_whole_gemm`, `make_batched`: `tiles.Matmul`'s whole calls (a tile of C, all of C, a
  batch of products), one line of kernel each, whose code
  `Matmul.operands` chooses for the GPU and whose launch `Matmul.launch` makes.
- `make_own_loop`: the register form's steps in a kernel's own K loop, ``stages`` K-tiles in flight.

    python examples/gemm.py                          # on a GPU
    NUMBA_ENABLE_CUDASIM=1 python examples/gemm.py   # the same kernels on Numba's simulator, small
"""

import numpy as np
from numba import cuda
from numba.cuda import types

import numba_tiles as tiles


def make_gemm(
    tile=(64, 64, 32),
    dtype="float16",
    accumulator="float32",
    block_dim=128,
    order=("C", "C"),
    precision=None,
    alignment=None,
):
    """``gemm(a, b, c, alpha, beta)`` with shared tiles of ``tile=(TM, TN, TK)``, A's and B's (and, given a third,
    C's) in row-major ("C") or column-major ("F") ``order``; ``precision``: None, "tf32" or "bf16";
    ``alignment=16``: ldmatrix's tiles."""
    TM, TN, TK = tile
    ab, acc = getattr(types, dtype), getattr(types, accumulator)
    a_shape, b_shape = (TM, TK) if order[0] == "C" else (TK, TM), (TK, TN) if order[1] == "C" else (TN, TK)
    c_col = order[2:] == ("F",)
    a_col, b_col, threads = order[0] == "F", order[1] == "F", int(np.prod(block_dim))

    @cuda.jit
    def gemm(a, b, c, alpha, beta):
        sa = cuda.shared.array(a_shape, ab, alignment=alignment)
        sb = cuda.shared.array(b_shape, ab, alignment=alignment)
        sc = cuda.shared.array((TN, TM) if c_col else (TM, TN), acc, alignment=alignment)
        ta, tb, tc = (sa.T if a_col else sa), (sb.T if b_col else sb), (sc.T if c_col else sc)
        row, col = TM * cuda.blockIdx.y, TN * cuda.blockIdx.x
        tiles.tile_load(c, tc, row, col, block_dim=block_dim)
        scale = beta
        for k in range(0, a.shape[1], TK):
            tiles.tile_load(a, ta, row, k, block_dim=block_dim)
            tiles.tile_load(b, tb, k, col, block_dim=block_dim)
            tiles.matmul(
                ta, tb, tc, alpha, scale, shape=tile, block_dim=block_dim, precision=precision, alignment=alignment
            )
            scale = 1.0  # later K-tiles accumulate
        if a.shape[1] == 0:  # no K-tiles: C = beta * C
            for i in range(cuda.threadIdx.x + cuda.blockDim.x * cuda.threadIdx.y, TM * TN, threads):  # (1-D or 2-D)
                tc[i // TN, i % TN] *= beta
            cuda.syncthreads()
        tiles.tile_store(tc, c, row, col, block_dim=block_dim)

    return gemm


def run(gemm, a, b, c, alpha, beta, tile=(64, 64, 32), block_dim=128, extras=()):
    """Launch a `make_gemm` or `make_own_loop` kernel on host arrays, a block a tile of C; returns C."""
    args = (cuda.to_device(a), cuda.to_device(b), cuda.to_device(c), alpha, beta, *extras)
    grid = ((c.shape[1] + tile[1] - 1) // tile[1], (c.shape[0] + tile[0] - 1) // tile[0])
    shared = tiles.allow_dynamic_shared_memory(gemm, getattr(gemm, "shared_bytes", 0), *args)
    gemm[grid, block_dim, 0, shared](*args)
    return args[2].copy_to_host()


def make_tile_gemm(mm):
    """``gemm(ops, alpha, beta)``: C's tile (blockIdx.y, blockIdx.x) by `Matmul.tile`."""

    @cuda.jit
    def gemm(ops, alpha, beta):
        mm.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, alpha, beta)

    return gemm


def make_whole_gemm(mm):
    """``gemm(ops, alpha, beta)``: all of C by `Matmul.gemm`, the launch's blocks sharing its tiles."""

    @cuda.jit
    def gemm(ops, alpha, beta):
        mm.gemm(ops, alpha, beta)

    return gemm


def make_batched(mm):
    """``bmm(ops, alpha, beta)``: ``c[i] = alpha * a[i] @ b[i] + beta * c[i]`` for the batch, by `Matmul.batched`."""

    @cuda.jit
    def bmm(ops, alpha, beta):
        mm.batched(ops, alpha, beta)

    return bmm


def run_described(mm, kernel, a, b, c, alpha, beta, *extras, grid=None):
    """Launch a `make_tile_gemm`, `make_whole_gemm` or `make_batched` kernel of ``mm`` on host arrays with
    `Matmul.launch` (``grid`` as it takes it); returns C."""
    d_c = cuda.to_device(c)
    mm.launch(kernel, mm.operands(cuda.to_device(a), cuda.to_device(b), d_c), alpha, beta, *extras, grid=grid)
    return d_c.copy_to_host()


def make_own_loop(mm, staged=False, stages=2):
    """``gemm(a, b, c, alpha, beta)`` of ``mm``'s steps: the accumulator in registers, ``stages`` K-tiles of A and B in
    flight in dynamic shared memory (``gemm.shared_bytes`` of it); ``staged``: C out through shared memory."""
    (TM, TN, TK), ab, acc_type = mm.shape, getattr(types, mm.dtype), getattr(types, mm.accumulator)
    A, B, S = mm.a_items, mm.b_items, stages
    STAGE = S * (A + B) * np.dtype(mm.dtype).itemsize // np.dtype(mm.accumulator).itemsize  # (C's, in acc items)
    aligned = None if cuda.config.ENABLE_CUDASIM else 16  # (the simulator has no alignment=)

    @cuda.jit
    def gemm(a, b, c, alpha, beta):
        shared = cuda.shared.array(0, ab, alignment=aligned)  # S buffers of A, then S of B, then C's stage
        acc = cuda.local.array(mm.accumulator_items, acc_type)
        for i in range(mm.accumulator_items):
            acc[i] = 0
        row, col = TM * cuda.blockIdx.y, TN * cuda.blockIdx.x
        steps = (a.shape[1] + TK - 1) // TK
        for s in range(-(S - 1), steps):
            ahead = s + S - 1  # K-tile `ahead` starts loading S - 1 products before its own
            if ahead < steps:
                slot = ahead % S
                mm.load_a(a, shared[slot * A : (slot + 1) * A], row, ahead * TK, asynchronous=True)
                mm.load_b(b, shared[S * A + slot * B : S * A + (slot + 1) * B], ahead * TK, col, asynchronous=True)
            if s >= 0:
                mm.wait(2 * min(steps - 1 - s, S - 1))  # later K-tiles' loads (2 each) may still run
                slot = s % S
                mm.multiply(shared[slot * A : (slot + 1) * A], shared[S * A + slot * B : S * A + (slot + 1) * B], acc)
        if staged:
            stage = cuda.shared.array(0, acc_type, alignment=aligned)
            mm.store(acc, c, row, col, alpha, beta, stage[STAGE : STAGE + mm.c_items])
        else:
            mm.store(acc, c, row, col, alpha, beta)

    gemm.shared_bytes = S * mm.shared_memory_bytes + (mm.c_items * np.dtype(mm.accumulator).itemsize if staged else 0)
    return gemm


def relative_error(result, a, b, c, alpha, beta):  # ‖result − (alpha·A·B + beta·C)‖_F / ‖reference‖_F
    expected = alpha * (np.asarray(a, np.float64) @ np.asarray(b, np.float64)) + beta * np.asarray(c, np.float64)
    return float(np.linalg.norm(result - expected) / np.linalg.norm(expected))


def main():
    rng = np.random.default_rng()
    small, m, n, k = (True, 40, 50, 36) if cuda.config.ENABLE_CUDASIM else (False, 1000, 1104, 904)  # (16-byte rows)
    for dtype, acc, tile, bound in (
        ("float16", "float32", (64, 64, 32), 1e-2),
        ("float64", "float64", (32, 32, 16), 1e-12),
    ):
        (tm, tn, tk) = tile = (16, 16, 16) if small else tile
        mm = tiles.Matmul(tile, dtype, accumulator=acc, block_dim=32 if small else None)
        a, b, c = (rng.standard_normal(s).astype(t) for s, t in (((m, k), dtype), ((k, n), dtype), ((m, n), acc)))
        a3, b3, c3 = (
            rng.standard_normal((50, *s)).astype(t) for s, t in (((tm, tk), dtype), ((tk, tn), dtype), ((tm, tn), acc))
        )  # a batch
        for form, args, launch in (
            ("tiles.matmul", (a, b, c), lambda *x: run(make_gemm(tile, dtype, acc, mm.threads), *x, tile, mm.threads)),
            ("own loop", (a, b, c), lambda *x: run(make_own_loop(mm), *x, tile, mm.block_dim)),
            ("Matmul.tile", (a, b, c), lambda *x: run_described(mm, make_tile_gemm(mm), *x)),
            ("Matmul.gemm", (a, b, c), lambda *x: run_described(mm, make_whole_gemm(mm), *x, grid="resident")),
            ("Matmul.batched", (a3, b3, c3), lambda *x: run_described(mm, make_batched(mm), *x)),
        ):
            error = relative_error(launch(*args, 0.75, -1.25), *args, 0.75, -1.25)
            print(f"{form:14} {dtype} -> {acc}, tiles {tile}: relative error {error:.1e}")
            assert error < bound, f"{form}: {error:.1e} is over {bound:g}"


if __name__ == "__main__":
    main()
