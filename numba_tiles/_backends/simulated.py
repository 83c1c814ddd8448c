"""numba-cuda's CUDA simulator, as the twins read it: the simulated thread, its block's shape and grid, a dict
per block, and the stand-in for ``numba.cuda`` in a simulated kernel's globals (each pinned by
``tests/simulator/test_numba_contract_sim.py``)."""

from numba import cuda


def simulator_enabled():
    return bool(cuda.config.ENABLE_CUDASIM)


def is_cuda_module(value):
    """Whether ``value`` is ``numba.cuda``, or the stand-in for it that the simulator puts in a running
    kernel's globals (whose ``blockDim``, ``threadIdx``, ... are run-time values)."""
    if value is cuda:
        return True
    if not cuda.config.ENABLE_CUDASIM:
        return False
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    return isinstance(value, FakeCUDAModule)


def simulated_thread():
    """The simulator's thread running now, or None outside a simulated kernel."""
    import threading

    thread = threading.current_thread()
    return thread if hasattr(thread, "syncthreads") and hasattr(thread, "thread_id") else None


def simulated_block_dim(thread):
    """The (x, y, z) block shape the simulated ``thread``'s kernel was launched with."""
    dims = tuple(thread._manager._block_dim)
    return dims + (1,) * (3 - len(dims))


def simulated_grid_dim(thread):
    """The (x, y, z) grid shape the simulated ``thread``'s kernel was launched with."""
    dims = tuple(thread._manager._grid_dim)
    return dims + (1,) * (3 - len(dims))


def simulated_linear_block(thread):
    """(the simulated ``thread``'s block's index in the grid, x fastest, the grid's blocks): common.cuh's
    ``linear_block()`` and ``grid_blocks()``."""
    gx, gy, gz = simulated_grid_dim(thread)
    b = thread.blockIdx
    return b.x + gx * (b.y + gy * b.z), gx * gy * gz


def count_barriers():
    """Make every simulated thread count the block barriers it enters (`barriers_entered`). The simulator's block
    manager releases a barrier's threads one at a time, each flag ``syncthreads_blocked`` cleared just before its
    thread may go on, so a thread already past a barrier can see others still flagged at it: their counts tell a
    barrier it passed (they will come) from one it has not reached (they wait for it)."""
    from numba.cuda.simulator.kernel import BlockThread

    entering = BlockThread.syncthreads
    if getattr(entering, "_numba_tiles_counted", False):
        return

    def syncthreads(self):
        self._numba_tiles_barriers = getattr(self, "_numba_tiles_barriers", 0) + 1
        entering(self)

    syncthreads._numba_tiles_counted = True
    BlockThread.syncthreads = syncthreads


def barriers_entered(thread):
    """How many block barriers the simulated ``thread`` has entered (see `count_barriers`)."""
    return getattr(thread, "_numba_tiles_barriers", 0)


def block_scratch(thread):
    """A dict shared by the simulated threads of ``thread``'s block (and only them)."""
    return thread._manager.__dict__.setdefault("_numba_tiles_scratch", {})
