"""The simulator touchpoints of numba_tiles._numba (see tests/cpu/test_numba_contract.py)."""

import numpy as np
from numba import cuda

from numba_tiles import _numba


def test_simulated_thread_block_shape_and_scratch():
    seen = {}

    @cuda.jit
    def kernel(out):
        thread = _numba.simulated_thread()
        scratch = _numba.block_scratch(thread)
        scratch.setdefault("ids", set()).add(thread.thread_id)
        seen[(cuda.blockIdx.x, thread.thread_id)] = (_numba.simulated_block_dim(thread), scratch)
        out[0] = 1

    kernel[2, (4, 2)](np.zeros(1))
    assert _numba.simulated_thread() is None  # outside a kernel
    assert {dims for dims, _ in seen.values()} == {(4, 2, 1)}
    scratches = {b: {id(s) for (bb, _), (_, s) in seen.items() if bb == b} for b in (0, 1)}
    assert all(len(ids) == 1 for ids in scratches.values()) and scratches[0] != scratches[1]
    assert all(s["ids"] == set(range(8)) for _, s in seen.values())


def test_python_function_of_a_simulated_device_function():
    @cuda.jit(device=True)
    def op(a, b):
        return a

    assert _numba.python_function(op) is op.py_func


def test_compiling_on_the_simulator_is_a_tiles_error():
    """tiles.compile / shared_memory have nothing to compile on the simulator: a TilesError naming the fix."""
    import pytest

    import numba_tiles as tiles

    def kernel(x):
        x[0] = 1.0

    for call in (tiles.compile, tiles.shared_memory):
        with pytest.raises(tiles.TilesError, match="unset NUMBA_ENABLE_CUDASIM to compile"):
            call(kernel, "void(float32[::1])")


def test_the_simulators_stand_in_for_numba_cuda_is_the_cuda_module():
    """In a simulated kernel, its global ``cuda`` is the simulator's stand-in (blockDim etc. are run-time values)."""
    seen = []

    @cuda.jit
    def kernel(out):
        seen.append((_numba.is_cuda_module(cuda), _numba.is_cuda_module(cuda.blockDim), _numba.is_cuda_module(np)))
        out[0] = 1

    kernel[1, 1](np.zeros(1))
    assert seen == [(True, False, False)] and _numba.is_cuda_module(cuda)
