"""Binary operators of the reductions: every accepted spelling maps to one `Op`.

An op can be written as a string (``"+"``, ``"add"``, ``"min"``, ``"&"``, ...), as the Python
function (``operator.add``, ``min``, ``operator.and_``, ...) or as the NumPy ufunc
(``numpy.add``, ``numpy.minimum``, ...); all spellings of one op compile to the same code::

    tiles.block_reduce(v, "max", block_dim=256)
    tiles.block_reduce(v, max, block_dim=256)
"""

import builtins
import operator
from dataclasses import dataclass

import numpy as np

from . import _dtypes
from ._errors import error


@dataclass(frozen=True)
class Op:
    """One associative, commutative operator: its C++ functor and its NumPy twin."""

    name: str
    functor: str  # a CCCL transparent function object (CUB's fast paths, like REDUX, match on those)
    ufunc: np.ufunc
    integer_only: bool

    @property
    def cxx(self):
        return f"{self.functor}<>"

    def identity(self, dtype):
        """The value of an empty reduction in NumPy ``dtype`` (as lto_libs' ``identity`` gives it)."""
        if self.ufunc is np.minimum:
            return dtype.type(np.inf if dtype.kind == "f" else np.iinfo(dtype).max)
        if self.ufunc is np.maximum:
            return dtype.type(-np.inf if dtype.kind == "f" else np.iinfo(dtype).min)
        return np.array(self.ufunc.identity).astype(dtype)[()]


_OPS = (
    (Op("+", "::cuda::std::plus", np.add, False), ("add", operator.add)),
    (Op("*", "::cuda::std::multiplies", np.multiply, False), ("mul", operator.mul)),
    (Op("min", "::cuda::minimum", np.minimum, False), (builtins.min,)),
    (Op("max", "::cuda::maximum", np.maximum, False), (builtins.max,)),
    (Op("&", "::cuda::std::bit_and", np.bitwise_and, True), ("bit_and", operator.and_)),
    (Op("|", "::cuda::std::bit_or", np.bitwise_or, True), ("bit_or", operator.or_)),
    (Op("^", "::cuda::std::bit_xor", np.bitwise_xor, True), ("bit_xor", operator.xor)),
)
_SPELLINGS = {
    spelling: op for op, more in _OPS for spelling in (op.name, op.ufunc, *more)
}
ACCEPTED = ", ".join(repr(op.name) for op, _ in _OPS)


def parse(intrinsic, value):
    """The `Op` a spelling names, or a `TilesError` listing the accepted ones."""
    try:
        return _SPELLINGS[value]
    except (KeyError, TypeError):
        pass
    shown = value if isinstance(value, str) else getattr(value, "__name__", value)
    raise error(
        intrinsic,
        f"op {shown!r} is not supported",
        f"use one of {ACCEPTED} (or operator.add, min, max, operator.and_, ..., numpy.add, ...)",
    )


def check(intrinsic, op, dtype):
    """Reject an op that has no meaning for the dtype (bitwise ops on floats, min/max on complex)."""
    if dtype.kind == "c" and op.ufunc in (np.minimum, np.maximum):
        raise error(intrinsic, f"op {op.name!r} needs ordered values, got {dtype.name}", "use '+' or '*' for complex values")
    if op.integer_only and not dtype.is_integer:
        raise error(
            intrinsic,
            f"op {op.name!r} needs an integer dtype, got {dtype.name}",
            "use '+', '*', 'min' or 'max' for floating-point values",
        )


def reduction(intrinsic, args):
    """The (dtype, op, partial) of a reduction's arguments, checked: what block and warp rules share."""
    dtype = _dtypes.element(intrinsic, "value", args["value"])
    op = args["op"]
    check(intrinsic, op, dtype)
    partial = args["num_valid"] is not None
    if partial:
        _dtypes.integer(intrinsic, "num_valid", args["num_valid"])
    return dtype, op, partial


def scan(intrinsic, args, dtype):
    """What block and warp scans share: (op, whether there is an initial value, its default)."""
    op = args["op"]
    check(intrinsic, op, dtype)
    if args["initial_value"] is not None:
        _dtypes.scalar(intrinsic, "initial_value", args["initial_value"])
    # An exclusive scan without initial_value starts from the op's identity, so that its first
    # output is defined (CUB leaves it undefined).
    has_initial = args["exclusive"] or args["initial_value"] is not None
    return op, has_initial, op.identity(dtype.numpy).item()
