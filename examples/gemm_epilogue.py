"""Fused epilogues: C = act(A @ B + bias) in one kernel, in each form of the tile matmul, checked against NumPy.

A store's ``epilogue=`` is a ``@cuda.jit(device=True)`` function that gets each item of C (in the
accumulator's precision, after ``alpha * A @ B + beta * C``) with its coordinates in C, ``(row, col)``, or
``(item, row, col)`` in a batch, then the values passed as ``epilogue_args=`` (a tuple: arrays, scalars). It
returns the value C stores, rounded to C's dtype. nvJitLink inlines it into the store's loop: a bias and an
activation cost no pass over C.

- `make_own_loop`: the register form's steps in a kernel's own K loop, ``mm.store(..., epilogue=...)``;
- `make_tile_gemm`, `make_whole_gemm`, `make_batched`: `tiles.Matmul`'s whole calls, ``mm.tile``, ``mm.gemm`` and
  ``mm.batched``.

    python examples/gemm_epilogue.py                           # on a GPU
    NUMBA_ENABLE_CUDASIM=1 python examples/gemm_epilogue.py    # the same kernels on Numba's simulator, small
"""

import math

import numpy as np
from numba import cuda, float32
from numba.cuda import types

import numba_tiles as tiles
from examples import gemm

ALIGNED = None if cuda.config.ENABLE_CUDASIM else 16  # (the simulator has no alignment=)
# float32 constants keep the math float32: a bare 1 is an int64, and int64 + float32 is float64 in Numba (an
# erf GELU with 1 + erf(...) took 4 conversions and 2 float64 operations an item, a quarter of an H100's 8192^3
# bf16 GEMM's time)
ZERO, ONE, HALF, SQRT_HALF = float32(0), float32(1), float32(0.5), float32(math.sqrt(0.5))
SQRT_2_PI, CUBIC = float32(math.sqrt(2 / math.pi)), float32(0.044715)


@cuda.jit(device=True)
def bias_relu(value, row, col, bias):
    """relu(value + bias[col]): the item of C at (row, col)."""
    return max(value + bias[col], ZERO)


@cuda.jit(device=True)
def bias_gelu(value, row, col, bias):
    """gelu(value + bias[col]) (the erf form, PyTorch's default)."""
    v = value + bias[col]
    return HALF * v * (ONE + math.erf(v * SQRT_HALF))


@cuda.jit(device=True, fastmath=True)
def bias_gelu_tanh(value, row, col, bias):
    """gelu(value + bias[col]) in the tanh form (cuBLASLt's GELU epilogue, PyTorch's ``approximate="tanh"``):
    under ``fastmath=True`` the tanh is one instruction (MUFU.TANH), the item's whole epilogue a dozen."""
    v = value + bias[col]
    return HALF * v * (ONE + math.tanh(SQRT_2_PI * (v + CUBIC * v * v * v)))


@cuda.jit(device=True)
def batched_bias_relu(value, item, row, col, bias):
    """relu(value + bias[col]) for an item of product ``item`` of a batch."""
    return max(value + bias[col], ZERO)


def make_own_loop(mm, epilogue, staged=False):
    """``gemm(a, b, c, alpha, beta, extras)``: ``c = epilogue(alpha * a @ b + beta * c, *extras)`` by `tiles.Matmul`
    ``mm``'s register form, a tile of C a block (``staged``: C goes out through a shared stage, in 16-byte
    vectors); launch with `gemm.run`."""
    TM, TN, TK = mm.shape
    ab, acc_type = getattr(types, mm.dtype), getattr(types, mm.accumulator)

    @cuda.jit
    def own_loop(a, b, c, alpha, beta, extras):
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

    return own_loop


def make_tile_gemm(mm, epilogue):
    """``gemm(ops, alpha, beta, extras)``: C's tile (blockIdx.y, blockIdx.x) by `Matmul.tile` with ``epilogue``;
    launch with `gemm.run_described`."""

    @cuda.jit
    def tile_gemm(ops, alpha, beta, extras):
        mm.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, alpha, beta, epilogue=epilogue, epilogue_args=extras)

    return tile_gemm


def make_whole_gemm(mm, epilogue):
    """``gemm(ops, alpha, beta, extras)``: all of C by `Matmul.gemm` with ``epilogue``; launch with
    `gemm.run_described` (``grid="resident"``)."""

    @cuda.jit
    def whole_gemm(ops, alpha, beta, extras):
        mm.gemm(ops, alpha, beta, epilogue=epilogue, epilogue_args=extras)

    return whole_gemm


def make_batched(mm, epilogue):
    """``bmm(ops, alpha, beta, extras)``: the whole batch by `Matmul.batched` with ``epilogue`` (which takes the
    product's index too); launch with `gemm.run_described`."""

    @cuda.jit
    def bmm(ops, alpha, beta, extras):
        mm.batched(ops, alpha, beta, epilogue=epilogue, epilogue_args=extras)

    return bmm


def main():
    rng = np.random.default_rng()
    small = cuda.config.ENABLE_CUDASIM
    (m, n, k), batch = ((40, 50, 36), 3) if small else ((1000, 1104, 904), 1000)  # (rows of whole 16 bytes)
    mm = tiles.Matmul((16, 16, 16) if small else (64, 64, 32), "float16", block_dim=32 if small else None)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((m, k), (k, n)))
    bias = rng.standard_normal(n).astype(np.float32)
    product = a.astype(np.float64) @ b.astype(np.float64) + bias
    relu, gelu = np.maximum(product, 0), 0.5 * product * (1 + np.vectorize(math.erf)(product * math.sqrt(0.5)))
    extras = (cuda.to_device(bias),)
    c = np.zeros((m, n), np.float32)
    for form, result, expected in (
        (
            "own loop, relu",
            lambda: gemm.run(make_own_loop(mm, bias_relu), a, b, c, 1.0, 0.0, mm.shape, mm.block_dim, extras=(extras,)),
            relu,
        ),
        (
            "Matmul.tile, gelu",
            lambda: gemm.run_described(mm, make_tile_gemm(mm, bias_gelu), a, b, c, 1.0, 0.0, extras),
            gelu,
        ),
        (
            "Matmul.gemm, relu",
            lambda: gemm.run_described(mm, make_whole_gemm(mm, bias_relu), a, b, c, 1.0, 0.0, extras, grid="resident"),
            relu,
        ),
    ):
        error = np.linalg.norm(result() - expected) / np.linalg.norm(expected)
        print(f"{form:18} {m} x {n} x {k} float16 -> float32, tiles {mm.shape}: relative error {error:.1e}")
        assert error < 1e-3, f"{form}: {error:.1e}"
    M, N, K = mm.shape
    a, b = (rng.standard_normal((batch, *s)).astype(np.float16) for s in ((M, K), (K, N)))
    bias = rng.standard_normal(N).astype(np.float32)
    c = np.zeros((batch, M, N), np.float32)
    result = gemm.run_described(mm, make_batched(mm, batched_bias_relu), a, b, c, 1.0, 0.0, (cuda.to_device(bias),))
    expected = np.maximum(np.einsum("imk,ikn->imn", a.astype(np.float64), b.astype(np.float64)) + bias, 0)
    error = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    print(f"Matmul.batched, relu {batch} x {M} x {N} x {K} float16 -> float32: relative error {error:.1e}")
    assert error < 1e-3, f"Matmul.batched: {error:.1e}"


if __name__ == "__main__":
    main()
