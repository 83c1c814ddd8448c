"""The one error type for misuse of an intrinsic."""

from numba.core.errors import TypingError


class TilesError(TypingError):
    """Bad input to an intrinsic, raised at compile time (on the simulator: at the call).

    The message names the intrinsic, what was wrong and the fix, e.g.
    ``tiles.block_reduce: op '%' is not supported. Fix: use one of '+', '*', 'min', ...``::

        try:
            tiles.compile(kernel, "void(float32[:])")
        except tiles.TilesError as e:
            print(e)
    """


def error(intrinsic, problem, fix):
    """The `TilesError` for ``intrinsic``: what was wrong and how to fix it."""
    return TilesError(f"tiles.{intrinsic}: {problem}. Fix: {fix}.")
