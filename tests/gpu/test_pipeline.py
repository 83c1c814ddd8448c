"""tiles.PipelineMatmul on a Hopper GPU: examples/gemm.py's persistent kernel against a float64 NumPy reference.

Every precision (fp16, bf16; tf32 with its one arrangement) × C's dtype (float32, A's) × arrangement of A and B
in global memory, tiles of 128 x 128 x 64 (256 threads), 64 x 64 x 32 / 128 x 256 x 64 and tf32's 128 x 128 x 32,
on matrices whose sizes are not multiples of the tile (K too, through padded arrays), with alpha and beta
not 0 or 1 (C staged through shared memory) and with 1 and 0 (C stored from the registers, inside the
matrix); C of any strides.
"""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles
from examples import gemm

hopper = cuda.is_available() and cuda.get_current_device().compute_capability == (9, 0)
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not hopper, reason="no Hopper (sm_90) GPU")]

ORDERS = [("row_major", "row_major"), ("row_major", "col_major"), ("col_major", "row_major")]
CASES = ([("bf16", c, order, (128, 128, 64), 256, 2) for c in ("float32", "int16") for order in ORDERS]
         + [("fp16", c, ("row_major", "row_major"), (64, 64, 32), 128, 2) for c in ("float32", "float16")]
         + [("fp16", "float16", ("col_major", "row_major"), (128, 256, 64), 256, 3)]
         + [("tf32", "float32", ("row_major", "col_major"), (128, 128, 32), threads, stages)
            for threads, stages in ((256, 2), (128, 4))])
DTYPES = {"bf16": "int16", "fp16": "float16", "tf32": "float32"}


def transposed(array):
    """A device array's last two axes swapped, as a view (Numba's ``.T`` of a device array copies it)."""
    swap = list(range(array.ndim - 2)) + [array.ndim - 1, array.ndim - 2]
    interface = dict(array.__cuda_array_interface__, shape=tuple(array.shape[i] for i in swap),
                     strides=tuple(array.strides[i] for i in swap))
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
    stored = gemm.bf16_bits(stored) if precision == "bf16" else stored.astype(dtype)
    view, host = cuda.to_device(stored)[columns], gemm.values(stored[columns], precision)
    return (view, host) if order == "row_major" else (transposed(view), np.swapaxes(host, -1, -2))


@pytest.mark.parametrize("precision,c_dtype,arrangement,shape,block_dim,stages", CASES, ids=str)
@pytest.mark.parametrize("scaled", [True, False], ids=["alpha-beta", "plain"])
def test_pipeline_gemm_against_numpy(precision, c_dtype, arrangement, shape, block_dim, stages, scaled, rng):
    mm = tiles.PipelineMatmul(shape, DTYPES[precision], precision=None if precision == "fp16" else precision,
                              c_dtype=c_dtype, arrangement=arrangement, stages=stages, block_dim=block_dim)
    m, n, k = (int(v) for v in rng.integers(2, 5, 3) * np.array(shape) + rng.integers(1, 60, 3))  # not multiples
    p = "bf16" if precision == "bf16" else None  # (tf32: the float32 values, as the reference sees them)
    (a, a_host), (b, b_host) = (operand(rng, size, order, p, mm.dtype)
                                for size, order in (((m, k), arrangement[0]), ((k, n), arrangement[1])))
    c_host = rng.standard_normal((m, n)).astype(np.float32)
    if c_dtype == "int16":
        c_host = gemm.bf16_bits(c_host)
    c_host = c_host.astype(c_dtype)
    column_major = rng.integers(0, 2)  # C a transposed view in some runs: every tile then goes through the staged store
    c = transposed(cuda.to_device(np.ascontiguousarray(c_host.T))) if column_major else cuda.to_device(c_host)
    alpha, beta = (float(rng.uniform(0.5, 2)), float(rng.uniform(-2, -0.5))) if scaled else (1.0, 0.0)
    kernel = gemm.make_hopper_gemm(mm)
    gemm.run_hopper(mm, kernel, a, b, c, alpha, beta)
    expected = (alpha * (a_host @ b_host)
                + beta * gemm.values(c_host, p if c_dtype == "int16" else None))
    result = gemm.values(transposed(c).copy_to_host().T if column_major else c.copy_to_host(),
                         p if c_dtype == "int16" else None)
    error = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    bound = 1e-3 if precision == "tf32" else 1e-5 if c_dtype == "float32" else 1e-2  # (tf32 rounds A and B)
    assert error < bound, f"relative error {error:.2e}"


def test_pipe_serves_many_launches_and_another_pair_after(rng):
    """One pipe, two launches into two C arrays; then a pipe of other A and B in the same process."""
    mm = tiles.PipelineMatmul((128, 128, 64), "int16", precision="bf16")
    kernel = gemm.make_hopper_gemm(mm)
    for m, n, k in ((256, 384, 128), (300, 130, 72)):
        (a, a_host), (b, b_host) = (operand(rng, s, "row_major", "bf16", "int16") for s in ((m, k), (k, n)))
        expected = a_host @ b_host
        for _ in range(2):
            c = cuda.to_device(np.full((m, n), np.nan, np.float32))
            gemm.run_hopper(mm, kernel, a, b, c, 1.0, 0.0)
            assert np.linalg.norm(c.copy_to_host() - expected) / np.linalg.norm(expected) < 1e-5


WRONG_LAUNCH_CHILD = r"""
import sys
import numpy as np
from numba import cuda
sys.path.insert(0, {root!r})
import numba_tiles as tiles
from examples import gemm

mm = tiles.PipelineMatmul((128, 128, 64), "int16", precision="bf16")
kernel = gemm.make_hopper_gemm(mm)
a, b = cuda.to_device(np.zeros((128, 64), np.int16)), cuda.to_device(np.zeros((64, 128), np.int16))
c = cuda.to_device(np.full((128, 128), np.nan, np.float32))
gemm.run_hopper(mm, kernel, a, b, c, 1.0, 0.0)  # the launch it was made for: fine
assert (c.copy_to_host() == 0).all()
pipe = mm.prepare(a, b)
kernel[1, mm.threads // 2, 0, mm.shared_memory_bytes](pipe, c, 1.0, 0.0)  # half the threads: stops
cuda.synchronize()
"""


@pytest.mark.parametrize("debug", [False, True], ids=["release", "NUMBA_TILES_DEBUG"])
def test_a_wrong_launch_stops_the_kernel(debug):
    """A launch with other threads than mm.threads stops the kernel (in a subprocess: it ends the CUDA context).
    By default by a trap alone: a message is a call, and a kernel with any call gets its wgmma serialized by
    ptxas. With NUMBA_TILES_DEBUG=1 it says what the launch needs."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "NUMBA_TILES_DEBUG": "1" if debug else "0"}
    child = WRONG_LAUNCH_CHILD.format(root=str(Path(__file__).resolve().parents[2]))
    run = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=600)
    error = "CUDA_ERROR_ASSERT" if debug else "CUDA_ERROR_LAUNCH_FAILED"  # (the message's assert; the trap)
    assert run.returncode != 0 and error in run.stderr, run.stdout + run.stderr[-3000:]
    message = ("tiles.PipelineMatmul.tile: launched with 128 threads and 65568 bytes of dynamic shared memory; it "
               "needs 256 threads and 65568 bytes")
    assert (message in run.stdout) == debug, run.stdout


# PipelineMatmul.batched: precision x C's dtype x arrangement x tile (K-steps of 16 to 128, N of 64 to 256)
BATCHED = [("bf16", "int16", ("row_major", "row_major"), (128, 128, 32), 4),
           ("bf16", "float32", ("row_major", "col_major"), (128, 128, 64), 3),
           ("bf16", "int16", ("col_major", "row_major"), (128, 64, 64), 3),
           ("bf16", "int16", ("row_major", "row_major"), (128, 128, 128), 2),
           ("fp16", "float16", ("row_major", "row_major"), (64, 128, 64), 4),
           ("fp16", "float32", ("col_major", "col_major"), (64, 256, 32), 4),
           ("fp16", "float16", ("row_major", "col_major"), (128, 192, 16), 8)]


@pytest.mark.parametrize("precision,c_dtype,arrangement,shape,stages", BATCHED, ids=str)
@pytest.mark.parametrize("scaled", [True, False], ids=["alpha-beta", "plain"])
def test_batched_against_numpy(precision, c_dtype, arrangement, shape, stages, scaled, rng):
    """A batch of a few hundred products (more than the blocks: the counter's order) whose m, n and k are not
    multiples of the tile in half the runs, launched on one pipe several times (the counter set back to zero each
    time) with one block an SM, with 7 blocks and with more blocks than products."""
    mm = tiles.PipelineMatmul(shape, DTYPES[precision], precision=None if precision == "fp16" else precision,
                              c_dtype=c_dtype, arrangement=arrangement, stages=stages)
    count = int(rng.integers(300, 700))
    ragged = rng.integers(0, 2)
    m, n, k = ((int(rng.integers(1, shape[0])), int(rng.integers(1, shape[1])), int(rng.integers(1, 300)))
               if ragged else (shape[0], shape[1], 2 * shape[2]))
    p = "bf16" if precision == "bf16" else None
    (a, a_host), (b, b_host) = (operand(rng, size, order, p, mm.dtype, count)
                                for size, order in (((m, k), arrangement[0]), ((k, n), arrangement[1])))
    c_kind = p if c_dtype == "int16" else None
    padded = np.zeros((count, m, -(-n // 8) * 8 + 8), np.float32)  # (C a view of padded rows)
    padded[:, :, :n] = rng.standard_normal((count, m, n))
    padded = gemm.bf16_bits(padded) if c_dtype == "int16" else padded.astype(c_dtype)
    c_host = gemm.values(padded[:, :, :n], c_kind)
    alpha, beta = (float(rng.uniform(0.5, 2)), float(rng.uniform(-2, -0.5))) if scaled else (1.0, 0.0)
    product = np.einsum("imk,ikn->imn", a_host, b_host)
    bound = 1e-5 if c_dtype == "float32" else 1e-2
    kernel = gemm.make_hopper_batched(mm)
    for blocks in (None, None, 7, count + 5):
        c = cuda.to_device(padded)[:, :, :n]
        gemm.run_hopper_batched(mm, kernel, a, b, c, alpha, beta, blocks=blocks)
        expected = alpha * product + beta * c_host
        result = gemm.values(c.copy_to_host(), c_kind)
        error = np.linalg.norm(result - expected) / np.linalg.norm(expected)
        assert error < bound, f"relative error {error:.2e} with {blocks} blocks"


def test_batched_pipe_serves_many_launches_in_order(rng):
    """One pipe launched 50 times back to back, C right after the last and the pipe's counters back at zero (each
    launch's last block sets them back)."""
    mm = tiles.PipelineMatmul((128, 128, 32), "int16", precision="bf16", c_dtype="int16", stages=4)
    (a, a_host), (b, b_host) = (operand(rng, s, "row_major", "bf16", "int16", 1000) for s in ((128, 96), (96, 128)))
    c = cuda.to_device(np.zeros((1000, 128, 128), np.int16))
    kernel, pipe, shared = gemm.make_hopper_batched(mm), mm.prepare_batched(a, b, c), mm.batched_shared_memory_bytes
    tiles.allow_dynamic_shared_memory(kernel, shared, pipe, c, 1.0, 0.0)
    for _ in range(50):
        kernel[132, mm.batched_threads, 0, shared](pipe, c, 1.0, 0.0)
    expected = np.einsum("imk,ikn->imn", a_host, b_host)
    result = gemm.values(c.copy_to_host(), "bf16")
    assert np.linalg.norm(result - expected) / np.linalg.norm(expected) < 1e-2
    assert not pipe.copy_to_host()[448:456].any()


BATCHED_WRONG_LAUNCH_CHILD = r"""
import sys
import numpy as np
from numba import cuda
sys.path.insert(0, {root!r})
import numba_tiles as tiles
from examples import gemm

mm = tiles.PipelineMatmul((128, 128, 32), "int16", precision="bf16", c_dtype="int16", stages=4)
kernel = gemm.make_hopper_batched(mm)
a, b = cuda.to_device(np.zeros((3, 128, 64), np.int16)), cuda.to_device(np.zeros((3, 64, 128), np.int16))
c = cuda.to_device(np.ones((3, 128, 128), np.int16))
gemm.run_hopper_batched(mm, kernel, a, b, c, 1.0, 0.0)  # the launch it was made for: fine
assert (c.copy_to_host() == 0).all()
pipe = mm.prepare_batched(a, b, c)
kernel[2, 256, 0, mm.batched_shared_memory_bytes](pipe, c, 1.0, 0.0)  # a warpgroup short: stops
cuda.synchronize()
"""


@pytest.mark.parametrize("debug", [False, True], ids=["release", "NUMBA_TILES_DEBUG"])
def test_a_wrong_batched_launch_stops_the_kernel(debug):
    """As for mm.tile: a launch with other threads than mm.batched_threads traps (in a subprocess: it ends the
    CUDA context), with a message under NUMBA_TILES_DEBUG=1 only."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "NUMBA_TILES_DEBUG": "1" if debug else "0"}
    child = BATCHED_WRONG_LAUNCH_CHILD.format(root=str(Path(__file__).resolve().parents[2]))
    run = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=600)
    error = "CUDA_ERROR_ASSERT" if debug else "CUDA_ERROR_LAUNCH_FAILED"
    assert run.returncode != 0 and error in run.stderr, run.stdout + run.stderr[-3000:]
    assert ("tiles.PipelineMatmul.batched: launched with other threads" in run.stdout) == debug, run.stdout
