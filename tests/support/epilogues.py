"""Fused epilogues against NumPy, for both sides: tests/gpu/test_epilogue.py runs these checks at the GPU's
tile sizes, tests/simulator/test_matmul_sim.py at small ones (examples/gemm_epilogue.py's kernels).

Each form gets sizes that are not multiples of its tile, alpha and beta not 0 or 1 (the epilogue sees
alpha * A @ B + beta * C), and epilogues that use every coordinate and several arrays of
``epilogue_args``: a bias over C's columns, a scale over its rows and one over a batch's products.
"""

import math

import numpy as np
from numba import cuda, float32

import numba_tiles as tiles
from examples import gemm, gemm_epilogue

from . import matrices

ZERO = float32(0)


@cuda.jit(device=True)
def scaled_relu(value, row, col, scale, bias):
    """relu(value * scale[row] + bias[col])."""
    return max(value * scale[row] + bias[col], ZERO)


@cuda.jit(device=True)
def batched_scaled(value, item, row, col, per_item, scale, bias):
    """value * per_item[item] * scale[row] + bias[col]."""
    return value * per_item[item] * scale[row] + bias[col]


def _operands(rng, shape_a, shape_b, precision):
    a, b = (rng.standard_normal(s).astype(np.float32) for s in (shape_a, shape_b))
    return (
        (matrices.bf16_bits(a), matrices.bf16_bits(b))
        if precision == "bf16"
        else (a.astype(np.float16), b.astype(np.float16))
    )


def _c(rng, shape, out):
    c = rng.standard_normal(shape).astype(np.float32)
    return matrices.bf16_bits(c) if out == "int16" else c.astype(out)


def _scales(rng):
    return float(rng.uniform(0.5, 2)), float(rng.uniform(-2, -0.5))


def _check(result, expected, out, kind):
    error = np.linalg.norm(matrices.values(result, kind) - expected) / np.linalg.norm(expected)
    assert error < (1e-2 if out != "float32" else 1e-5), error


def register_form(rng, tile, block_dim, precision, out, staged):
    """Matmul.store with and without a stage: C = relu((alpha A @ B + beta C) * scale[row] + bias[col])."""
    mm = tiles.Matmul(tile, "int16" if precision == "bf16" else "float16", block_dim=block_dim, precision=precision)
    m, n, k = (int(v) for v in rng.integers(1, 4, 3) * np.array(tile) + rng.integers(1, tile[2], 3))
    a, b = _operands(rng, (m, k), (k, n), precision)
    c = _c(rng, (m, n), out)
    scale, bias = rng.uniform(0.5, 2, m).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    alpha, beta = _scales(rng)
    result = gemm.run(
        gemm_epilogue.make_own_loop(mm, scaled_relu, staged),
        a,
        b,
        c,
        alpha,
        beta,
        tile,
        block_dim,
        extras=((cuda.to_device(scale), cuda.to_device(bias)),),
    )
    kind = precision if out == "int16" else None
    blended = alpha * matrices.values(a, precision) @ matrices.values(b, precision) + beta * matrices.values(c, kind)
    _check(result, np.maximum(blended * scale[:, None] + bias, 0), out, kind)


def batch(rng, tile, block_dim, precision, out, implementation, stages=2, full=False):
    """Matmul.batched by ``implementation``: each item with its (item, row, col); products smaller than the tile
    (``full``: as large, where the store runs its loop without edge tests), K not a multiple of the K-tile; fewer
    blocks than products."""
    mm = tiles.Matmul(
        tile, "int16" if precision == "bf16" else "float16", block_dim=block_dim, precision=precision, stages=stages
    )
    count = int(rng.integers(8, 12)) if tile[0] < 64 else int(rng.integers(40, 90))
    m = tile[0] if full else int(rng.integers(tile[0] // 2 + 1, tile[0]))
    n, k = tile[1], int(rng.integers(1, 4) * tile[2] + 8)
    a, b = _operands(rng, (count, m, k), (count, k, n), precision)
    c = _c(rng, (count, m, n), out)
    extras = [rng.uniform(0.5, 2, s).astype(np.float32) for s in (count, m, n)]
    alpha, beta = _scales(rng)
    d_c = cuda.to_device(c)
    ops = mm.operands(cuda.to_device(a), cuda.to_device(b), d_c, implementation=implementation)
    mm.launch(
        gemm_epilogue.make_batched(mm, batched_scaled),
        ops,
        alpha,
        beta,
        tuple(cuda.to_device(x) for x in extras),
        grid=int(rng.integers(1, count // 3)),
    )
    kind = precision if out == "int16" else None
    per_item, scale, bias = extras
    blended = alpha * np.einsum(
        "imk,ikn->imn", matrices.values(a, precision), matrices.values(b, precision)
    ) + beta * matrices.values(c, kind)
    _check(d_c.copy_to_host(), blended * per_item[:, None, None] * scale[None, :, None] + bias, out, kind)


def tile(rng, shape, out, implementation, tanh=False, call="tile"):
    """Matmul.tile (``call="gemm"``: Matmul.gemm over the resident grid) by ``implementation``: C = gelu(alpha A @ B
    + beta C + bias[col]), bf16 A and B; ``tanh``: the tanh form under fastmath (examples/gemm_epilogue.py's
    ``bias_gelu_tanh``), with beta 0."""
    mm = tiles.Matmul(shape, "int16", precision="bf16", block_dim=32 if shape[0] < 64 else None)
    m, n, k = (int(v) for v in rng.integers(2, 5, 3) * np.array(shape) + rng.integers(1, 100, 3) // 8 * 8)
    a, b = _operands(rng, (m, k), (k, n), "bf16")
    c = _c(rng, (m, n), out)
    bias = rng.standard_normal(n).astype(np.float32)
    alpha, beta = _scales(rng)
    beta = 0.0 if tanh else beta
    d_c = cuda.to_device(c)
    ops = mm.operands(cuda.to_device(a), cuda.to_device(b), d_c, implementation=implementation)
    epilogue = gemm_epilogue.bias_gelu_tanh if tanh else gemm_epilogue.bias_gelu
    make, grid = (gemm_epilogue.make_whole_gemm, "resident") if call == "gemm" else (gemm_epilogue.make_tile_gemm, None)
    mm.launch(make(mm, epilogue), ops, alpha, beta, (cuda.to_device(bias),), grid=grid)
    kind = "bf16" if out == "int16" else None
    v = alpha * matrices.values(a, "bf16") @ matrices.values(b, "bf16") + beta * matrices.values(c, kind) + bias
    gelu = (
        1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3))
        if tanh
        else 1 + np.vectorize(math.erf)(v * math.sqrt(0.5))
    )
    _check(d_c.copy_to_host(), 0.5 * v * gelu, out, kind)
