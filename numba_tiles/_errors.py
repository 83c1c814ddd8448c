"""The one error type for misuse of an intrinsic."""


class TilesError(TypeError):
    """Bad input to an intrinsic, raised at compile time (on the simulator: at the call).

    The first line of its message names the intrinsic, what was wrong and the fix, e.g.
    ``tiles.block_reduce: op '%' is not supported. Fix: use one of '+', '*', 'min', ...``; raised
    while a kernel compiles (numba-cuda's or numba-cuda-mlir's), the message goes on with the file, line and
    source of the call.

    It is a Python ``TypeError``, not a Numba ``TypingError``: numba-cuda lets an
    exception that is not its own leave the compiler as it is, so ``tiles.compile``, a kernel's
    first launch and ``kernel.compile(...)`` all raise it with its own message first (Numba would
    bury a ``TypingError`` of ours under its list of candidate implementations). Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def bad(x, out):
            out[0] = tiles.block_reduce(x[cuda.grid(1)], "&", block_dim=128)

        try:
            tiles.compile(bad, "void(float32[:], float32[:])")
        except tiles.TilesError as e:
            assert str(e).startswith("tiles.block_reduce: op '&' needs an integer dtype")
    """


def error(intrinsic, problem, fix):
    """The `TilesError` for ``intrinsic``: what was wrong and how to fix it."""
    return TilesError(f"tiles.{intrinsic}: {problem}. Fix: {fix}.")


def call_location(filename, line, function):
    """Where a call stands, for the end of its `TilesError`: file, line, function and the line's source."""
    import linecache

    source = linecache.getline(filename, line).strip()
    return f'File "{filename}", line {line}, in {function}:' + (f"\n    {source}" if source else "")
