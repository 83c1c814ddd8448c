"""The checks of matrix arguments that the tile intrinsics (`tile`) and the matrix products (`matmul`) share."""

from numba.cuda import types

from ._dtypes import integer, scalar
from ._entry import Arg
from ._errors import error

ORDERS = {"row_major": True, "col_major": False}
# cuBLASDx's real precisions numba_tiles offers: (A and B's dtype) → the dtypes C may have.
PRECISIONS = {
    "float16": ("float16", "float32"),
    "float32": ("float32",),
    "float64": ("float64",),
    "complex64": ("complex64",),
    "complex128": ("complex128",),
}
# precision= names: the C++ type A and B are computed in, the dtypes that may store them, and C's.
# bfloat16 travels as its bits in 16-bit integers, since numba-cuda 0.30 has no bfloat16 arrays.
NAMED = {
    "tf32": ("cublasdx::tfloat32_t", ("float32",), ("float32",)),
    "bf16": ("__nv_bfloat16", ("int16", "uint16"), ("float32",)),
}

# What a matrix argument must be, and the fix, by its dimensions: a matrix, or a batch of them.
_ARRAYS = {
    2: ("a 2-D array", "pass a 2-D array as {} (a shared tile: cuda.shared.array((rows, cols), dtype))"),
    3: ("a 3-D array (count x rows x cols)", "pass the batch of matrices as one 3-D array ({}[i] is product i's)"),
}


def matrix(name, args, param, like=None, ndim=2):
    """The `Dtype` of the 2-D (``ndim=3``: 3-D) array argument ``param``; ``like``: (the other argument, the
    dtype it must share)."""
    ty = args[param]
    if not (isinstance(ty, types.Array) and ty.ndim == ndim):
        what, fix = _ARRAYS[ndim]
        raise error(name, f"{param} must be {what}, got {ty}", fix.format(param))
    dtype = scalar(name, param, ty.dtype, verb="holds")
    if like is not None and dtype != like[1]:
        raise error(
            name,
            f"{param} holds {dtype.name} but {like[0]} holds {like[1].name}",
            f"use {param} and {like[0]} of one dtype",
        )
    return dtype


def block_shape(args):
    """The template arguments BX, BY, BZ of the call's ``block_dim``."""
    return dict(zip(("BX", "BY", "BZ"), args["block_dim"]))


def copy_params(args, fill):
    """The entry parameters of a copy of a tile of ``src`` at ``(row, col)`` into ``tile``, ``fill`` (of Numba type
    ``fill``) past ``src``'s edges."""
    coordinates = (Arg("row", types.int64), Arg("col", types.int64))
    return (Arg("src", args["src"]), *coordinates, Arg("tile", args["tile"]), Arg("fill", fill, 0))


def origin(name, args, params=("row", "col")):
    """Check the run-time tile origin (``row``, ``col``): integers."""
    for param in params:
        integer(name, param, args[param])


def scales(name, args):
    """Check the run-time ``alpha``, ``beta`` (when given): numbers."""
    for param in ("alpha", "beta"):
        if args[param] is not None and not isinstance(types.unliteral(args[param]), types.Number):
            raise error(name, f"{param} must be a number, got {args[param]}", f"pass {param} as a float")


def shape_mnk(intrinsic, value):
    if not (isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, int) and v >= 1 for v in value)):
        raise error(
            intrinsic,
            f"shape must be a tuple (M, N, K) of positive ints, got {value!r}",
            "pass shape=(M, N, K): A is M x K, B is K x N, C is M x N, e.g. shape=(64, 64, 32)",
        )
    return value


def arrangement(intrinsic, value, operands="AB", left_out="both row-major"):
    """Check ``arrangement=``: a tuple (or list) of 'row_major'/'col_major', one for each of ``operands``; the fix
    says what leaving it out means (``left_out``)."""
    if isinstance(value, list):
        value = tuple(value)
    if not (isinstance(value, tuple) and len(value) == len(operands) and set(value) <= set(ORDERS)):
        example = ("row_major", "col_major", "row_major")[: len(operands)]
        which = f"{', '.join(operands[:-1])} and {operands[-1]}"
        raise error(
            intrinsic,
            f"arrangement must be a {len(operands)}-tuple of 'row_major'/'col_major' ({which}), got {value!r}",
            f"pass arrangement={example!r} for {which}, or leave it out ({left_out})",
        )
    return value


def compute_type(name, ta, tc, named):
    """The C++ type A and B are computed in, for A and B stored as ``ta`` and C as ``tc`` (`Dtype`\\ s)."""
    if named is not None:
        computed, storage, accumulators = NAMED[named]
        if ta.name not in storage or tc.name not in accumulators:
            raise error(
                name,
                f"precision={named!r} takes A and B of {' or '.join(storage)} and C of "
                f"{' or '.join(accumulators)}, got {ta.name} and {tc.name}",
                f"store A and B as {storage[0]} and C as {accumulators[0]}, or leave precision out",
            )
        return computed
    if ta.name not in PRECISIONS or tc.name not in PRECISIONS[ta.name]:
        combos = "; ".join(f"{a} A and B with {' or '.join(c)} C" for a, c in PRECISIONS.items())
        raise error(
            name,
            f"{ta.name} A and B with {tc.name} C is not a supported precision",
            f"use {combos}; or precision='tf32' (float32) or 'bf16' (bfloat16 bits in int16)",
        )
    return ta.cxx


def whole_warps(name, block_dim):
    x, y, z = block_dim
    if x * y * z < 32:
        raise error(
            name,
            f"cuBLASDx computes with whole warps; block_dim={block_dim} has {x * y * z} threads",
            "launch blocks of 32 to 1024 threads (128 or 256 suit most tiles)",
        )
