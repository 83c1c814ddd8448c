"""The benchmarks' GEMM kernels besides examples/gemm.py's, and what they need on the host.

- `make_grouped`, `launch_grouped`: `Matmul.tile` over C's tiles in a grouped order (the large GEMMs): a
  persistent loop launched on as many blocks as run at once, or one tile a block;
- `register_kernel`: the register form's steps in a kernel's own loop, several products of a batch a block;
- `shared_kernel`: the shared-C form (`tile_load`, `tiles.matmul`, `tile_store`), one product a block;
- `plan`: how a description runs on this GPU by an implementation (by default the fastest), before any array;
- `launcher`: a described kernel launched as `Matmul.launch` does, and a function that launches it again;
"""

import numpy as np
from numba import cuda
from numba.cuda import types

import numba_tiles as tiles

ALIGNED = None if cuda.config.ENABLE_CUDASIM else 16  # (the simulator has no alignment=)


@cuda.jit(device=True)
def _grouped(t, rows, cols, group):
    """Tile ``t`` of a ``rows`` x ``cols`` grid of tiles taken ``group`` rows at a time, column by column: (i, j)."""
    first = t // (group * cols) * group  # the group's first row of tiles
    height = min(rows - first, group)
    within = t % (group * cols)
    return first + within % height, within // height


def make_grouped(mm, epilogue=None, group=8, persistent=True):
    """``gemm(ops, rows, cols, alpha, beta)`` (and ``extras``, the tuple of ``epilogue``'s arguments, with one):
    `Matmul.tile` of C's ``rows`` x ``cols`` tiles in groups of ``group`` rows of tiles that share B's columns (so
    that they meet in L2): a persistent loop, each block taking tiles ``gridDim.x`` apart, or (not
    ``persistent``) one tile a block, in the same order. Launch it with `launch_grouped`."""
    if persistent and epilogue is None:

        @cuda.jit
        def gemm(ops, rows, cols, alpha, beta):
            t = cuda.blockIdx.x
            while t < rows * cols:  # (a range() of a run-time step: more registers live in the wgmma loop)
                i, j = _grouped(t, rows, cols, group)
                mm.tile(ops, i, j, alpha, beta)
                t += cuda.gridDim.x
    elif persistent:

        @cuda.jit
        def gemm(ops, rows, cols, alpha, beta, extras):
            t = cuda.blockIdx.x
            while t < rows * cols:
                i, j = _grouped(t, rows, cols, group)
                mm.tile(ops, i, j, alpha, beta, epilogue=epilogue, epilogue_args=extras)
                t += cuda.gridDim.x
    elif epilogue is None:

        @cuda.jit
        def gemm(ops, rows, cols, alpha, beta):
            i, j = _grouped(cuda.blockIdx.x, rows, cols, group)
            mm.tile(ops, i, j, alpha, beta)
    else:

        @cuda.jit
        def gemm(ops, rows, cols, alpha, beta, extras):
            i, j = _grouped(cuda.blockIdx.x, rows, cols, group)
            mm.tile(ops, i, j, alpha, beta, epilogue=epilogue, epilogue_args=extras)

    gemm.persistent = persistent
    return gemm


def launch_grouped(mm, gemm, ops, alpha, beta, *extras):
    """Launch a `make_grouped` kernel on ``ops`` (2-D arrays) with as many blocks as run at once (persistent) or one
    a tile; returns a function that launches it again (`launcher`)."""
    m, n, _ = mm.shape
    rows, cols = (-(-s // t) for s, t in zip(ops.c.shape, (m, n)))
    grid = "resident" if gemm.persistent else rows * cols
    return launcher(mm, gemm, ops, rows, cols, alpha, beta, *extras, grid=grid)


def register_kernel(size, dtype, accumulator, block_dim, k_tile, per_block, precision=None, staged=False, stages=2):
    """``batched(a, b, c)`` for 3-D arrays of products of ``size``^3 by the register form (`tiles.Matmul`):
    ``per_block`` products a block, each over K-tiles of ``k_tile``, the next ``stages - 1`` K-tiles' A and B
    loading (asynchronously) during each product; C (of the accumulator's dtype or A's) stored from the
    registers, or (``staged``) through shared memory in 16-byte vectors. The buffers are dynamic shared memory,
    ``batched.shared_bytes`` of it; launch ``count / per_block`` blocks of ``block_dim``."""
    mm = tiles.Matmul((size, size, k_tile), dtype, accumulator=accumulator, block_dim=block_dim, precision=precision)
    ab, acc_type = getattr(types, dtype), getattr(types, accumulator)
    A, B, C, S, ksteps = mm.a_items, mm.b_items, mm.c_items, stages, size // k_tile
    STAGE = S * (A + B) * np.dtype(dtype).itemsize // np.dtype(accumulator).itemsize  # (C's, in acc items)

    @cuda.jit
    def batched(a, b, c):
        shared = cuda.shared.array(0, ab, alignment=ALIGNED)  # S buffers of A, then S of B, then C's stage
        acc = cuda.local.array(mm.accumulator_items, acc_type)
        first = cuda.blockIdx.x * per_block
        steps = per_block * ksteps
        for s in range(-(S - 1), steps):
            ahead = s + S - 1
            if ahead < steps:
                j, kk, slot = ahead // ksteps, ahead % ksteps, ahead % S
                mm.load_a(a[first + j], shared[slot * A : (slot + 1) * A], 0, kk * k_tile, asynchronous=True)
                mm.load_b(
                    b[first + j], shared[S * A + slot * B : S * A + (slot + 1) * B], kk * k_tile, 0, asynchronous=True
                )
            if s >= 0:
                mm.wait(2 * min(steps - 1 - s, S - 1))  # later K-tiles' loads (2 each) may still run
                j, kk, slot = s // ksteps, s % ksteps, s % S
                if kk == 0:
                    for i in range(mm.accumulator_items):
                        acc[i] = 0
                mm.multiply(shared[slot * A : (slot + 1) * A], shared[S * A + slot * B : S * A + (slot + 1) * B], acc)
                if kk == ksteps - 1:
                    if staged:
                        stage = cuda.shared.array(0, acc_type, alignment=ALIGNED)
                        mm.store(acc, c[first + j], 0, 0, 1.0, 0.0, stage[STAGE : STAGE + C])
                    else:
                        mm.store(acc, c[first + j], 0, 0)

    batched.shared_bytes = S * mm.shared_memory_bytes + (C * np.dtype(accumulator).itemsize if staged else 0)
    return batched


def shared_kernel(size, dtype, accumulator, block_dim, alignment=None):
    """``batched(a, b, c)`` by the shared-C form, one product of ``size``^3 a block of ``block_dim``;
    ``alignment=16``: aligned tiles, which cuBLASDx moves with ldmatrix/stmatrix."""
    ab, acc = getattr(types, dtype), getattr(types, accumulator)

    @cuda.jit
    def batched(a, b, c):
        i = cuda.blockIdx.x
        sa = cuda.shared.array((size, size), ab, alignment=alignment)
        sb = cuda.shared.array((size, size), ab, alignment=alignment)
        sc = cuda.shared.array((size, size), acc, alignment=alignment)
        tiles.tile_load(a[i], sa, 0, 0, block_dim=block_dim)
        tiles.tile_load(b[i], sb, 0, 0, block_dim=block_dim)
        tiles.matmul(sa, sb, sc, shape=(size, size, size), block_dim=block_dim, alignment=alignment)
        tiles.tile_store(sc, c[i], 0, 0, block_dim=block_dim)

    return batched


def plan(mm, c_dtype, ndim=3, implementation=None):
    """How ``mm.tile`` (``ndim`` 2) or ``mm.batched`` (3) will run for a C of ``c_dtype`` on the current GPU by
    ``implementation`` (by default the fastest): ``implementation``, ``threads``, ``shared_bytes``, ``grid`` (the
    rule of its default grid), as `Matmul.operands` makes it (its private ``_plan``; a TilesError where that
    implementation does not compute it), known before the arrays are made: the benchmarks name and filter their
    variants by it. For ``tile`` on Hopper, libmathdx makes the pipeline (the first time)."""
    return mm._plan("benchmarks", tuple(cuda.get_current_device().compute_capability), c_dtype, ndim, implementation)


def launcher(mm, kernel, *args, grid=None):
    """Launch ``kernel`` on ``args`` (one of them ``mm``'s `Operands`) as ``mm.launch(kernel, *args, grid=grid)``
    does, and return a function that launches it again with the grid, block and shared memory worked out once:
    the host's work of a timed launch is then only the launch's."""
    grid, block, shared = mm.launch_config(kernel, *args, grid=grid)

    def launch():
        kernel[grid, block, 0, shared](*args)

    launch()
    return launch
