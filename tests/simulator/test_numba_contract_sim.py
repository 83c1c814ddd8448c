"""The simulator touchpoints of numba_tiles._backends (simulated, bytecode; see tests/cpu/test_numba_contract.py)."""

import numpy as np
from numba import cuda

from numba_tiles._backends import bytecode, numba_cuda, simulated


def test_simulated_thread_block_shape_and_scratch():
    seen = {}

    @cuda.jit
    def kernel(out):
        thread = simulated.simulated_thread()
        scratch = simulated.block_scratch(thread)
        scratch.setdefault("ids", set()).add(thread.thread_id)
        seen[(cuda.blockIdx.x, thread.thread_id)] = (simulated.simulated_block_dim(thread), scratch)
        out[0] = 1

    kernel[2, (4, 2)](np.zeros(1))
    assert simulated.simulated_thread() is None  # outside a kernel
    assert {dims for dims, _ in seen.values()} == {(4, 2, 1)}
    scratches = {b: {id(s) for (bb, _), (_, s) in seen.items() if bb == b} for b in (0, 1)}
    assert all(len(ids) == 1 for ids in scratches.values()) and scratches[0] != scratches[1]
    assert all(s["ids"] == set(range(8)) for _, s in seen.values())


def test_python_function_of_a_simulated_device_function():
    @cuda.jit(device=True)
    def op(a, b):
        return a

    assert numba_cuda.python_function(op) is op.py_func


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
    calls = {
        "compile": lambda: tiles.compile(kernel, sig),
        "shared_memory": lambda: tiles.shared_memory(kernel, sig),
        "precompile": lambda: tiles.precompile(kernel, signatures={kernel: [sig]}, progress=False),
    }
    for name, call in calls.items():
        with pytest.raises(tiles.TilesError) as raised:
            call()
        message = str(raised.value)
        assert message.startswith(
            f"tiles.{name}: Numba's simulator (NUMBA_ENABLE_CUDASIM=1) runs kernels as Python and compiles nothing"
        ), message
        assert ". Fix: unset NUMBA_ENABLE_CUDASIM to " in message and message.endswith(": no GPU is needed."), message
    assert tiles.temp_bytes(tiles.block_scan, float32, block_dim=128) > 0
    assert tiles.allow_dynamic_shared_memory(cuda.jit(kernel), 96 * 1024, np.zeros(1, np.float32)) == 96 * 1024


def test_the_simulators_stand_in_for_numba_cuda_is_the_cuda_module():
    """In a simulated kernel, its global ``cuda`` is the simulator's stand-in (blockDim etc. are run-time values)."""
    seen = []

    @cuda.jit
    def kernel(out):
        seen.append(
            (simulated.is_cuda_module(cuda), simulated.is_cuda_module(cuda.blockDim), simulated.is_cuda_module(np))
        )
        out[0] = 1

    kernel[1, 1](np.zeros(1))
    assert seen == [(True, False, False)] and simulated.is_cuda_module(cuda)


FLAG = True


def test_bytecode_ir_numbers_calls_as_the_running_frame_does_and_defines_each_variable():
    """numba-cuda's front end over a function's code: each call keyed by its instruction's offset, which the
    calling frame's ``f_lasti`` points into (past it, into its inline caches, on Python 3.11 and 3.12), and each
    variable's definitions in plain terms, by block."""
    import bisect
    import dis
    import sys

    lasti = []

    def probe(*args, **kwargs):
        lasti.append(sys._getframe(1).f_lasti)

    WIDTH = 8

    def function(x, n):
        a, b = 64, n
        probe(x, a, WIDTH, (a, 2), n.real, key=-1)
        c = 1
        if n > 0:
            c = 2
        probe(b, c, x[0], c if FLAG else 3)
        probe(*x)

    function(np.ones(2), 3)
    ir = bytecode.bytecode_ir(function.__code__, function.__globals__)
    starts = [instruction.offset for instruction in dis.get_instructions(function)]
    first, second, spread = [ir.calls[starts[bisect.bisect_right(starts, at) - 1]] for at in lasti]
    assert spread is None  # (*args: no arguments to read one by one)

    def sites(var):
        return [site for _, site in ir.definitions[var]]

    def resolve(var):  # (through plain copies)
        found = sites(var)
        return resolve(found[0][1]) if len(found) == 1 and found[0][0] == "var" else found

    (x, a, width, pair, real), keywords = first
    assert resolve(x) == [("arg", "x")] and resolve(a) == [("const", 64)] and resolve(width) == [("freevar", "WIDTH")]
    [(kind, items)] = resolve(pair)
    assert kind == "tuple" and [resolve(v) for v in items] == [[("const", 64)], [("const", 2)]]
    [(kind, owner, attr)] = resolve(real)
    assert kind == "getattr" and attr == "real" and resolve(owner) == [("arg", "n")]
    [(key, minus_one)] = keywords
    assert key == "key" and resolve(minus_one) == [("const", -1)]  # (CPython folds -1)

    (b, c, item, chosen), _ = second
    assert resolve(b) == [("arg", "n")] and sorted(resolve(c)) == [("const", 1), ("const", 2)]
    [(kind, array, index)] = resolve(item)
    assert kind in ("getitem", "static_getitem") and resolve(array) == [("arg", "x")]
    # c if FLAG else 3: a definition in each branch of a test of FLAG's truth
    branches = {block: resolve(site[1]) if site[0] == "var" else [site] for block, site in ir.definitions[chosen]}
    assert sorted(map(sorted, branches.values())) == [[("const", 1), ("const", 2)], [("const", 3)]]
    [test] = [t for t, successors in ir.exits.values() if t is not None and set(successors) == set(branches)]
    [(truth, flag)] = sites(test)
    assert truth == "truth" and resolve(flag) == [("global", "FLAG")]
    assert ir.entry in ir.exits and ir.entry == min(ir.exits)


def test_bytecode_ir_is_none_where_the_front_end_refuses_the_function():
    def stores_an_exception(x):
        try:
            x = 1
        except ValueError as e:  # (numba-cuda refuses an exception kept in a variable)
            return e
        return x

    assert bytecode.bytecode_ir(stores_an_exception.__code__, stores_an_exception.__globals__) is None


def test_simulated_threads_count_the_barriers_they_enter():
    """numba_tiles makes the simulator's threads count their block barriers (`simulated.count_barriers`, at import),
    however the kernel reaches them."""
    import numba_tiles as tiles

    seen = {}

    @cuda.jit
    def kernel(x):
        cuda.syncthreads()
        tiles.block_sum(x[cuda.threadIdx.x], block_dim=4)  # (its twin's own barriers count too)
        thread = simulated.simulated_thread()
        seen[thread.thread_id] = simulated.barriers_entered(thread)

    kernel[1, 4](np.zeros(4, np.float32))
    assert len(set(seen.values())) == 1 and min(seen.values()) > 1, seen
