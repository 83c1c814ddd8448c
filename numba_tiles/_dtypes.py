"""Element types the intrinsics accept: one row per type, with its Numba, C++ and NumPy names."""

from dataclasses import dataclass

import numpy as np
from numba.cuda import types

from ._errors import error


@dataclass(frozen=True)
class Dtype:
    name: str
    numba: types.Type
    cxx: str
    numpy: np.dtype

    @property
    def is_integer(self):
        return self.numpy.kind in "iu"


SCALARS = tuple(
    Dtype(name, getattr(types, name), cxx, np.dtype(name))
    for name, cxx in (
        ("int32", "::cuda::std::int32_t"),
        ("int64", "::cuda::std::int64_t"),
        ("uint32", "::cuda::std::uint32_t"),
        ("uint64", "::cuda::std::uint64_t"),
        ("float32", "float"),
        ("float64", "double"),
    )
)
_BY_NUMBA = {d.numba: d for d in SCALARS}
_ACCEPTED = ", ".join(d.name for d in SCALARS)


def scalar(intrinsic, param, ty):
    """The `Dtype` of a Numba scalar type, or a `TilesError` that lists the accepted ones."""
    found = _BY_NUMBA.get(types.unliteral(ty))
    if found is None:
        raise error(
            intrinsic,
            f"{param} has type {ty}, which is not supported",
            f"pass one of {_ACCEPTED}; cast first if needed, e.g. numba.float32(x)",
        )
    return found


def cxx(ty):
    """The C++ spelling of an entry-point parameter: a scalar, or a pointer to an array's items."""
    if isinstance(ty, types.Array):
        return f"{_BY_NUMBA[ty.dtype].cxx}*"
    return _BY_NUMBA[ty].cxx


def element(intrinsic, param, ty):
    """The `Dtype` of a scalar, or of the items of a thread-local array (1-D, contiguous)."""
    if isinstance(ty, types.Array):
        if ty.ndim != 1 or ty.layout != "C":
            raise error(intrinsic, f"{param} must be a 1-D contiguous array, got {ty}",
                        "pass a thread-local array, cuda.local.array(items_per_thread, dtype), or an array "
                        "typed contiguous (float32[::1] in a signature)")
        return scalar(intrinsic, f"{param}'s items", ty.dtype)
    return scalar(intrinsic, param, ty)


def integer(intrinsic, param, ty):
    """Check that a run-time count argument is an integer (any width: it is cast to int32)."""
    if not isinstance(types.unliteral(ty), types.Integer):
        raise error(intrinsic, f"{param} must be an integer, got {ty}", f"pass an int, e.g. {param}=n")
