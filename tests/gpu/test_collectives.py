"""Load/store, scans, exchange, histogram, sorts and the neighbor collectives on the GPU against NumPy, on fresh random
data: every dtype, the three block ranks, items_per_thread {1, 2, 4, 7, 16}, every algorithm."""

import numpy as np
import pytest

from ..support import collectives as c
from ..support import neighbors as nb
from ..support.compiler import MLIR, cuda
from ..support.shared_kernels import COLLECTIVES, one_collective

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]

SHAPES = [pytest.param(s, id=str(s)) for s in c.SHAPES]


@pytest.mark.parametrize("block_dim", SHAPES)
@pytest.mark.parametrize("items", c.ITEMS_PER_THREAD)
@pytest.mark.parametrize("algorithm", c.MOVE_ALGORITHMS)
def test_load_store(algorithm, items, block_dim, rng):
    c.run_load_store("float32", block_dim, items, algorithm, rng)


@pytest.mark.parametrize("algorithm", ["direct", "striped", "vectorize", "warp_transpose"])
@pytest.mark.parametrize("num_valid,oob_default", [(True, False), (False, True), (True, True)])
def test_load_store_partial(algorithm, num_valid, oob_default, rng):
    c.run_load_store("int32", 128, 4, algorithm, rng, num_valid=num_valid, oob_default=oob_default)


@pytest.mark.parametrize("offset", [0, 1, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_vectorize_on_misaligned_arrays(dtype, offset, rng):
    """ "vectorize" from x[offset:] to out[offset:] (not on a 16-byte boundary unless offset is 0), full
    tiles and a partial last one: 16-byte words where aligned, items otherwise (CUB's store faulted)."""
    import numba_tiles as tiles

    items, threads, DT = 16, 64, np.dtype(dtype)
    tile = items * threads
    n = offset + 3 * tile + tile // 3

    @cuda.jit
    def copy(x, out):
        mine = cuda.local.array(items, DT)
        start = offset + cuda.blockIdx.x * tile
        tiles.block_load(x[start:], mine, block_dim=threads, items_per_thread=items, algorithm="vectorize")
        tiles.block_store(out[start:], mine, block_dim=threads, items_per_thread=items, algorithm="vectorize")

    x = c.random_array(DT, n, rng)
    out = np.zeros_like(x)
    copy[4, threads](x, out)
    np.testing.assert_array_equal(out[offset:], x[offset:])
    assert not out[:offset].any()


@pytest.mark.parametrize("block_dim", SHAPES)
@pytest.mark.parametrize("dtype", c.ARRAY_DTYPES)
def test_load_store_dtypes(dtype, block_dim, rng):
    for algorithm in ("vectorize", "transpose"):
        c.run_load_store(dtype, block_dim, 4, algorithm, rng)


SCAN_CASES = [
    ("int32", "+"),
    ("int64", "*"),
    ("uint8", "+"),
    ("int16", "max"),
    ("uint32", "min"),
    ("uint64", "^"),
    ("int8", "|"),
    ("uint16", "&"),
    ("float16", "+"),
    ("float32", "+"),
    ("float64", "max"),
    ("complex64", "+"),
    ("complex128", "*"),
]


@pytest.mark.parametrize("block_dim", SHAPES)
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("dtype,op", SCAN_CASES)
def test_block_scan(dtype, op, exclusive, block_dim, rng):
    c.run_block_scan(dtype, op, block_dim, 4, rng, exclusive=exclusive)


@pytest.mark.parametrize("items", c.ITEMS_PER_THREAD)
@pytest.mark.parametrize("algorithm", c.SCAN_ALGORITHMS)
@pytest.mark.parametrize("exclusive,initial", [(False, False), (True, False), (False, True), (True, True)])
def test_block_scan_forms(exclusive, initial, algorithm, items, rng):
    c.run_block_scan("float32", "+", 256, items, rng, algorithm=algorithm, exclusive=exclusive, initial=initial)


@pytest.mark.parametrize("warp_size", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("exclusive,initial", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize(
    "dtype,op",
    [("int32", "+"), ("float64", "+"), ("uint16", "max"), ("int8", "^"), ("float16", "min"), ("complex64", "*")],
)
def test_warp_scan(dtype, op, exclusive, initial, warp_size, rng):
    c.run_warp_scan(dtype, op, warp_size, rng, exclusive=exclusive, initial=initial)


@pytest.mark.parametrize("warp_size", [1, 8, 32])
@pytest.mark.parametrize("num_valid", [0, 1, 5, 32])
@pytest.mark.parametrize("exclusive,initial", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("dtype,op", [("int32", "+"), ("float32", "max"), ("uint8", "&")])
def test_warp_scan_num_valid(dtype, op, exclusive, initial, num_valid, warp_size, rng):
    c.run_warp_scan(dtype, op, warp_size, rng, exclusive=exclusive, initial=initial, num_valid=num_valid)


@pytest.mark.parametrize("block_dim", SHAPES)
@pytest.mark.parametrize("items", c.ITEMS_PER_THREAD)
@pytest.mark.parametrize("arrangement", list(c._EXCHANGES))
def test_exchange(arrangement, items, block_dim, rng):
    c.run_exchange("float64", arrangement, block_dim, items, rng)


@pytest.mark.parametrize("dtype", c.ARRAY_DTYPES)
def test_exchange_dtypes(dtype, rng):
    c.run_exchange(dtype, "striped_to_blocked", (16, 8), 5, rng)


@pytest.mark.parametrize("block_dim", SHAPES)
@pytest.mark.parametrize("items", c.ITEMS_PER_THREAD)
@pytest.mark.parametrize("algorithm", ["sort", "atomic", "lanes", None])
def test_histogram(algorithm, items, block_dim, rng):
    c.run_histogram("uint8", "uint32", 256, block_dim, items, algorithm, rng)


@pytest.mark.parametrize(
    "dtype,counter,bins",
    [("uint16", "int32", 1000), ("int32", "uint64", 16), ("uint8", "int32", 7), ("int16", "uint32", 352)],
)
@pytest.mark.parametrize("accumulate", [False, True])
def test_histogram_types(dtype, counter, bins, accumulate, rng):
    for algorithm in ("atomic", "sort") + (("lanes",) if bins <= 352 else ()):
        c.run_histogram(dtype, counter, bins, 128, 4, algorithm, rng, accumulate=accumulate)


def test_histogram_lanes_counts_skewed_data_and_many_tiles(rng):
    """ "lanes" on a block that counts many tiles of items nearly all in one bin (every lane's atomics to one
    address), accumulated: the counts of all of them, against NumPy's."""
    x = np.where(rng.random(64 * 512 * 8) < 0.97, 200, rng.integers(0, 256, 64 * 512 * 8)).astype(np.uint8)
    c.run_histogram_tiles(x, 256, 512, 8, "lanes")


@pytest.mark.parametrize("block_dim", SHAPES)
@pytest.mark.parametrize("items", c.ITEMS_PER_THREAD)
def test_radix_sort_shapes(items, block_dim, rng):
    c.run_radix_sort("int32", block_dim, items, rng)


@pytest.mark.parametrize("descending,striped", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", c.SORT_DTYPES)
def test_radix_sort(dtype, descending, striped, rng):
    c.run_radix_sort(dtype, 128, 4, rng, descending=descending, striped=striped)


@pytest.mark.parametrize("dtype,bits", [("uint32", (4, 20)), ("int64", (0, 8)), ("float32", (16, 32))])
def test_radix_sort_bit_range(dtype, bits, rng):
    c.run_radix_sort(dtype, 128, 4, rng, bits=bits)
    c.run_radix_sort(dtype, 128, 4, rng, bits=bits, descending=True)


def test_radix_sort_keys_only(rng):
    c.run_radix_sort("float64", (8, 4, 4), 7, rng, with_values=False)


def test_collectives_back_to_back(rng):
    """Load, exchange, sort, scan and store in one kernel, each call reusing shared memory after the other."""
    import numba_tiles as tiles

    @cuda.jit
    def pipeline(x, out, totals):
        items = cuda.local.array(4, np.int32)
        start = cuda.blockIdx.x * 512
        tiles.block_load(x[start:], items, block_dim=128, items_per_thread=4, algorithm="warp_transpose")
        tiles.block_radix_sort(items, block_dim=128, items_per_thread=4)
        total = tiles.block_scan(items, block_dim=128, items_per_thread=4, aggregate=True)
        tiles.block_exchange(items, "blocked_to_striped", block_dim=128, items_per_thread=4)
        tiles.block_store(out[start:], items, block_dim=128, items_per_thread=4, algorithm="striped")
        if cuda.threadIdx.x == 0:
            totals[cuda.blockIdx.x] = total

    x = rng.integers(-1000, 1000, 512 * 64).astype(np.int32)
    out = np.zeros_like(x)
    totals = np.zeros(64, np.int32)
    pipeline[64, 128](x, out, totals)
    want = np.cumsum(np.sort(x.reshape(64, 512), axis=1), axis=1)
    np.testing.assert_array_equal(out.reshape(64, 512), want)
    np.testing.assert_array_equal(totals, want[:, -1])


@pytest.mark.skipif(MLIR, reason="its kernel converts by numba-cuda's own bfloat16 functions (numba.cuda.bf16)")
def test_bfloat16_scalars(rng):
    """bfloat16 values (numba-cuda has no bfloat16 arrays): block/warp reduce and scan; small integers
    keep every partial sum exact in bfloat16's 8-bit mantissa."""
    from numba.cuda.bf16 import bfloat16_to_float32, float32_to_bfloat16

    import numba_tiles as tiles

    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        v = float32_to_bfloat16(x[i])
        out[0, i] = bfloat16_to_float32(tiles.block_sum(v, block_dim=64, broadcast=True))
        out[1, i] = bfloat16_to_float32(tiles.block_reduce(v, "max", block_dim=64, broadcast=True))
        out[2, i] = bfloat16_to_float32(tiles.block_scan(v, block_dim=64, exclusive=True))
        out[3, i] = bfloat16_to_float32(tiles.warp_scan(v, warp_size=16))
        s = tiles.warp_reduce(v, "min", warp_size=8)
        out[4, i] = bfloat16_to_float32(s) if i % 8 == 0 else 0

    x = rng.integers(-2, 3, 64 * 4).astype(np.float32)
    out = np.zeros((5, x.size), np.float32)
    kernel[4, 64](x, out)
    blocks = x.reshape(4, 64)
    np.testing.assert_array_equal(out[0], np.repeat(blocks.sum(axis=1), 64))
    np.testing.assert_array_equal(out[1], np.repeat(blocks.max(axis=1), 64))
    np.testing.assert_array_equal(out[2], (np.cumsum(blocks, axis=1) - blocks).ravel())
    np.testing.assert_array_equal(out[3], np.cumsum(x.reshape(-1, 16), axis=1).ravel())
    np.testing.assert_array_equal(out[4][::8], x.reshape(-1, 8).min(axis=1))


@pytest.mark.parametrize("block_dim", SHAPES)
@pytest.mark.parametrize("items", [1, 4, 7, 16])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16", "float32", "float64"])
def test_shared_temp(dtype, items, block_dim, rng):
    c.run_shared_temp(dtype, block_dim, items, rng)


def test_instantiations_of_one_storage_type_share_its_buffer(rng):
    """Three different reductions (one storage type): one static buffer, used in turn, right results."""
    import numba_tiles as tiles

    @cuda.jit
    def kernel(x, out):
        t = cuda.threadIdx.x
        items = cuda.local.array(4, np.float64)
        for j in range(4):
            items[j] = x[(cuda.blockIdx.x * 128 + t) * 4 + j]
        s = tiles.block_sum(items, block_dim=128, items_per_thread=4)
        m = tiles.block_reduce(items, "max", block_dim=128, items_per_thread=4)
        low = tiles.block_reduce(x[cuda.grid(1)], "min", block_dim=128, num_valid=100)
        if t == 0:
            out[cuda.blockIdx.x, 0] = s
            out[cuda.blockIdx.x, 1] = m
            out[cuda.blockIdx.x, 2] = low

    x = rng.integers(-1000, 1000, 8 * 512).astype(np.float64)
    out = np.zeros((8, 3))
    kernel[8, 128](x, out)
    tiles_of = x.reshape(8, 512)
    np.testing.assert_array_equal(out[:, 0], tiles_of.sum(axis=1))
    np.testing.assert_array_equal(out[:, 1], tiles_of.max(axis=1))
    np.testing.assert_array_equal(out[:, 2], x[:1024].reshape(8, 128)[:, :100].min(axis=1))
    usage = tiles.shared_memory(kernel, "void(float64[::1], float64[:, ::1])")
    assert len(usage["buffers"]) == 1 and usage["total"] == sum(usage["buffers"].values()), usage


SMALL_TEMP_CHILD = r"""
import numpy as np
from numba import cuda, float32, uint8
import numba_tiles as tiles

NEED = tiles.temp_bytes(tiles.block_scan, float32, block_dim=128)

def scan_with_temp(size):
    @cuda.jit
    def kernel(x):
        temp = cuda.shared.array(size, uint8)
        x[cuda.threadIdx.x] = tiles.block_scan(x[cuda.threadIdx.x], block_dim=128, temp=temp)
    return kernel

x = np.ones(128, np.float32)
scan_with_temp(NEED)[1, 128](x)        # the size temp_bytes gives: fine
assert (x == np.arange(1, 129)).all(), x
print("NEED", NEED)
scan_with_temp(NEED - 1)[1, 128](x)    # a byte less: stops with a message
cuda.synchronize()
"""


def test_too_small_temp_stops_with_a_message():
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", SMALL_TEMP_CHILD], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "CUDA_ERROR_ASSERT" in run.stderr, run.stdout + run.stderr[-3000:]
    need = int(run.stdout.split("NEED ")[1].split()[0])
    assert (
        run.stdout.count(
            f"tiles.block_scan: temp holds {need - 1} bytes (stride 1 items); this call needs "
            f"{need} contiguous bytes (tiles.temp_bytes gives it)"
        )
        == 1
    ), run.stdout


DEBUG_CHILD = r"""
import numpy as np
from numba import cuda
import numba_tiles as tiles

@cuda.jit
def kernel(x, out):
    s = tiles.block_sum(x[cuda.grid(1)], block_dim=128)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = s

x = np.ones(256, np.float32)
out = np.zeros(4, np.float32)
kernel[2, 128](x, out)                 # the shape it was compiled for: fine
assert (out[:2] == 128).all(), out
kernel[4, 64](x, out)                  # a different launch shape: traps
cuda.synchronize()
"""


def test_debug_mode_traps_on_a_launch_shape_mismatch():
    """NUMBA_TILES_DEBUG=1: a launch with blocks other than block_dim stops with a message (in a
    subprocess: a trap ends the CUDA context)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_TILES_DEBUG": "1"}
    run = subprocess.run([sys.executable, "-c", DEBUG_CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "CUDA_ERROR_ASSERT" in run.stderr, run.stdout + run.stderr[-3000:]
    assert "tiles.block_reduce: compiled for block_dim=(128, 1, 1) but launched with blocks of (64, 1, 1)" in run.stdout


DIVERGENT_CHILD = r"""
import sys
import numpy as np
from numba import cuda
from tests.support import divergent as d

x = np.random.default_rng().standard_normal(200).astype(np.float32)
out, lanes = np.zeros(2, np.float32), np.zeros(32, np.float32)
d.whole_block_and_warps[2, 128](x, out, lanes)   # every thread calls: fine under the check too
np.testing.assert_allclose(out, [x[:128].sum(), x[128:].sum()], rtol=1e-5)
kernel = {"branch": d.half_of_the_block, "early": d.early_return, "lanes": d.partial_warp}[sys.argv[1]]
kernel[2, 128](x, np.zeros(256, np.float32))
cuda.synchronize()
"""


@pytest.mark.parametrize(
    "case, message",
    [
        ("branch", "tiles.block_reduce: called by 64 of the 128 threads of block ("),
        ("early", "tiles.block_reduce: called by 72 of the 128 threads of block (1, 0, 0)"),
        ("lanes", "tiles.warp_reduce: called by 12 of the 16 lanes of a logical warp (warp_size=16)"),
    ],
)
def test_debug_mode_traps_on_a_collective_that_not_every_thread_calls(case, message):
    """NUMBA_TILES_DEBUG=1: a block collective called by part of the block (a branch, an early return) and a warp
    collective by part of its logical warp stop the kernel with a message, where the whole block's call passes."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_TILES_DEBUG": "1"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run(
        [sys.executable, "-c", DIVERGENT_CHILD, case], env=env, capture_output=True, text=True, timeout=300, cwd=root
    )
    assert run.returncode != 0 and "CUDA_ERROR_ASSERT" in run.stderr, run.stdout + run.stderr[-3000:]
    assert message in run.stdout, run.stdout
    assert run.stdout.count("tiles.") == 1, run.stdout  # one message, however many threads fail


HISTOGRAM_CHILD = r"""
import numpy as np
from tests.support import collectives as c

c.run_histogram("uint8", "uint32", 256, 128, 4, "sort", np.random.default_rng())
print("counted")
"""


def test_debug_mode_histogram_of_uint8_items_over_256_bins():
    """NUMBA_TILES_DEBUG=1's bin check compares as a wide integer: uint8 items 0..255 into 256 bins pass
    (compared in uint8, 256 was 0, and every item failed)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_TILES_DEBUG": "1"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run(
        [sys.executable, "-c", HISTOGRAM_CHILD], env=env, capture_output=True, text=True, timeout=300, cwd=root
    )
    assert run.returncode == 0 and "counted" in run.stdout, run.stdout + run.stderr[-3000:]


STRIDED_CHILD = r"""
import numpy as np
from numba import cuda, float32
import numba_tiles as tiles

@cuda.jit
def kernel(x, out):
    items = cuda.local.array(2, float32)
    tiles.block_load(x[::2], items, block_dim=32, items_per_thread=2)
    out[cuda.threadIdx.x] = items[0]

kernel[1, 32](np.ones(256, np.float32), np.zeros(32, np.float32))
"""


def test_strided_source_stops_with_a_message():
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", STRIDED_CHILD], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "CUDA_ERROR_ASSERT" in run.stderr, run.stdout + run.stderr[-3000:]
    assert run.stdout.count("tiles.block_load: the array is strided (2 items apart); pass a contiguous slice") == 1


@pytest.mark.parametrize("block_dim", SHAPES)
@pytest.mark.parametrize("items", [1, 4, 16])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint16", "float32", "float64"])
def test_user_ops(dtype, items, block_dim, rng):
    c.run_user_ops(dtype, block_dim, items, rng)


@pytest.mark.parametrize("block_dim", SHAPES)
@pytest.mark.parametrize("items", c.ITEMS_PER_THREAD)
@pytest.mark.parametrize("compare", ["<", ">", "magnitude"])
def test_merge_sort(compare, items, block_dim, rng):
    c.run_merge_sort("float32", compare, block_dim, items, rng)


# (a Python comparison takes integers, float32 and float64: Numba's C ABI for half differs)
@pytest.mark.parametrize(
    "dtype,compare",
    [(d, cmp) for d in c.SORT_DTYPES for cmp in ("<", "magnitude") if (d, cmp) != ("float16", "magnitude")],
)
def test_merge_sort_dtypes(dtype, compare, rng):
    c.run_merge_sort(dtype, compare, 128, 4, rng, with_values=dtype != "uint8")


@pytest.mark.parametrize("which", COLLECTIVES)
def test_shared_memory_report_is_what_the_driver_says(which):
    import numba_tiles as tiles

    kernel, own = one_collective(which)
    block = {"scan": (8, 8, 4), "merge_sort": (16, 16)}.get(which, 256)
    kernel[4, block](np.zeros(4096, np.float32), np.zeros(1024, np.float32))
    arch = "sm_%d%d" % cuda.get_current_device().compute_capability
    usage = tiles.shared_memory(kernel, "void(float32[::1], float32[::1])", arch=arch)
    (driver,) = kernel.get_shared_mem_per_block().values()  # {signature: bytes} of the one overload
    assert usage["total"] == driver == sum(usage["buffers"].values()) + own


# The neighbor collectives: the usual shapes and one that is not whole warps.
NEIGHBOR_SHAPES = SHAPES + [pytest.param((7, 3), id="(7, 3)")]
DIFFERENCE_CASES = [
    (right, neighbor, num_valid)
    for right in (False, True)
    for neighbor in (False, True)
    for num_valid in (False, True)
    if not (right and neighbor and num_valid)
]


@pytest.mark.parametrize("block_dim", NEIGHBOR_SHAPES)
@pytest.mark.parametrize("items", [1, 3, 4, 16])
@pytest.mark.parametrize("right,neighbor,num_valid", DIFFERENCE_CASES)
def test_adjacent_difference(right, neighbor, num_valid, items, block_dim, rng):
    nb.run_adjacent_difference("int32", "-", block_dim, items, rng, right=right, neighbor=neighbor, num_valid=num_valid)


# max: not on complex; absmax (a Python op): integers, float32 and float64
DIFFERENCE_OPS = [
    (d, op)
    for d in c.ARRAY_DTYPES
    for op in ("-", "+", "max", "absmax")
    if not (op == "max" and np.dtype(d).kind == "c")
    and not (op == "absmax" and d not in ("int32", "int64", "float32", "float64"))
]


@pytest.mark.parametrize("dtype,op", DIFFERENCE_OPS)
def test_adjacent_difference_dtypes_and_ops(dtype, op, rng):
    nb.run_adjacent_difference(dtype, op, (16, 8), 3, rng, neighbor=True)
    nb.run_adjacent_difference(dtype, op, 96, 2, rng, right=True, num_valid=True)


@pytest.mark.parametrize("block_dim", NEIGHBOR_SHAPES)
@pytest.mark.parametrize("items", [1, 3, 4, 16])
@pytest.mark.parametrize("flags", [("heads",), ("tails",), ("heads", "tails")])
@pytest.mark.parametrize("neighbors", [False, True])
def test_discontinuity(neighbors, flags, items, block_dim, rng):
    nb.run_discontinuity("int32", block_dim, items, rng, flags=flags, neighbors=neighbors)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "float32", "float64", "complex64"])
@pytest.mark.parametrize("flag_dtype", ["uint8", "int32", "uint64"])
def test_discontinuity_dtypes(dtype, flag_dtype, rng):
    nb.run_discontinuity(dtype, 128, 4, rng, neighbors=True, flag_dtype=flag_dtype)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
def test_discontinuity_user_compare(dtype, rng):
    nb.run_discontinuity(dtype, (8, 4, 4), 3, rng, neighbors=True, compare="parity")


@pytest.mark.parametrize("block_dim", NEIGHBOR_SHAPES)
@pytest.mark.parametrize("kind,items", [("offset", 1), ("rotate", 1), ("up", 1), ("up", 4), ("down", 3), ("down", 16)])
def test_shuffle(kind, items, block_dim, rng):
    nb.run_shuffle("float32", kind, block_dim, items, rng)


@pytest.mark.parametrize("dtype", c.ARRAY_DTYPES)
@pytest.mark.parametrize("kind", ["offset", "rotate", "up", "down"])
def test_shuffle_dtypes(dtype, kind, rng):
    nb.run_shuffle(dtype, kind, 96, 2, rng, distances=(-5, 95, -(2**31)))


def test_neighbors_after_a_failed_compile_and_back_to_back(rng):
    """A rejected call first (typing error), then the three collectives in one kernel, sharing a temp."""
    from numba import int32, uint8

    import numba_tiles as tiles

    @cuda.jit
    def bad(x):
        items = cuda.local.array(4, np.int32)
        tiles.block_shuffle(items, "offset", block_dim=64, items_per_thread=4)

    with pytest.raises(Exception, match="kind 'offset' shuffles one value per thread"):
        bad[1, 64](np.zeros(256, np.int32))
    TEMP = max(
        tiles.temp_bytes(f, *a, block_dim=64, items_per_thread=4, **k)
        for f, a, k in (
            (tiles.block_adjacent_difference, (int32[::1],), {}),
            (tiles.block_discontinuity, (int32[::1],), {"heads": uint8[::1]}),
            (tiles.block_shuffle, (int32[::1], "up"), {}),
        )
    )

    @cuda.jit
    def kernel(x, diff, heads, edge):
        temp = cuda.shared.array(TEMP, np.uint8)
        t = cuda.threadIdx.x
        items = cuda.local.array(4, np.int32)
        flags = cuda.local.array(4, np.uint8)
        for j in range(4):
            items[j] = x[t * 4 + j]
        tiles.block_discontinuity(items, block_dim=64, items_per_thread=4, heads=flags, temp=temp)
        tiles.block_adjacent_difference(items, block_dim=64, items_per_thread=4, temp=temp)
        edge[t] = tiles.block_shuffle(items, "down", block_dim=64, items_per_thread=4, temp=temp)
        for j in range(4):
            diff[t * 4 + j] = items[j]
            heads[t * 4 + j] = flags[j]

    x = rng.integers(0, 3, 256).astype(np.int32)
    diff, heads, edge = np.zeros(256, np.int32), np.zeros(256, np.uint8), np.zeros(64, np.int32)
    kernel[1, 64](x, diff, heads, edge)
    d = nb.adjacent_difference(x, np.subtract, False)
    np.testing.assert_array_equal(heads, nb.discontinuity(x, np.not_equal)[0].astype(np.uint8))
    np.testing.assert_array_equal(diff, np.append(d[1:], d[-1]))
    np.testing.assert_array_equal(edge, np.repeat(d[0], 64))
