"""The simulator refuses what the compiler refuses, with the same first line (tests/cpu/test_errors.py
compiles the same cases), and accepts what it accepts."""

import linecache

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles

from ..support import misuse


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


# The constness cases (and the accepted spellings) again, from kernels whose source cannot be read: the rules
# are read from the bytecode, as the compiler reads them, not from a file.
CONSTNESS = [i for i, case in enumerate(misuse.CASES) if "compile-time constant" in case.message]


def _unreadable(function):
    """``function`` defined again from its source, under a file name with no lines to read (as ``exec`` of a
    string defines one)."""
    filename = function.__code__.co_filename
    namespace = dict(function.__globals__)
    exec(compile("".join(linecache.getlines(filename)), f"<unreadable {filename}>", "exec"), namespace)
    assert not linecache.getlines(f"<unreadable {filename}>")
    return namespace[function.__name__]


@pytest.mark.parametrize("index", CONSTNESS, ids=[misuse.CASES[i].call for i in CONSTNESS])
def test_a_kernel_without_source_is_refused_as_from_a_file(index, rng):
    case = misuse.CASES[index]
    kernel = cuda.jit(_unreadable(misuse.kernel(case, index)))
    with pytest.raises(tiles.TilesError) as info:
        kernel[1, 1](*misuse.arguments(case.sig, rng))
    misuse.check(case, info.value)


@pytest.mark.parametrize("index", range(len(misuse.ACCEPTED)), ids=[e for e, _ in misuse.ACCEPTED])
def test_constants_in_a_kernel_without_source_are_accepted(index, rng):
    x = rng.standard_normal(2 * misuse.BLOCK).astype(np.float32)
    out = np.zeros(2, np.float32)
    cuda.jit(_unreadable(misuse.accepted_kernel(index)))[2, misuse.BLOCK](x, out, 3)
    np.testing.assert_allclose(out, x.reshape(2, -1).sum(axis=1), rtol=1e-5, atol=1e-5)


RUN_TIME_BLOCK_DIM = """
import numpy as np
from numba import cuda

import numba_tiles as tiles


@cuda.jit
def kernel(x, out):
    s = tiles.block_sum(x[cuda.threadIdx.x], block_dim=cuda.blockDim.x)
    if cuda.threadIdx.x == 0:
        out[0] = s


def first_line():
    try:
        kernel[1, 32](np.ones(32, np.float32), np.zeros(1, np.float32))
    except tiles.TilesError as e:
        return str(e).splitlines()[0]
    return "accepted"
"""


def test_block_dim_of_the_launch_is_refused_from_a_file_from_exec_and_from_python_c(tmp_path):
    """``block_dim=cuda.blockDim.x`` is a run-time value to the compiler, whether the kernel's source is a file,
    a string given to ``exec`` or ``python -c``'s argument."""
    import importlib.util
    import inspect
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "run_time_block_dim.py"
    path.write_text(RUN_TIME_BLOCK_DIM)
    spec = importlib.util.spec_from_file_location("run_time_block_dim", path)
    from_file = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(from_file)
    assert "cuda.blockDim.x" in inspect.getsource(from_file.kernel.py_func)

    from_exec = {}
    exec(compile(RUN_TIME_BLOCK_DIM, "<string>", "exec"), from_exec)
    with pytest.raises(OSError):  # (no source to read)
        inspect.getsource(from_exec["kernel"].py_func)

    root = Path(tiles.__file__).resolve().parents[1]  # (python -c imports this checkout's numba_tiles)
    done = subprocess.run(
        [sys.executable, "-c", RUN_TIME_BLOCK_DIM + "\nprint(first_line())"],
        cwd=root,
        env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"},
        capture_output=True,
        text=True,
        check=True,
    )

    lines = [from_file.first_line(), from_exec["first_line"](), done.stdout.strip().splitlines()[-1]]
    expected = (
        "tiles.block_sum: block_dim must be a compile-time constant, got a run-time value. Fix: write it "
        "as a literal or a module-level global, e.g. block_dim=256."
    )
    assert [misuse.first_line(line) for line in lines] == [expected] * 3, lines


TPB = 64


def test_a_valid_kernel_from_exec_computes_its_block_sums(rng):
    """Constants spelled as a global, a local assigned one and a tuple of them pass in a kernel from ``exec``."""
    source = (
        "def kernel(x, out):\n"
        "    threads = TPB\n"
        "    v = x[cuda.grid(1)]\n"
        "    total = tiles.block_sum(v, block_dim=threads)\n"
        "    largest = tiles.block_reduce(v, 'max', block_dim=(TPB, 1))\n"
        "    if cuda.threadIdx.x == 0:\n"
        "        out[cuda.blockIdx.x, 0] = total\n"
        "        out[cuda.blockIdx.x, 1] = largest\n"
    )
    namespace = {"cuda": cuda, "tiles": tiles, "TPB": TPB}
    exec(compile(source, "<string>", "exec"), namespace)
    x = rng.standard_normal(3 * TPB).astype(np.float32)
    out = np.zeros((3, 2), np.float32)
    cuda.jit(namespace["kernel"])[3, TPB](x, out)
    blocks = x.reshape(3, TPB)
    np.testing.assert_allclose(out, np.stack([blocks.sum(axis=1), blocks.max(axis=1)], axis=1), rtol=1e-5, atol=1e-5)
