"""The one error type for misuse of an intrinsic."""

from ._numba import TypingError


class TilesError(TypingError):
    """Bad input to an intrinsic, raised at compile time (on the simulator: at the call).

    The message names the intrinsic, what was wrong and the fix, e.g.
    ``tiles.block_reduce: op '%' is not supported. Fix: use one of '+', '*', 'min', ...``.
    It is a numba-cuda ``TypingError``, so numba-cuda's typing reports it at the kernel's
    source line, inside the ``TypingError`` that compiling the kernel raises. Example::

        from numba import cuda
        from numba.core.errors import TypingError
        import numba_tiles as tiles

        @cuda.jit
        def bad(x, out):
            out[0] = tiles.block_reduce(x[cuda.grid(1)], "&", block_dim=128)

        try:
            tiles.compile(bad, "void(float32[:], float32[:])")
        except TypingError as e:
            assert "tiles.block_reduce: op '&' needs an integer dtype" in str(e)
    """


def error(intrinsic, problem, fix):
    """The `TilesError` for ``intrinsic``: what was wrong and how to fix it."""
    return TilesError(f"tiles.{intrinsic}: {problem}. Fix: {fix}.")
