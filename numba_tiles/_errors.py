"""The one error type for misuse of an intrinsic."""

from numba.core.errors import TypingError


class TilesError(TypingError):
    """Bad input to an intrinsic, raised at compile time (on the simulator: at the call).

    The message names the intrinsic, what was wrong and the fix, e.g.
    ``tiles.block_reduce: op '%' is not supported. Fix: use one of '+', '*', 'min', ...``.
    When Numba compiles the kernel it reports this message inside its own ``TypingError``
    (a base class of this one), so catch that to handle both::

        from numba.core.errors import TypingError
        try:
            tiles.compile(kernel, "void(float32[:], float32[:])")
        except TypingError as e:
            print(e)
    """


def error(intrinsic, problem, fix):
    """The `TilesError` for ``intrinsic``: what was wrong and how to fix it."""
    return TilesError(f"tiles.{intrinsic}: {problem}. Fix: {fix}.")
