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


def test_compiling_on_the_simulator_is_a_tiles_error_of_the_function_called():
    """tiles.compile, shared_memory and precompile have nothing to compile on the simulator: each raises a
    TilesError that names itself (not the tiles.compile it calls) and the fix; temp_bytes asks NVRTC, which
    works there, and allow_dynamic_shared_memory has no limit to lift."""
    import pytest
    from numba import float32

    import numba_tiles as tiles

    def kernel(x):
        x[0] = 1.0

    sig = "void(float32[::1])"
    calls = {"compile": lambda: tiles.compile(kernel, sig),
             "shared_memory": lambda: tiles.shared_memory(kernel, sig),
             "precompile": lambda: tiles.precompile(kernel, signatures={kernel: [sig]}, progress=False)}
    for name, call in calls.items():
        with pytest.raises(tiles.TilesError) as raised:
            call()
        message = str(raised.value)
        assert message.startswith(f"tiles.{name}: Numba's simulator (NUMBA_ENABLE_CUDASIM=1) runs kernels as "
                                  "Python and compiles nothing"), message
        assert ". Fix: unset NUMBA_ENABLE_CUDASIM to " in message and message.endswith(": no GPU is needed."), message
    assert tiles.temp_bytes(tiles.block_scan, float32, block_dim=128) > 0
    assert tiles.allow_dynamic_shared_memory(cuda.jit(kernel), 96 * 1024, np.zeros(1, np.float32)) == 96 * 1024


def test_the_simulators_stand_in_for_numba_cuda_is_the_cuda_module():
    """In a simulated kernel, its global ``cuda`` is the simulator's stand-in (blockDim etc. are run-time values)."""
    seen = []

    @cuda.jit
    def kernel(out):
        seen.append((_numba.is_cuda_module(cuda), _numba.is_cuda_module(cuda.blockDim), _numba.is_cuda_module(np)))
        out[0] = 1

    kernel[1, 1](np.zeros(1))
    assert seen == [(True, False, False)] and _numba.is_cuda_module(cuda)
