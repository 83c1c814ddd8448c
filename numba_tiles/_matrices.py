"""The checks of the matrix arguments that every form of the tile matmul shares, with their messages.

    matrix(name, args, "a")                     # the Dtype of the 2-D array argument a, or a TilesError
    shape_mnk("Matmul", (64, 64, 32))           # (M, N, K), checked
"""

from numba.cuda import types

from ._dtypes import scalar
from ._errors import error

ORDERS = {"row_major": True, "col_major": False}  # an arrangement's names: whether the matrix is row-major


# What a matrix argument must be, and the fix, by its dimensions: a matrix, or a batch of them.
ARRAYS = {2: ("a 2-D array", "pass a 2-D array as {} (a shared tile: cuda.shared.array((rows, cols), dtype))"),
          3: ("a 3-D array (count x rows x cols)", "pass the batch of matrices as one 3-D array ({}[i] is product i's)")}


def matrix(name, args, param, like=None, ndim=2):
    """The `Dtype` of the 2-D (``ndim=3``: 3-D) array argument ``param``; ``like``: (the other argument, the
    dtype it must share)."""
    ty = args[param]
    if not (isinstance(ty, types.Array) and ty.ndim == ndim):
        what, fix = ARRAYS[ndim]
        raise error(name, f"{param} must be {what}, got {ty}", fix.format(param))
    dtype = scalar(name, param, ty.dtype, verb="holds")
    if like is not None and dtype != like[1]:
        raise error(name, f"{param} holds {dtype.name} but {like[0]} holds {like[1].name}",
                    f"use {param} and {like[0]} of one dtype")
    return dtype


def scales(name, args):
    """Check the run-time ``alpha``, ``beta`` (when given): numbers."""
    for param in ("alpha", "beta"):
        if args[param] is not None and not isinstance(types.unliteral(args[param]), types.Number):
            raise error(name, f"{param} must be a number, got {args[param]}", f"pass {param} as a float")


def shape_mnk(intrinsic, value):
    """``shape=(M, N, K)``, checked: A is M x K, B is K x N, C is M x N."""
    if not (isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, int) and v >= 1 for v in value)):
        raise error(intrinsic, f"shape must be a tuple (M, N, K) of positive ints, got {value!r}",
                    "pass shape=(M, N, K): A is M x K, B is K x N, C is M x N, e.g. shape=(64, 64, 32)")
    return value


def arrangement_ab(intrinsic, value):
    """A description's ``arrangement=``, checked: A's and B's order in global memory."""
    if not (isinstance(value, tuple) and len(value) == 2 and set(value) <= set(ORDERS)):
        raise error(intrinsic, f"arrangement must be a 2-tuple of 'row_major'/'col_major' (A's, B's), got {value!r}",
                    "pass arrangement=('row_major', 'col_major') for A and B as they lie in global memory, "
                    "or leave it out (both row-major)")
    return value


def pipe_array(name, args, prepare, arrays="a, b"):
    """``args["pipe"]``, which must be the 1-D uint8 array ``mm.<prepare>(<arrays>)`` made on the host."""
    pipe = args["pipe"]
    if not (isinstance(pipe, types.Array) and pipe.ndim == 1 and pipe.dtype == types.uint8):
        raise error(name, f"pipe must be the uint8 array mm.{prepare}({arrays}) returned, got {pipe}",
                    f"pass pipe = mm.{prepare}({arrays}), made on the host, to the kernel")
    return pipe
