"""Pure-Python twins of the intrinsics, for Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).

Each twin runs in one simulated thread, exchanges values with the other threads of its block
(through the simulator's block barrier) or of its logical warp (through a barrier of that
warp's own), and returns what that thread gets on the GPU. Arithmetic is NumPy's in the
intrinsic's dtype, so integers wrap as on the GPU.
"""

import threading

import numpy as np

from ._errors import error


def _thread(intrinsic):
    """The simulated thread calling ``intrinsic``."""
    thread = threading.current_thread()
    if getattr(thread, "_manager", None) is None:
        raise RuntimeError(
            f"tiles.{intrinsic} runs only inside a @cuda.jit kernel: compiled for a GPU, "
            "or on Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
        )
    return thread


def _launched(thread):
    dims = tuple(thread._manager._block_dim)
    return dims + (1,) * (3 - len(dims))


def _block_thread(intrinsic, block_dim):
    """The simulated thread calling a block-level ``intrinsic``, after checking the launch's block shape."""
    thread = _thread(intrinsic)
    launched = _launched(thread)
    if launched != block_dim:
        raise error(
            intrinsic,
            f"block_dim={block_dim} but the kernel was launched with blocks of {launched}",
            "pass the launch's block shape as block_dim (on the GPU this mismatch gives wrong results)",
        )
    return thread


def _exchange(thread, value):
    """Every thread's value, in linear thread order (x fastest), as seen after a barrier."""
    slots = thread._manager.__dict__.setdefault("_numba_tiles_slots", {})
    slots[thread.thread_id] = value
    thread.syncthreads()
    values = [slots[i] for i in range(len(slots))]
    thread.syncthreads()  # nobody overwrites a slot before everyone has read them all
    return values


def _warp_exchange(thread, width, value):
    """The values of the calling thread's logical warp (``width`` lanes, linear thread order).

    Only the lanes of one logical warp meet here (as on the GPU, other warps need not call), so
    they wait on a barrier of their own rather than the block's.
    """
    manager = thread._manager
    group, lane = divmod(thread.thread_id, width)
    size = min(width, int(np.prod(_launched(thread))) - group * width)
    meeting = manager.__dict__.setdefault("_numba_tiles_warps", {}).setdefault(
        (width, group), {"barrier": threading.Barrier(size), "slots": {}}
    )
    meeting["slots"][lane] = value
    meeting["barrier"].wait()
    values = [meeting["slots"][i] for i in range(size)]
    meeting["barrier"].wait()
    return values, lane


def _reduce(instance, args, tiles_, position):
    """What the thread at ``position`` gets: the aggregate of all items at 0 (everywhere with
    broadcast); elsewhere, as a stand-in for CUB's unspecified value, the reduction of its own items."""
    dtype = np.dtype(str(instance.result))
    items = np.array([item for tile in tiles_ for item in tile], dtype=dtype)
    num_valid = args["num_valid"]
    count = len(items) if num_valid is None else min(max(int(num_valid), 0), len(items))
    op = args["op"]
    if position == 0 or args.get("broadcast"):
        return dtype.type(op.ufunc.reduce(items[:count], dtype=dtype) if count else op.identity(dtype))
    return dtype.type(op.ufunc.reduce(np.array(tiles_[position], dtype=dtype), dtype=dtype))


def _items(instance, args):
    """The calling thread's items: its scalar, or the first items_per_thread of its array."""
    value, count = args["value"], args.get("items_per_thread") or 1
    if not isinstance(value, np.ndarray):
        return [value]
    if len(value) < count:
        raise error(instance.intrinsic, f"the array has {len(value)} items but items_per_thread={count}",
                    "make the thread-local array at least items_per_thread long")
    return list(value[:count])


def block_reduce(instance, args):
    thread = _block_thread(instance.intrinsic, args["block_dim"])
    return _reduce(instance, args, _exchange(thread, _items(instance, args)), thread.thread_id)


def warp_reduce(instance, args):
    thread = _thread(instance.intrinsic)
    values, lane = _warp_exchange(thread, args["warp_size"], [args["value"]])
    return _reduce(instance, args, values, lane)
