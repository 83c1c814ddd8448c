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
from numba.cuda import types

from . import _compile, _dtypes
from ._backends import numba_cuda
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

    code = {}  # what a user op adds to an Instance (see UserOp.bind)

    def bind(self, intrinsic, dtype):
        return self

    def identity(self, dtype):
        """The value of an empty reduction in NumPy ``dtype``: what the missing items of a partial
        reduction or scan take (the entry point passes it to the C++)."""
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
_SPELLINGS = {spelling: op for op, more in _OPS for spelling in (op.name, op.ufunc, *more)}
ACCEPTED = ", ".join(repr(op.name) for op, _ in _OPS)


class _PythonUfunc:
    """The NumPy-like face of a user op for the simulator: reduce, accumulate and a call, in ``dtype``."""

    def __init__(self, func):
        self.func = func

    def __call__(self, a, b, dtype):
        return dtype.type(self.func(a, b))

    def reduce(self, values, dtype):
        dtype = np.dtype(dtype)
        result = values[0]
        for v in values[1:]:
            result = self(result, v, dtype)
        return dtype.type(result)

    def accumulate(self, values, dtype):
        dtype = np.dtype(dtype)
        out = np.empty(len(values), dtype)
        for i, v in enumerate(values):
            out[i] = v if i == 0 else self(out[i - 1], v, dtype)
        return out


class UserOp:
    """A user's ``@cuda.jit(device=True)`` function used as an operator.

    Numba compiles it to LTO-IR (C ABI, under a name of ours) for each element type and arch;
    the C++ side declares it and wraps it in a functor for CUB; nvJitLink inlines it. It has no
    identity, so ``num_valid`` and an exclusive scan without ``initial_value`` need a built-in op.
    """

    def __init__(self, function, result=None):
        self.py_func = _compile.device_function(function)
        self.fastmath = numba_cuda.fastmath(function)
        self.name = self.py_func.__name__
        self.result = result  # a fixed result type (bool for comparators), else the element type
        self.ufunc = _PythonUfunc(self.py_func)

    def bind(self, intrinsic, dtype):
        """This op for ``dtype``: a `BoundUserOp` with its functor, declaration and function to link."""
        # Types whose C ABI Numba and NVRTC agree on (Numba passes half, bfloat16 and complex differently).
        if not (dtype.is_integer or dtype.name in ("float32", "float64")):
            raise error(
                intrinsic,
                f"a Python op ({self.name}) works on integers, float32 and float64, got {dtype.name}",
                "use a built-in op for this dtype, or cast the values",
            )
        return BoundUserOp(self, dtype)


class BoundUserOp:
    """A `UserOp` for one element type (what a rule puts in its `Instance`)."""

    integer_only = False
    identity = None

    def __init__(self, op, dtype):
        self.name, self.ufunc = op.name, op.ufunc
        result = op.result or dtype.numba
        self.symbol = _compile.function_symbol("op", op.py_func, f"{result}({dtype.name})", op.fastmath)
        self.cxx = f"{self.symbol}_functor"
        result_cxx = "bool" if result == types.boolean else dtype.cxx
        self.code = {
            "prelude": (
                f'extern "C" __device__ {result_cxx} {self.symbol}({dtype.cxx}, {dtype.cxx});\n'
                f"struct {self.cxx} {{\n"
                f"  __device__ {result_cxx} operator()(const {dtype.cxx}& a, const {dtype.cxx}& b) const {{\n"
                f"    return {self.symbol}(a, b);\n  }}\n}};\n"
            ),
            "functions": ((self.symbol, op.py_func, result(dtype.numba, dtype.numba), op.fastmath),),
        }


def is_device_function(value):
    return _compile.device_function(value) is not None


@dataclass(frozen=True)
class Predicate:
    """A built-in comparison (``"<"``, ``"!="``, ...): its C++ functor and its Python twin. A user's
    ``@cuda.jit(device=True)`` comparison is a `UserOp` returning a bool; both ``bind`` alike."""

    name: str
    cxx: str
    py_func: object
    code = {}

    def bind(self, intrinsic, dtype):
        return self


def predicate(spellings, fix):
    """A parser of ``compare=``: one of ``spellings`` (name → `Predicate`), or a device function returning a bool."""

    def parse(intrinsic, value):
        if value in spellings:
            return spellings[value]
        if is_device_function(value):
            return UserOp(value, result=types.boolean)
        raise error(intrinsic, f"compare={value!r} is not supported", fix)

    return parse


def identity_value(op, dtype):
    """``op``'s identity in ``dtype`` as a Python value (0 for a user op, which has none and takes no num_valid)."""
    return 0 if op.identity is None else op.identity(dtype.numpy).item()


def parse(intrinsic, value):
    """The `Op` a spelling names (or a `UserOp` for a device function), or a `TilesError` listing them."""
    if is_device_function(value):
        return UserOp(value)
    try:
        return _SPELLINGS[value]
    except (KeyError, TypeError):
        pass
    shown = value if isinstance(value, str) else getattr(value, "__name__", value)
    raise error(
        intrinsic,
        f"op {shown!r} is not supported",
        f"use one of {ACCEPTED} (or operator.add, min, max, operator.and_, ..., numpy.add, ...), "
        "or a @cuda.jit(device=True) function of two values",
    )


def check(intrinsic, op, dtype):
    """Reject an op that has no meaning for the dtype (bitwise ops on floats, min/max on complex)."""
    if dtype.kind == "c" and op.ufunc in (np.minimum, np.maximum):  # (a user op's ufunc is never these)
        raise error(
            intrinsic, f"op {op.name!r} needs ordered values, got {dtype.name}", "use '+' or '*' for complex values"
        )
    if op.integer_only and not dtype.is_integer:
        raise error(
            intrinsic,
            f"op {op.name!r} needs an integer dtype, got {dtype.name}",
            "use '+', '*', 'min' or 'max' for floating-point values",
        )


def reduction(intrinsic, args, dtype):
    """The (op, partial) of a reduction over ``dtype``, checked: what block and warp rules share."""
    op = args["op"].bind(intrinsic, dtype)
    check(intrinsic, op, dtype)
    return op, partial(intrinsic, args, op)


def partial(intrinsic, args, op):
    """Whether ``num_valid`` was given (checked: an integer, and an op whose identity the missing items take)."""
    given = _dtypes.given_integer(intrinsic, args, "num_valid")
    if given and op.identity is None:
        raise error(
            intrinsic,
            f"num_valid needs an op with an identity; {op.name} is a Python function",
            "use a built-in op, or leave num_valid out and give the missing items a neutral value",
        )
    return given


def scan(intrinsic, args, dtype):
    """What block and warp scans share: (op, whether there is an initial value, its default)."""
    op = args["op"].bind(intrinsic, dtype)
    check(intrinsic, op, dtype)
    if args["initial_value"] is not None:
        _dtypes.scalar(intrinsic, "initial_value", args["initial_value"])
    # An exclusive scan without initial_value starts from the op's identity, so that its first
    # output is defined (CUB leaves it undefined).
    has_initial = args["exclusive"] or args["initial_value"] is not None
    if op.identity is None and args["exclusive"] and args["initial_value"] is None:
        raise error(
            intrinsic,
            f"an exclusive scan with a Python op ({op.name}) needs initial_value",
            "pass initial_value=..., the value the first item starts from",
        )
    return op, has_initial, identity_value(op, dtype)
