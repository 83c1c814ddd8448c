"""Pure-Python twins of the intrinsics, for Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).

Each twin runs in one simulated thread, exchanges values with the other threads of its block
through the block's state and the simulator's barrier, and returns what that thread gets on
the GPU. Arithmetic is NumPy's in the intrinsic's dtype, so integers wrap as on the GPU.
"""

import threading

import numpy as np

from ._errors import error


def _block_thread(intrinsic, block_dim):
    """The simulated thread calling ``intrinsic``, after checking the launch's block shape."""
    thread = threading.current_thread()
    manager = getattr(thread, "_manager", None)
    if manager is None:
        raise RuntimeError(
            f"tiles.{intrinsic} runs only inside a @cuda.jit kernel: compiled for a GPU, "
            "or on Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
        )
    launched = tuple(manager._block_dim) + (1,) * (3 - len(manager._block_dim))
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


def block_reduce(instance, args):
    bx, by, bz = args["block_dim"]
    thread = _block_thread(instance.intrinsic, (bx, by, bz))
    dtype = np.dtype(str(instance.result))
    values = np.array(_exchange(thread, args["value"]), dtype=dtype)
    num_valid = args["num_valid"]
    count = len(values) if num_valid is None else min(max(int(num_valid), 0), len(values))
    op = args["op"]
    if count == 0:
        result = op.identity(dtype)
    else:
        result = op.ufunc.reduce(values[:count], dtype=dtype)
    # As with CUB, only thread 0 gets the aggregate; the others keep their own value.
    return dtype.type(result) if thread.thread_id == 0 else dtype.type(values[thread.thread_id])

