"""A GEMM of any size with the tile API: C = alpha * A @ B + beta * C, checked against NumPy.

Each block computes one TM x TN tile of C: it loads C's tile, then for each K-tile loads the
tiles of A and B into shared memory (`tiles.tile_load`, zero past the matrices' edges) and
multiplies them into C's tile with tensor cores (`tiles.matmul`, cuBLASDx), and finally stores
the tile (`tiles.tile_store`, which drops what lies past C's edge). About 20 lines of kernel.

    python examples/gemm.py            # on a GPU: 1000 x 1100 x 900 in float16 -> float32, and the others
    NUMBA_ENABLE_CUDASIM=1 python examples/gemm.py   # the same kernel on Numba's simulator, small
"""

import numpy as np
from numba import cuda
from numba.cuda import types

import numba_tiles as tiles


def make_gemm(tile=(64, 64, 32), dtype="float16", accumulator="float32", block_dim=128, order=("C", "C"),
              precision=None, alignment=None):
    """A kernel ``gemm(a, b, c, alpha, beta)`` for ``a``/``b`` of ``dtype`` and ``c`` of ``accumulator``.

    ``tile=(TM, TN, TK)``; ``order`` gives the shared tiles of A and B in row-major ("C") or
    column-major ("F") order (a column-major tile is a transposed row-major array);
    ``precision``: None, "tf32" or "bf16" (``dtype`` "int16" holding bfloat16 bits), as for `tiles.matmul`;
    ``alignment=16``: 16-byte-aligned tiles, which cuBLASDx moves with ldmatrix (not on the simulator).
    """
    TM, TN, TK = tile
    ab, acc = getattr(types, dtype), getattr(types, accumulator)
    a_shape = (TM, TK) if order[0] == "C" else (TK, TM)
    b_shape = (TK, TN) if order[1] == "C" else (TN, TK)
    a_col, b_col = order[0] == "F", order[1] == "F"
    bx, by, bz = (tuple(block_dim) if isinstance(block_dim, tuple) else (block_dim,)) + (1,) * (3 - len(
        block_dim if isinstance(block_dim, tuple) else (block_dim,)))
    threads = bx * by * bz

    @cuda.jit
    def gemm(a, b, c, alpha, beta):
        sa = cuda.shared.array(a_shape, ab, alignment=alignment)
        sb = cuda.shared.array(b_shape, ab, alignment=alignment)
        sc = cuda.shared.array((TM, TN), acc, alignment=alignment)
        ta = sa.T if a_col else sa
        tb = sb.T if b_col else sb
        row, col = TM * cuda.blockIdx.y, TN * cuda.blockIdx.x
        tiles.tile_load(c, sc, row, col, block_dim=block_dim)
        scale = beta
        for k in range(0, a.shape[1], TK):
            tiles.tile_load(a, ta, row, k, block_dim=block_dim)
            tiles.tile_load(b, tb, k, col, block_dim=block_dim)
            tiles.matmul(ta, tb, sc, alpha, scale, shape=(TM, TN, TK), block_dim=block_dim, precision=precision,
                         alignment=alignment)
            scale = 1.0
        if a.shape[1] == 0:  # no K-tiles: C = beta * C
            t = cuda.threadIdx.x + bx * (cuda.threadIdx.y + by * cuda.threadIdx.z)
            for i in range(t, TM * TN, threads):
                sc[i // TN, i % TN] *= beta
            cuda.syncthreads()
        tiles.tile_store(sc, c, row, col, block_dim=block_dim)

    return gemm


# tiles.Matmul's shared tiles are 16-byte aligned (Numba's simulator has no alignment=, nor needs it).
ALIGNED = None if cuda.config.ENABLE_CUDASIM else 16


def make_pipelined_gemm(tile=(128, 128, 32), dtype="float16", accumulator="float32", block_dim=256, precision=None,
                        arrangement=("row_major", "row_major"), staged=False, stages=2):
    """The same GEMM in the register form (`tiles.Matmul`): the accumulator in registers, A and B
    in cuBLASDx's shared layouts, and the next ``stages - 1`` K-tiles' loads (2 to 4 stages: as
    many shared buffers of A and B) in flight during each product. ``arrangement``: A's and B's
    order in global memory; ``staged``: C goes to global memory through a shared tile in 16-byte
    vectors (faster). The buffers are dynamic shared memory, ``gemm.shared_bytes`` of it (over
    48 KiB too: `run` lets the kernel take it)."""
    assert 2 <= stages <= 4, "make_pipelined_gemm: stages must be 2, 3 or 4"
    TM, TN, TK = tile
    mm = tiles.Matmul(tile, dtype, accumulator=accumulator, block_dim=block_dim, precision=precision,
                      arrangement=arrangement)
    ab, acc_type = getattr(types, dtype), getattr(types, accumulator)
    A, B, C, S = mm.a_items, mm.b_items, mm.c_items, stages
    size, acc_size = np.dtype(dtype).itemsize, np.dtype(accumulator).itemsize
    STAGE = S * (A + B) * size // acc_size  # where the stage of C starts, in accumulator items

    @cuda.jit
    def gemm(a, b, c, alpha, beta):
        shared = cuda.shared.array(0, ab, alignment=ALIGNED)  # S buffers of A, then S of B, then C's stage
        acc = cuda.local.array(mm.accumulator_items, acc_type)
        for i in range(mm.accumulator_items):
            acc[i] = 0
        row, col = TM * cuda.blockIdx.y, TN * cuda.blockIdx.x
        steps = (a.shape[1] + TK - 1) // TK
        for s in range(-(S - 1), steps):
            ahead = s + S - 1  # K-tile `ahead` starts loading S - 1 products before its own
            if ahead < steps:
                slot = ahead % S
                mm.load_a(a, shared[slot * A:(slot + 1) * A], row, ahead * TK, asynchronous=True)
                mm.load_b(b, shared[S * A + slot * B:S * A + (slot + 1) * B], ahead * TK, col, asynchronous=True)
            if s >= 0:
                mm.wait(2 * min(steps - 1 - s, S - 1))  # later K-tiles' loads (2 each) may still run
                slot = s % S
                mm.multiply(shared[slot * A:(slot + 1) * A], shared[S * A + slot * B:S * A + (slot + 1) * B], acc)
        if staged:
            stage = cuda.shared.array(0, acc_type, alignment=ALIGNED)
            mm.store(acc, c, row, col, alpha, beta, stage[STAGE:STAGE + C])
        else:
            mm.store(acc, c, row, col, alpha, beta)

    gemm.shared_bytes = S * (A + B) * size + (C * acc_size if staged else 0)
    return gemm


def make_hopper_gemm(mm, group=8):
    """The same GEMM on Hopper with `tiles.PipelineMatmul` ``mm``: TMA loads and wgmma products, the
    K loop inside ``mm.tile``. A persistent kernel: each block takes C tiles ``gridDim.x`` apart, in
    groups of ``group`` rows of tiles that share B's columns (so that they meet in L2)."""
    TM, TN = mm.m, mm.n

    @cuda.jit
    def gemm(pipe, c, alpha, beta):
        rows, cols = (c.shape[0] + TM - 1) // TM, (c.shape[1] + TN - 1) // TN
        t = cuda.blockIdx.x
        while t < rows * cols:
            first = t // (group * cols) * group  # the group's first row of tiles
            height = min(rows - first, group)
            within = t % (group * cols)
            mm.tile(pipe, c, first + within % height, within // height, alpha, beta)
            t += cuda.gridDim.x

    return gemm


def resident_blocks(kernel, threads, shared, *args):
    """How many blocks of a persistent ``kernel`` (``threads`` a block, ``shared`` bytes of dynamic shared
    memory, the launch's ``args``) the GPU runs at once, after letting it take that shared memory."""
    tiles.allow_dynamic_shared_memory(kernel, shared, *args)
    device = cuda.get_current_device()
    registers = max(kernel.get_regs_per_thread().values())  # (compiled by allow_dynamic_shared_memory)
    fit = min(device.MAX_REGISTERS_PER_MULTIPROCESSOR // (-(-registers // 8) * 8 * threads),
              device.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR // (shared + 1024))
    return max(fit, 1) * device.MULTIPROCESSOR_COUNT


def run_hopper(mm, gemm, a, b, c, alpha, beta, *extras):
    """Launch a `make_hopper_gemm` kernel on device arrays: as many blocks as fit on the GPU at once (or tiles).
    Returns a function that launches it again (the same A, B and C: ``prepare`` is not repeated). ``extras``:
    the kernel's arguments after ``beta`` (an epilogue's, examples/gemm_epilogue.py)."""
    pipe = mm.prepare(a, b)
    rows, cols = mm.grid(c)
    shared = mm.shared_memory_bytes
    args = (pipe, c, alpha, beta, *extras)
    grid = min(rows * cols, resident_blocks(gemm, mm.threads, shared, *args))

    def launch():
        gemm[grid, mm.threads, 0, shared](*args)

    launch()
    return launch


def make_hopper_batched(mm):
    """Batched small GEMMs on Hopper with `tiles.PipelineMatmul` ``mm`` (fp16 or bf16): ``c[i] = alpha * a[i] @
    b[i] + beta * c[i]``, each product at most M x N, any K, in one call of `PipelineMatmul.batched`: a
    persistent loop of TMA loads and wgmma products, the blocks taking products in a dynamic order."""
    @cuda.jit
    def batched(pipe, c, alpha, beta):
        mm.batched(pipe, c, alpha, beta)

    return batched


def run_hopper_batched(mm, batched, a, b, c, alpha, beta, *extras, blocks=None):
    """Launch a `make_hopper_batched` kernel on 3-D device arrays with ``blocks`` blocks (by default as many as
    fit on the GPU at once: one an SM for 128-row tiles, more for 64-row ones); returns a function that launches
    it again (the same arrays: ``prepare_batched`` is not repeated). ``extras``: as for `run_hopper`."""
    pipe = mm.prepare_batched(a, b, c)
    shared = mm.batched_shared_memory_bytes
    args = (pipe, c, alpha, beta, *extras)
    if blocks is None:  # (resident_blocks lets the kernel take its shared memory)
        blocks = resident_blocks(batched, mm.batched_threads, shared, *args)
    else:
        tiles.allow_dynamic_shared_memory(batched, shared, *args)

    def launch():
        batched[blocks, mm.batched_threads, 0, shared](*args)

    launch()
    return launch


def make_batched_gemm(mm, stages=2, tma=False, c=None):
    """Batched small GEMMs with `tiles.Matmul` ``mm``: ``c[i] = alpha * a[i] @ b[i] + beta * c[i]`` for 3-D
    ``a``, ``b``, ``c``, each product at most ``mm``'s M x N (any K). One call: `Matmul.batched` is the
    whole persistent loop, ``stages`` K-tiles of A and B loading ahead of the product. ``tma=True``:
    `Matmul.batched_tma`, A and B loaded by the copy engine from tensor maps made on the host (sm_90).
    ``c``: C's dtype, when known (a 16-bit C of a float32 accumulator takes less shared memory)."""
    if tma:
        @cuda.jit
        def batched(pipe, c, alpha, beta):
            shared = cuda.shared.array(0, types.uint8, alignment=ALIGNED)
            mm.batched_tma(pipe, c, shared, alpha, beta, stages=stages)

        batched.shared_bytes = mm.batched_tma_shared_memory_bytes(stages, c)
    else:
        @cuda.jit
        def batched(a, b, c, alpha, beta):
            shared = cuda.shared.array(0, types.uint8, alignment=ALIGNED)
            mm.batched(a, b, c, shared, alpha, beta, stages=stages)

        batched.shared_bytes = mm.batched_shared_memory_bytes(stages, c)
    batched.tma = tma
    return batched


def run_batched(mm, batched, a, b, c, alpha, beta, *extras, blocks=None, per_block=None):
    """Launch a `make_batched_gemm` kernel on device arrays with ``blocks`` blocks; returns a function that
    launches it again (a TMA kernel's tensor maps made once: the same A and B). ``per_block``: as many blocks
    as give each ``per_block`` products (more blocks than fit at once: the GPU starts each on the first SM
    free, which evens out SMs that run slower). By default as many blocks as fit on the GPU at once, then as
    few as give each block the same number of products: with 4096 products and 132 blocks, 4 blocks would do
    a 32nd product while the GPU idles; 128 blocks do 32 each. ``extras``: as for `run_hopper`."""
    shared = batched.shared_bytes
    args = ((mm.prepare_batched(a, b),) if batched.tma else (a, b)) + (c, alpha, beta, *extras)
    if blocks is None and per_block is None:  # (resident_blocks lets the kernel take its shared memory)
        per_block = -(-a.shape[0] // resident_blocks(batched, mm.threads, shared, *args))
    else:
        tiles.allow_dynamic_shared_memory(batched, shared, *args)
    if blocks is None:
        blocks = -(-a.shape[0] // per_block)

    def launch():
        batched[blocks, mm.threads, 0, shared](*args)

    launch()
    return launch


def run(gemm, a, b, c, alpha, beta, tile=(64, 64, 32), block_dim=128, extras=()):
    """Launch ``gemm`` on host arrays (any strides), one block per tile of C; returns C. ``extras``: as for
    `run_hopper`."""
    TM, TN, _ = tile
    args = (cuda.to_device(a), cuda.to_device(b), cuda.to_device(c), alpha, beta, *extras)
    grid = ((c.shape[1] + TN - 1) // TN, (c.shape[0] + TM - 1) // TM)
    shared = tiles.allow_dynamic_shared_memory(gemm, getattr(gemm, "shared_bytes", 0), *args)
    gemm[grid, block_dim, 0, shared](*args)
    return args[2].copy_to_host()


def bf16_bits(x):
    """float32 values → the int16 bits of their bfloat16 rounding (to nearest even)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).view(np.int16)


def values(x, precision=None):
    """What A or B holds, as float64 (bfloat16 bits widened)."""
    if precision == "bf16":
        return (np.asarray(x).view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)


def relative_error(result, a, b, c, alpha, beta, precision=None):
    """‖result − (alpha·A·B + beta·C)‖_F / ‖reference‖_F, the reference in float64."""
    expected = alpha * (values(a, precision) @ values(b, precision)) + beta * values(c)
    return float(np.linalg.norm(values(result) - expected) / np.linalg.norm(expected))


def main():
    rng = np.random.default_rng()
    small = cuda.config.ENABLE_CUDASIM
    m, n, k = (40, 50, 36) if small else (1000, 1100, 900)
    for dtype, acc, tile, bound in (("float16", "float32", (64, 64, 32), 1e-2), ("float32", "float32", (32, 32, 32), 1e-5),
                                    ("float64", "float64", (32, 32, 16), 1e-12)):
        if small:
            tile = (16, 16, 16)
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        c = rng.standard_normal((m, n)).astype(acc)
        alpha, beta = 0.75, -1.25
        result = run(make_gemm(tile, dtype, acc), a, b, c, alpha, beta, tile)
        error = relative_error(result, a, b, c, alpha, beta)
        print(f"{m} x {n} x {k} {dtype} -> {acc}, tiles {tile}: relative error {error:.1e} "
              f"({'ok' if error < bound else 'TOO LARGE'}, bound {bound:g})")
        assert error < bound


if __name__ == "__main__":
    main()
