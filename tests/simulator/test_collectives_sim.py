"""Load/store, scans, exchange, histogram and radix sort on Numba's CUDA simulator, against the
same NumPy references as the GPU tests (small blocks: the simulator runs a thread per Python thread)."""

import numpy as np
import pytest
from numba import cuda, uint8

import numba_tiles as tiles

from ..support import collectives as c
from ..support import divergent as d
from ..support import neighbors as nb


@pytest.mark.parametrize("algorithm", c.MOVE_ALGORITHMS)
@pytest.mark.parametrize("num_valid,oob_default", [(False, False), (True, False), (False, True), (True, True)])
def test_load_store(algorithm, num_valid, oob_default, rng):
    c.run_load_store("float32", 32, 3, algorithm, rng, num_valid=num_valid, oob_default=oob_default)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float16", "complex64"])
def test_load_store_dtypes(dtype, rng):
    c.run_load_store(dtype, (8, 4), 2, "transpose", rng)


@pytest.mark.parametrize("exclusive,initial", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize(
    "dtype,op", [("int32", "+"), ("float64", "+"), ("uint8", "max"), ("int16", "^"), ("complex128", "*")]
)
def test_block_scan(dtype, op, exclusive, initial, rng):
    c.run_block_scan(dtype, op, (8, 4), 2, rng, exclusive=exclusive, initial=initial)


@pytest.mark.parametrize("warp_size", [1, 4, 32])
@pytest.mark.parametrize("exclusive,initial", [(False, False), (True, False), (False, True)])
def test_warp_scan(warp_size, exclusive, initial, rng):
    c.run_warp_scan("int64", "+", warp_size, rng, exclusive=exclusive, initial=initial, blocks=1, block_dim=64)


@pytest.mark.parametrize("num_valid", [0, 3])
def test_warp_scan_num_valid(num_valid, rng):
    c.run_warp_scan("int32", "max", 8, rng, exclusive=True, num_valid=num_valid, blocks=1, block_dim=32)


@pytest.mark.parametrize("arrangement", list(c._EXCHANGES))
def test_exchange(arrangement, rng):
    c.run_exchange("int32", arrangement, 64, 3, rng)


@pytest.mark.parametrize("algorithm", ["sort", "atomic", "lanes", None])
@pytest.mark.parametrize("accumulate", [False, True])
def test_histogram(algorithm, accumulate, rng):
    c.run_histogram("uint8", "uint32", 16, 32, 4, algorithm, rng, accumulate=accumulate)


@pytest.mark.parametrize("bad", [-1, 16])
def test_histogram_item_outside_the_bins_is_an_error(bad, rng):
    """The twin of NUMBA_TILES_DEBUG's check: a negative item or one past the bins is a TilesError."""
    x = rng.integers(0, 16, 3 * 32 * 2)
    x[37] = bad
    with pytest.raises(tiles.TilesError, match=r"an item is outside \[0, 16\)"):
        c.run_histogram("int32", "int32", 16, 32, 2, "atomic", rng, x=x)


@pytest.mark.parametrize("dtype", ["int8", "uint32", "float32", "float64"])
@pytest.mark.parametrize("descending,striped", [(False, False), (True, False), (False, True)])
def test_radix_sort(dtype, descending, striped, rng):
    c.run_radix_sort(dtype, 32, 3, rng, descending=descending, striped=striped)


def test_radix_sort_bit_range(rng):
    c.run_radix_sort("uint16", 32, 2, rng, bits=(4, 12))


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_user_ops(dtype, rng):
    c.run_user_ops(dtype, 32, 2, rng)


@pytest.mark.parametrize("compare", ["<", ">", "magnitude"])
def test_merge_sort(compare, rng):
    c.run_merge_sort("float32", compare, 32, 3, rng)


@pytest.mark.parametrize("dtype", ["int8", "float64"])
def test_shared_temp(dtype, rng):
    c.run_shared_temp(dtype, 32, 2, rng)


def test_too_small_temp_is_an_error():
    @cuda.jit
    def kernel(x):
        temp = cuda.shared.array(8, uint8)
        x[cuda.threadIdx.x] = tiles.block_scan(x[cuda.threadIdx.x], block_dim=32, temp=temp)

    with pytest.raises(Exception, match=r"tiles.block_scan: temp holds 8 bytes; this call needs \d+ contiguous bytes"):
        kernel[1, 32](np.zeros(32, np.float32))


@pytest.mark.parametrize(
    "right,neighbor,num_valid", [(False, False, False), (False, True, True), (True, True, False), (True, False, True)]
)
def test_adjacent_difference(right, neighbor, num_valid, rng):
    nb.run_adjacent_difference("int32", "-", (8, 4), 3, rng, right=right, neighbor=neighbor, num_valid=num_valid)


def test_adjacent_difference_user_op(rng):
    nb.run_adjacent_difference("float64", "absmax", 32, 2, rng, neighbor=True)


@pytest.mark.parametrize("flags", [("heads",), ("tails",), ("heads", "tails")])
@pytest.mark.parametrize("neighbors", [False, True])
def test_discontinuity(flags, neighbors, rng):
    nb.run_discontinuity("int16", (8, 4), 3, rng, flags=flags, neighbors=neighbors)


def test_discontinuity_user_compare(rng):
    nb.run_discontinuity("int32", 32, 2, rng, neighbors=True, compare="parity")


@pytest.mark.parametrize("kind,items", [("offset", 1), ("rotate", 1), ("up", 3), ("down", 2)])
def test_shuffle(kind, items, rng):
    nb.run_shuffle("float32", kind, (8, 4), items, rng, distances=(1, -3, 40))


# ---- a collective must be made by every thread of the block, or every lane of the logical warp ----


def _line_of(kernel, text):
    """The file:line of the first line of ``kernel``'s source that holds ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(kernel.py_func)
    return f"{inspect.getsourcefile(kernel.py_func)}:{first + next(i for i, t in enumerate(lines) if text in t)}"


@pytest.mark.parametrize(
    "kernel, arrived, block", [(d.half_of_the_block, 64, 0), (d.early_return, 72, 1)], ids=["branch", "early-return"]
)
def test_a_block_collective_not_every_thread_calls_is_an_error(kernel, arrived, block, rng):
    x = rng.standard_normal(200).astype(np.float32)
    with pytest.raises(tiles.TilesError) as info:
        kernel[2, 128](x, np.zeros(256, np.float32))
    message = str(info.value)
    assert (
        f"tiles.block_sum: called at {_line_of(kernel, 'tiles.block_sum(')} by {arrived} of the 128 threads of "
        f"block ({block}, 0, 0); every thread must make the call" in message
    ), message
    assert "Fix: call it outside the branch" in message


def test_two_collectives_in_two_branches_are_an_error(rng):
    """Threads at either call say how many came to theirs, and where the others went."""
    x = rng.standard_normal(128).astype(np.float32)
    with pytest.raises(tiles.TilesError) as info:
        d.other_collective[1, 128](x, np.zeros(128, np.float32))
    sum_at, max_at = (
        _line_of(d.other_collective, "tiles.block_sum("),
        _line_of(d.other_collective, "tiles.block_reduce("),
    )
    message = str(info.value)
    assert (
        f"tiles.block_sum: called at {sum_at} by 32 of the 128 threads of block (0, 0, 0) (96 reached another "
        f"call instead, at {max_at})"
        in message
        or f"tiles.block_reduce: called at {max_at} by 96 of the 128 threads of block (0, 0, 0) (32 reached "
        f"another call instead, at {sum_at})"
        in message
    ), message


@pytest.mark.parametrize(
    "kernel, arrived, lanes",
    [(d.partial_warp, 12, 16), (d.warp_call_against_a_barrier, 20, 32)],
    ids=["return", "barrier"],
)
def test_a_warp_collective_not_every_lane_calls_is_an_error(kernel, arrived, lanes, rng):
    """The other lanes returned, or wait at a block barrier that the calling lanes have not reached."""
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(tiles.TilesError) as info:
        kernel[1, 64](x, np.zeros(64, np.float32))
    assert (
        f"tiles.warp_sum: called at {_line_of(kernel, 'tiles.warp_sum(')} by {arrived} of the {lanes} threads of "
        "logical warp" in str(info.value)
    ), str(info.value)


def test_lanes_still_being_released_from_a_barrier_are_waited_for(rng, monkeypatch):
    """The simulator releases a barrier's threads one at a time: a lane released first reaches the warp call while
    its warp's other lanes are still flagged at the barrier, which it has passed; they come. (Each release is slowed
    here, so that the first lanes always get there first.)"""
    import threading
    import time

    from numba.cuda.simulator import kernel as simulator_kernel

    class SlowRelease(threading.Event):
        def set(self):
            super().set()
            time.sleep(0.005)

    made = simulator_kernel.BlockThread.__init__

    def init(self, *args, **kwargs):
        made(self, *args, **kwargs)
        self.syncthreads_event = SlowRelease()

    monkeypatch.setattr(simulator_kernel.BlockThread, "__init__", init)
    x = rng.standard_normal(128).astype(np.float32)
    out, lanes = np.zeros(1, np.float32), np.zeros(16, np.float32)
    d.whole_block_and_warps[1, 128](x, out, lanes)
    np.testing.assert_allclose(out, [x.sum()], rtol=1e-5)
    np.testing.assert_allclose(lanes, x.reshape(-1, 8).sum(axis=1), rtol=1e-5)


def test_collectives_every_thread_makes_pass_the_check(rng):
    x = rng.standard_normal(200).astype(np.float32)
    out, lanes = np.zeros(2, np.float32), np.zeros(32, np.float32)
    d.whole_block_and_warps[2, 128](x, out, lanes)
    padded = np.concatenate([x, np.zeros(56, np.float32)])
    np.testing.assert_allclose(out, padded.reshape(2, -1).sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lanes, padded.reshape(-1, 8).sum(axis=1), rtol=1e-5, atol=1e-5)
