"""Fused epilogues: C = relu(A @ B + bias) in one kernel, in each form of the tile matmul, checked against NumPy.

A store's ``epilogue=`` is a ``@cuda.jit(device=True)`` function that gets each item of C (in the
accumulator's precision, after ``alpha * A @ B + beta * C``) with its coordinates in C, ``(row, col)``, or
``(item, row, col)`` in a batch, then the values passed as ``epilogue_args=`` (a tuple: arrays, scalars). It
returns the value C stores, rounded to C's dtype. nvJitLink inlines it into the store's loop: a bias and an
activation cost no pass over C.

    python examples/gemm_epilogue.py                           # on a GPU
    NUMBA_ENABLE_CUDASIM=1 python examples/gemm_epilogue.py    # the same kernels on Numba's simulator, small
"""

import math

import numpy as np
from numba import cuda, float32
from numba.cuda import types

import numba_tiles as tiles
from examples import gemm

ALIGNED = gemm.ALIGNED  # (a module's attribute is a run-time value in a kernel; a global is a constant)
ZERO, HALF, SQRT_HALF = float32(0), float32(0.5), float32(math.sqrt(0.5))  # (float32 constants keep the math float32)


@cuda.jit(device=True)
def bias_relu(value, row, col, bias):
    """relu(value + bias[col]): the item of C at (row, col)."""
    return max(value + bias[col], ZERO)


@cuda.jit(device=True)
def bias_gelu(value, row, col, bias):
    """gelu(value + bias[col]) (the erf form, PyTorch's default)."""
    v = value + bias[col]
    return HALF * v * (1 + math.erf(v * SQRT_HALF))


@cuda.jit(device=True)
def batched_bias_relu(value, item, row, col, bias):
    """relu(value + bias[col]) for an item of product ``item`` of a batch."""
    return max(value + bias[col], ZERO)


def make_tile_gemm(mm, epilogue, staged=False):
    """``c = epilogue(alpha * a @ b + beta * c)`` by `tiles.Matmul` ``mm``'s register form, a tile of C a block
    (``staged``: C goes out through a shared stage, in 16-byte vectors); launch with `gemm.run`."""
    TM, TN, TK = mm.shape
    ab, acc_type = getattr(types, mm.dtype), getattr(types, mm.accumulator)

    @cuda.jit
    def tile_gemm(a, b, c, alpha, beta, extras):
        sa = cuda.shared.array(mm.a_items, ab, alignment=ALIGNED)
        sb = cuda.shared.array(mm.b_items, ab, alignment=ALIGNED)
        acc = cuda.local.array(mm.accumulator_items, acc_type)
        for i in range(mm.accumulator_items):
            acc[i] = 0
        row, col = TM * cuda.blockIdx.y, TN * cuda.blockIdx.x
        for k in range(0, a.shape[1], TK):
            mm.load_a(a, sa, row, k)
            mm.load_b(b, sb, k, col)
            mm.multiply(sa, sb, acc)
        if staged:
            stage = cuda.shared.array(mm.c_items, acc_type, alignment=ALIGNED)
            mm.store(acc, c, row, col, alpha, beta, stage, epilogue=epilogue, epilogue_args=extras)
        else:
            mm.store(acc, c, row, col, alpha, beta, epilogue=epilogue, epilogue_args=extras)

    return tile_gemm


def make_batched(mm, epilogue, stages=2, tma=False, c=None):
    """`Matmul.batched` (``tma``: `batched_tma`) with ``epilogue``: launch with `gemm.run_batched` and the
    epilogue's arguments after ``beta``."""
    if tma:
        @cuda.jit
        def batched(pipe, c, alpha, beta, extras):
            shared = cuda.shared.array(0, types.uint8, alignment=ALIGNED)
            mm.batched_tma(pipe, c, shared, alpha, beta, stages=stages, epilogue=epilogue, epilogue_args=extras)

        batched.shared_bytes = mm.batched_tma_shared_memory_bytes(stages, c)
    else:
        @cuda.jit
        def batched(a, b, c, alpha, beta, extras):
            shared = cuda.shared.array(0, types.uint8, alignment=ALIGNED)
            mm.batched(a, b, c, shared, alpha, beta, stages=stages, epilogue=epilogue, epilogue_args=extras)

        batched.shared_bytes = mm.batched_shared_memory_bytes(stages, c)
    batched.tma = tma
    return batched


def make_hopper_batched(mm, epilogue):
    """`PipelineMatmul.batched` with ``epilogue``: launch with `gemm.run_hopper_batched`."""
    @cuda.jit
    def batched(pipe, c, alpha, beta, extras):
        mm.batched(pipe, c, alpha, beta, epilogue=epilogue, epilogue_args=extras)

    return batched


def make_hopper_gemm(mm, epilogue, group=8):
    """`PipelineMatmul.tile` in a persistent loop (as `gemm.make_hopper_gemm`) with ``epilogue``: launch with
    `gemm.run_hopper`."""
    TM, TN = mm.m, mm.n

    @cuda.jit
    def hopper_gemm(pipe, c, alpha, beta, extras):
        rows, cols = (c.shape[0] + TM - 1) // TM, (c.shape[1] + TN - 1) // TN
        t = cuda.blockIdx.x
        while t < rows * cols:
            first = t // (group * cols) * group
            height = min(rows - first, group)
            within = t % (group * cols)
            mm.tile(pipe, c, first + within % height, within // height, alpha, beta, epilogue=epilogue,
                    epilogue_args=extras)
            t += cuda.gridDim.x

    return hopper_gemm


def main():
    rng = np.random.default_rng()
    small = cuda.config.ENABLE_CUDASIM
    m, n, k = (40, 50, 36) if small else (1000, 1100, 900)
    tile, block = ((16, 16, 16), 32) if small else ((64, 64, 32), 128)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((m, k), (k, n)))
    bias = rng.standard_normal(n).astype(np.float32)
    mm = tiles.Matmul(tile, "float16", block_dim=block)
    c = gemm.run(make_tile_gemm(mm, bias_relu), a, b, np.zeros((m, n), np.float32), 1.0, 0.0, tile, block,
                 extras=((cuda.to_device(bias),),))
    expected = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0)
    error = np.linalg.norm(c - expected) / np.linalg.norm(expected)
    print(f"relu(A @ B + bias), {m} x {n} x {k} float16 -> float32, tiles {tile}: relative error {error:.1e}")
    assert error < 1e-3


if __name__ == "__main__":
    main()
