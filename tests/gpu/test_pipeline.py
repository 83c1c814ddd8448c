"""tiles.Matmul's whole calls on the GPU: ``tile``, ``gemm`` and ``batched`` through ``operands`` and ``launch``,
against a float64 NumPy reference, in each implementation the library has.

On Hopper, ``tile`` by our wgmma block (fp16 and bf16 × C's dtype (float32, A's) × arrangement of A and B in global
memory, tiles of 128 x 128 x 64, 64 x 64 x 32 and 128 x 192 x 64; a column-major C, which it does not store, goes
to libmathdx) and by libmathdx's pipeline (bf16, fp16 128 x 256 x 64, tf32 with its one arrangement), and
``batched`` by wgmma (128-row tiles of 16-bit operands) and by TMA (64-row ones); on any GPU, the register form's
loops (float32 and float64, where Hopper's code does not serve). Sizes not multiples of the tile (K too, through
padded arrays), alpha and beta not 0 or 1 (C staged through shared memory) and 1 and 0 (C stored from the
registers, inside the matrix); C of any strides.
"""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles
from examples import gemm

from ..support import matrices

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]
hopper = pytest.mark.skipif(
    not (cuda.is_available() and cuda.get_current_device().compute_capability == (9, 0)), reason="no Hopper (sm_90) GPU"
)

ORDERS = [("row_major", "row_major"), ("row_major", "col_major"), ("col_major", "row_major")]
# (precision, C's dtype, arrangement, tile, stages, implementation on Hopper)
CASES = (
    [("bf16", c, order, (128, 128, 64), 2, "wgmma") for c in ("float32", "int16") for order in ORDERS]
    + [("fp16", c, ("row_major", "row_major"), (64, 64, 32), 2, "wgmma") for c in ("float32", "float16")]
    + [("fp16", "float16", ("row_major", "col_major"), (128, 192, 64), 4, "wgmma")]
    + [
        ("bf16", c, order, (128, 128, 64), 2, "libmathdx")
        for c, order in (("float32", ORDERS[1]), ("int16", ORDERS[2]))
    ]
    + [("fp16", "float16", ("col_major", "row_major"), (128, 256, 64), 3, "libmathdx")]
    + [("tf32", "float32", ("row_major", "col_major"), (128, 128, 32), stages, "libmathdx") for stages in (2, 4)]
    + [
        ("float32", "float32", ("row_major", "col_major"), (64, 64, 32), 3, "cp.async"),
        ("float64", "float64", ("col_major", "row_major"), (32, 32, 16), 2, "cp.async"),
    ]
)
DTYPES = {"bf16": "int16", "fp16": "float16", "tf32": "float32", "float32": "float32", "float64": "float64"}
NAMED = {"bf16": "bf16", "tf32": "tf32"}
BOUNDS = {"tf32": 1e-3, "float32": 1e-5, "float64": 1e-12}


def description(precision, shape, arrangement, stages):
    return tiles.Matmul(
        shape, DTYPES[precision], precision=NAMED.get(precision), arrangement=arrangement, stages=stages
    )


def transposed(array):
    """A device array's last two axes swapped, as a view (Numba's ``.T`` of a device array copies it)."""
    swap = list(range(array.ndim - 2)) + [array.ndim - 1, array.ndim - 2]
    interface = dict(
        array.__cuda_array_interface__,
        shape=tuple(array.shape[i] for i in swap),
        strides=tuple(array.strides[i] for i in swap),
    )
    return cuda.from_cuda_array_interface(interface, owner=array)


def operand(rng, shape, order, precision, dtype, count=None):
    """Standard normal values of ``dtype`` on the device (bfloat16 bits for "bf16"), ``order`` in memory, the
    leading dimension padded to 8 items and more (a view), and the same on the host as float64; ``count``: a batch
    of ``count`` such matrices."""
    rows, cols = shape if order == "row_major" else shape[::-1]
    batch = () if count is None else (count,)
    stored = np.zeros(batch + (rows, -(-cols // 8) * 8 + 8), np.float32)
    columns = (slice(None),) * (stored.ndim - 1) + (slice(0, cols),)  # (device arrays take no Ellipsis)
    stored[columns] = rng.standard_normal(batch + (rows, cols))
    stored = matrices.bf16_bits(stored) if precision == "bf16" else stored.astype(dtype)
    view, host = cuda.to_device(stored)[columns], matrices.values(stored[columns], precision)
    return (view, host) if order == "row_major" else (transposed(view), np.swapaxes(host, -1, -2))


def bound(precision, c_dtype):
    return BOUNDS.get(precision) or (1e-5 if c_dtype == "float32" else 1e-2)  # (tf32 rounds A and B)


# How C is computed: a block a tile by mm.tile; all of C by mm.gemm over the resident grid, over a grid of three
# blocks (each several tiles), and over the default grid (a block a tile).
CALLS = {
    "tile": (gemm.make_tile_gemm, None),
    "gemm-resident": (gemm.make_whole_gemm, "resident"),
    "gemm-3-blocks": (gemm.make_whole_gemm, 3),
    "gemm-default-grid": (gemm.make_whole_gemm, None),
}


@pytest.mark.parametrize("precision,c_dtype,arrangement,shape,stages,implementation", CASES, ids=str)
@pytest.mark.parametrize("scaled", [True, False], ids=["alpha-beta", "plain"])
@pytest.mark.parametrize("call", list(CALLS))
def test_tile_gemm_against_numpy(precision, c_dtype, arrangement, shape, stages, implementation, scaled, call, rng):
    if call == "gemm-default-grid" and scaled:
        pytest.skip("(the default grid's gemm once a case: scaled or not is the tile's)")
    mm = description(precision, shape, arrangement, stages)
    m, n, k = (int(v) for v in rng.integers(2, 5, 3) * np.array(shape) + rng.integers(1, 60, 3))  # not multiples
    p = "bf16" if precision == "bf16" else None  # (tf32: the float32 values, as the reference sees them)
    (a, a_host), (b, b_host) = (
        operand(rng, size, order, p, mm.dtype) for size, order in (((m, k), arrangement[0]), ((k, n), arrangement[1]))
    )
    c_host = rng.standard_normal((m, n)).astype(np.float32)
    if c_dtype == "int16":
        c_host = matrices.bf16_bits(c_host)
    c_host = c_host.astype(c_dtype)
    column_major = rng.integers(0, 2)  # C a transposed view in some runs: every tile then goes through the staged store
    if column_major:
        c = transposed(cuda.to_device(np.ascontiguousarray(c_host.T)))
    else:  # (a view of rows padded to whole 16 bytes, as TMA stores them)
        padded = np.zeros((m, -(-n // 8) * 8 + 8), c_dtype)
        padded[:, :n] = c_host
        c = cuda.to_device(padded)[:, :n]
    alpha, beta = (float(rng.uniform(0.5, 2)), float(rng.uniform(-2, -0.5))) if scaled else (1.0, 0.0)
    if cuda.get_current_device().compute_capability == (9, 0):
        # (a column-major C, which wgmma does not store, goes to the next implementation: libmathdx's)
        fallback = implementation == "wgmma" and column_major
        ops = mm.operands(a, b, c, implementation=None if fallback else implementation)
        assert ops.implementation == ("libmathdx" if fallback else implementation)
    else:
        ops = mm.operands(a, b, c)
    make, grid = CALLS[call]
    mm.launch(make(mm), ops, alpha, beta, grid=grid)
    expected = alpha * (a_host @ b_host) + beta * matrices.values(c_host, p if c_dtype == "int16" else None)
    result = matrices.values(
        transposed(c).copy_to_host().T if column_major else c.copy_to_host(), p if c_dtype == "int16" else None
    )
    error = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    assert error < bound(precision, c_dtype), f"relative error {error:.2e}"


@hopper
def test_operands_serve_many_launches_and_a_persistent_loop(rng):
    """One ops, launches into its C by the default grid and by a persistent kernel over C's tiles ("resident");
    then the operands of other A and B in the same process."""
    mm = tiles.Matmul((128, 128, 64), "int16", precision="bf16")

    @cuda.jit
    def persistent(ops, rows, cols):
        for t in range(cuda.blockIdx.x, rows * cols, cuda.gridDim.x):
            mm.tile(ops, t // cols, t % cols)

    for m, n, k in ((256, 384, 128), (300, 136, 72)):
        (a, a_host), (b, b_host) = (operand(rng, s, "row_major", "bf16", "int16") for s in ((m, k), (k, n)))
        expected = a_host @ b_host
        c = cuda.to_device(np.full((m, n), np.nan, np.float32))
        ops = mm.operands(a, b, c)
        for launch in (
            lambda: mm.launch(gemm.make_tile_gemm(mm), ops, 1.0, 0.0),
            lambda: mm.launch(persistent, ops, -(-m // 128), -(-n // 128), grid="resident"),
            lambda: mm.launch(gemm.make_whole_gemm(mm), ops, 1.0, 0.0, grid="resident"),  # (its counters back to 0)
            lambda: mm.launch(gemm.make_whole_gemm(mm), ops, 1.0, 0.0, grid=2),
        ):
            c.copy_to_device(np.full((m, n), np.nan, np.float32))
            launch()
            assert np.linalg.norm(c.copy_to_host() - expected) / np.linalg.norm(expected) < 1e-5
    grid, block, shared = mm.launch_config(persistent, ops, 3, 2, grid="resident")
    assert grid == 6 and block == (384, 1, 1) and shared == ops.shared_memory_bytes


WRONG_LAUNCH_CHILD = r"""
import sys
import numpy as np
from numba import cuda
sys.path.insert(0, {root!r})
import numba_tiles as tiles
from examples import gemm

mm = tiles.Matmul({shape}, "int16", precision="bf16", stages={stages})
kernel = gemm.{make}(mm)
a, b = (cuda.to_device(np.zeros(s, np.int16)) for s in ({a}, {b}))
c = cuda.to_device(np.ones({c}, np.float32))
ops = mm.operands(a, b, c)
mm.launch(kernel, ops, 1.0, 0.0)  # the launch it needs: fine
assert (c.copy_to_host() == 0).all()
grid, block, shared = mm.launch_config(kernel, ops, 1.0, 0.0)
kernel[grid, block[0] - 128, 0, shared](ops, 1.0, 0.0)  # a warpgroup short: stops
cuda.synchronize()
"""
WRONG = {
    "tile": dict(shape=(128, 128, 64), stages=2, make="make_tile_gemm", a=(128, 64), b=(64, 128), c=(128, 128)),
    "gemm": dict(shape=(128, 128, 64), stages=2, make="make_whole_gemm", a=(256, 64), b=(64, 128), c=(256, 128)),
    "batched": dict(
        shape=(128, 128, 32), stages=4, make="make_batched", a=(3, 128, 64), b=(3, 64, 128), c=(3, 128, 128)
    ),
}
MESSAGES = {
    "tile": "tiles.Matmul.tile: launched with other threads or less dynamic shared memory than mm.launch",
    "gemm": "tiles.Matmul.gemm: launched with other threads or less dynamic shared memory than mm.launch",
    "batched": "tiles.Matmul.batched: launched with other threads or less dynamic shared memory than mm.launch",
}


@hopper
@pytest.mark.parametrize("call", ["tile", "gemm", "batched"])
@pytest.mark.parametrize("debug", [False, True], ids=["release", "NUMBA_TILES_DEBUG"])
def test_a_wrong_launch_stops_the_kernel(call, debug):
    """A launch a warpgroup short of what mm.launch gives stops Hopper's kernels (in a subprocess: it ends the CUDA
    context). By default by a trap alone: a message is a call, and a kernel with any call gets its wgmma serialized
    by ptxas. With NUMBA_TILES_DEBUG=1 it says what the launch needs."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "NUMBA_TILES_DEBUG": "1" if debug else "0"}
    child = WRONG_LAUNCH_CHILD.format(root=str(Path(__file__).resolve().parents[2]), **WRONG[call])
    run = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=600)
    error = "CUDA_ERROR_ASSERT" if debug else "CUDA_ERROR_LAUNCH_FAILED"  # (the message's assert; the trap)
    assert run.returncode != 0 and error in run.stderr, run.stdout + run.stderr[-3000:]
    assert (MESSAGES[call] in run.stdout) == debug, run.stdout


# Matmul.batched: precision x C's dtype x arrangement x tile (K-steps of 16 to 128, N of 64 to 256), by the
# implementation Hopper gets (elsewhere the register form's loops: cp.async)
BATCHED = [
    ("bf16", "int16", ("row_major", "row_major"), (128, 128, 32), 4, "wgmma"),
    ("bf16", "float32", ("row_major", "col_major"), (128, 128, 64), 3, "wgmma"),
    ("bf16", "int16", ("col_major", "row_major"), (128, 64, 64), 3, "wgmma"),
    ("bf16", "int16", ("row_major", "row_major"), (128, 128, 128), 2, "wgmma"),
    ("fp16", "float16", ("row_major", "col_major"), (128, 192, 16), 8, "wgmma"),
    ("fp16", "float16", ("row_major", "row_major"), (64, 128, 64), 4, "tma"),
    ("fp16", "float32", ("col_major", "col_major"), (64, 64, 32), 4, "tma"),
    ("float32", "float32", ("row_major", "row_major"), (64, 64, 32), 4, "cp.async"),
    ("float64", "float64", ("row_major", "col_major"), (32, 32, 16), 2, "cp.async"),
]


@pytest.mark.parametrize("precision,c_dtype,arrangement,shape,stages,implementation", BATCHED, ids=str)
@pytest.mark.parametrize("scaled", [True, False], ids=["alpha-beta", "plain"])
def test_batched_against_numpy(precision, c_dtype, arrangement, shape, stages, implementation, scaled, rng):
    """A batch of a few hundred products (more than the blocks: the counter's order) whose m, n and k are not
    multiples of the tile in half the runs, launched on one ops several times (wgmma's counter set back to zero each
    time) with the grid mm.launch chooses, with 7 blocks and with more blocks than products."""
    mm = description(precision, shape, arrangement, stages)
    count = int(rng.integers(300, 700))
    ragged = rng.integers(0, 2)
    m, n, k = (
        (int(rng.integers(1, shape[0])), int(rng.integers(1, shape[1])), int(rng.integers(1, 300)))
        if ragged
        else (shape[0], shape[1], 2 * shape[2])
    )
    p = "bf16" if precision == "bf16" else None
    (a, a_host), (b, b_host) = (
        operand(rng, size, order, p, mm.dtype, count)
        for size, order in (((m, k), arrangement[0]), ((k, n), arrangement[1]))
    )
    c_kind = p if c_dtype == "int16" else None
    padded = np.zeros((count, m, -(-n // 8) * 8 + 8), np.float32)  # (C a view of padded rows)
    padded[:, :, :n] = rng.standard_normal((count, m, n))
    padded = matrices.bf16_bits(padded) if c_dtype == "int16" else padded.astype(c_dtype)
    c_host = matrices.values(padded[:, :, :n], c_kind)
    alpha, beta = (float(rng.uniform(0.5, 2)), float(rng.uniform(-2, -0.5))) if scaled else (1.0, 0.0)
    product = np.einsum("imk,ikn->imn", a_host, b_host)
    kernel = gemm.make_batched(mm)
    for grid in (None, None, 7, count + 5):
        c = cuda.to_device(padded)[:, :, :n]
        ops = mm.operands(a, b, c)
        if cuda.get_current_device().compute_capability == (9, 0):
            assert ops.implementation == implementation
        mm.launch(kernel, ops, alpha, beta, grid=grid)
        expected = alpha * product + beta * c_host
        result = matrices.values(c.copy_to_host(), c_kind)
        error = np.linalg.norm(result - expected) / np.linalg.norm(expected)
        assert error < bound(precision, c_dtype), f"relative error {error:.2e} with a grid of {grid}"


@hopper
def test_batched_operands_serve_many_launches_in_order(rng):
    """One ops launched 50 times back to back by wgmma, C right after the last and the pipe's counters back at zero
    (each launch's last block sets them back)."""
    mm = tiles.Matmul((128, 128, 32), "int16", precision="bf16", stages=4)
    (a, a_host), (b, b_host) = (operand(rng, s, "row_major", "bf16", "int16", 1000) for s in ((128, 96), (96, 128)))
    c = cuda.to_device(np.zeros((1000, 128, 128), np.int16))
    kernel, ops = gemm.make_batched(mm), mm.operands(a, b, c)
    grid, block, shared = mm.launch_config(kernel, ops, 1.0, 0.0)
    for _ in range(50):
        kernel[grid, block, 0, shared](ops, 1.0, 0.0)
    expected = np.einsum("imk,ikn->imn", a_host, b_host)
    result = matrices.values(c.copy_to_host(), "bf16")
    assert np.linalg.norm(result - expected) / np.linalg.norm(expected) < 1e-2
    from numba_tiles._tensor_maps import PIPE

    counters = ops.pipe.copy_to_host().view(PIPE)[0]
    assert counters["tickets"] == 0 and counters["finished"] == 0
