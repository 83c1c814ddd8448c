"""The simulator refuses what the compiler refuses, with the same first line (tests/cpu/test_errors.py
compiles the same cases), and accepts what it accepts."""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles

from .. import misuse


@pytest.mark.parametrize("index", range(len(misuse.CASES)), ids=[c.call for c in misuse.CASES])
def test_misuse_is_the_compilers_error(index, rng):
    case = misuse.CASES[index]
    if case.compiled_only:
        pytest.skip(case.compiled_only)
    kernel = cuda.jit(misuse.kernel(case, index))
    with pytest.raises(tiles.TilesError) as info:
        kernel[1, 1](*misuse.arguments(case.sig, rng))  # (the call is refused before its twin runs)
    misuse.check(case, info.value)


@pytest.mark.parametrize("index", range(len(misuse.ACCEPTED)), ids=[e for e, _ in misuse.ACCEPTED])
def test_constants_numba_types_as_constants_are_accepted(index, rng):
    x = rng.standard_normal(2 * misuse.BLOCK).astype(np.float32)
    out = np.zeros(2, np.float32)
    cuda.jit(misuse.accepted_kernel(index))[2, misuse.BLOCK](x, out, 3)
    np.testing.assert_allclose(out, x.reshape(2, -1).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_accepted_forms_of_constants_and_a_longer_local_array_run(rng):
    x = rng.standard_normal(2 * misuse.BLOCK * misuse.ITEMS).astype(np.float32)
    out = np.zeros((2, 2), np.float32)
    cuda.jit(misuse.accepted_forms())[2, misuse.BLOCK](x, out)
    np.testing.assert_allclose(out, misuse.accepted_forms_reference(x), rtol=1e-5, atol=1e-5)


def test_constness_is_read_from_each_call_site():
    """Two calls on one line, one constant and one not; a device function's call; a call spread over lines."""
    TPB = 32

    @cuda.jit(device=True)
    def helper(v, threads):
        return tiles.block_sum(v, block_dim=threads)

    @cuda.jit
    def two_calls(x, out):
        out[0] = tiles.block_sum(x[cuda.threadIdx.x], block_dim=TPB) + tiles.block_sum(x[0], block_dim=len(x))

    @cuda.jit
    def through_helper(x, out):
        out[0] = helper(x[cuda.threadIdx.x], 32)

    @cuda.jit
    def spread(x, out):
        out[0] = tiles.block_sum(
            x[cuda.threadIdx.x],
            block_dim=cuda.blockDim.x,
        )

    for kernel in (two_calls, through_helper, spread):
        with pytest.raises(tiles.TilesError, match=r"tiles.block_sum: block_dim must be a compile-time constant"):
            kernel[1, 32](np.ones(32, np.float32), np.zeros(1, np.float32))


def test_a_global_changed_after_the_first_call_is_still_a_constant(rng):
    """The classification is kept per call site; the value is the call's own."""
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(1, np.float32)
    kernel = cuda.jit(_sum_of_block)
    for threads in (32, 64):
        global THREADS
        THREADS = threads
        kernel[1, threads](x, out)
        np.testing.assert_allclose(out[0], x[:threads].sum(), rtol=1e-5)


THREADS = 32


def _sum_of_block(x, out):
    s = tiles.block_sum(x[cuda.threadIdx.x], block_dim=THREADS)
    if cuda.threadIdx.x == 0:
        out[0] = s


def test_the_call_is_found_by_its_line_where_python_has_no_instruction_positions():
    """Python 3.10 has no co_positions: the call is the one call of the intrinsic on the running line, and
    there is none to check where the line has two."""
    import ast
    import types

    from numba_tiles import simulator

    source = ("def kernel(x):\n    a = tiles.block_sum(x[0], block_dim=32) + other(1)\n"
              "    b = tiles.block_sum(x[0], block_dim=32) + tiles.block_sum(x[1], block_dim=n)\n")
    function = ast.parse(source).body[0]
    code = types.SimpleNamespace()  # (no co_positions)
    found = simulator._call_node(function, types.SimpleNamespace(f_code=code, f_lineno=2), "block_sum")
    assert ast.unparse(found) == "tiles.block_sum(x[0], block_dim=32)"
    assert simulator._call_node(function, types.SimpleNamespace(f_code=code, f_lineno=3), "block_sum") is None
