"""Element types the intrinsics accept: one row per type, with its Numba, C++ and NumPy names."""

from dataclasses import dataclass

import numpy as np
from numba.cuda import types

from ._errors import error


@dataclass(frozen=True)
class Dtype:
    """An element type: its ``name``, ``numba`` type, ``cxx`` spelling and ``numpy`` dtype (float32 for bfloat16,
    which NumPy lacks).

    Example::

        from numba.cuda import types
        from numba_tiles import extending as ext

        f32 = ext.scalar("block_sum_of_squares", "value", types.float32)
        assert (f32.name, f32.cxx, f32.kind, f32.is_integer) == ("float32", "float", "f", False)
    """

    name: str
    numba: types.Type
    cxx: str
    numpy: np.dtype  # bfloat16 has no NumPy type: float32 stands for it (the simulator rounds to bfloat16)

    @property
    def kind(self):
        """NumPy's kind letter: ``i``/``u`` integers, ``f`` floats (bfloat16 too), ``c`` complex.

        Example::

            from numba_tiles import extending as ext

            assert ext.named("Matmul", "dtype", "bfloat16").kind == "f"
        """
        return self.numpy.kind

    @property
    def is_integer(self):
        """Whether it is an integer type (signed or unsigned).

        Example::

            from numba_tiles import extending as ext

            assert ext.named("block_top", "keys", "uint8").is_integer
        """
        return self.kind in "iu"


SCALARS = tuple(
    Dtype(name, getattr(types, name), cxx, np.dtype(numpy or name))
    for name, cxx, numpy in (
        ("int8", "::cuda::std::int8_t", None),
        ("int16", "::cuda::std::int16_t", None),
        ("int32", "::cuda::std::int32_t", None),
        ("int64", "::cuda::std::int64_t", None),
        ("uint8", "::cuda::std::uint8_t", None),
        ("uint16", "::cuda::std::uint16_t", None),
        ("uint32", "::cuda::std::uint32_t", None),
        ("uint64", "::cuda::std::uint64_t", None),
        ("float16", "__half", None),
        ("bfloat16", "__nv_bfloat16", "float32"),
        ("float32", "float", None),
        ("float64", "double", None),
        ("complex64", "::cuda::std::complex<float>", None),
        ("complex128", "::cuda::std::complex<double>", None),
    )
)
"""Every element type the intrinsics accept, a `Dtype` each: int8 to int64, uint8 to uint64, float16, bfloat16,
float32, float64, complex64 and complex128.

Example::

    from numba_tiles import extending as ext

    assert [d.name for d in ext.SCALARS if d.kind == "f"] == ["float16", "bfloat16", "float32", "float64"]
"""
_BY_NUMBA = {d.numba: d for d in SCALARS}


def scalar(intrinsic, param, ty, allowed=None, verb="has type", fix=None):
    """The `Dtype` of a Numba scalar type, or a `TilesError` that lists the accepted ones.

    ``allowed`` narrows the accepted kinds (e.g. ``"iuf"``: no complex) for algorithms that need order;
    ``fix`` replaces the error's fix where a cast is not the way (a ``temp``'s bytes).

    Example::

        from numba.cuda import types
        from numba_tiles import extending as ext

        assert ext.scalar("block_top", "value", types.int32, allowed="iuf").name == "int32"
        try:
            ext.scalar("block_top", "value", types.complex64, allowed="iuf")
        except ext.TilesError as e:
            assert str(e).startswith("tiles.block_top: value has type complex64, which is not supported here")
    """
    found = _BY_NUMBA.get(types.unliteral(ty))
    accepted = [d for d in SCALARS if allowed is None or d.kind in allowed]
    if found is None or found not in accepted:
        raise error(
            intrinsic,
            f"{param} {verb} {ty}, which is not supported here",
            fix or f"pass one of {', '.join(d.name for d in accepted)}; {_cast_example(accepted, verb == 'holds')}",
        )
    return found


def _cast_example(accepted, array):
    """How to get a value (or, ``array``, an array) of a type in ``accepted``, with an example of one of them: the
    example is drawn from ``accepted`` so that it is never one the check refuses (integers only: an int32)."""
    name = next((n for n in ("float32", "int32") if any(d.name == n for d in accepted)), accepted[0].name)
    if array:
        return f"use an array of one (copy the items into one if needed, e.g. cuda.local.array(n, numba.{name}))"
    return f"cast first if needed, e.g. numba.{name}(x)"


def cxx(ty):
    """The C++ spelling of a Numba scalar type (or of an array's item type)."""
    return _BY_NUMBA[ty.dtype if isinstance(ty, types.Array) else ty].cxx


def element(intrinsic, param, ty, allowed=None, fix=None):
    """The `Dtype` of a scalar, or of the items of a 1-D array (thread-local or global); ``fix`` as for `scalar`.

    Example::

        from numba.cuda import types
        from numba_tiles import extending as ext

        assert ext.element("block_top", "keys", types.uint8[::1]).name == "uint8"
    """
    if isinstance(ty, types.Array):
        if ty.ndim != 1 or ty.layout not in "CA":
            raise error(
                intrinsic,
                f"{param} must be a 1-D contiguous array, got {ty}",
                fix
                or "pass a thread-local array, cuda.local.array(items_per_thread, dtype), or a 1-D "
                "slice of a global array (x[start:])",
            )
        return scalar(intrinsic, param, ty.dtype, allowed, verb="holds", fix=fix)
    return scalar(intrinsic, param, ty, allowed, fix=fix)


def integer(intrinsic, param, ty):
    """Check that a run-time count argument is an integer (any width: it is cast to int32).

    Example::

        from numba.cuda import types
        from numba_tiles import extending as ext

        ext.integer("block_top", "num_valid", types.int64)   # an error for a float
    """
    if not isinstance(types.unliteral(ty), types.Integer):
        raise error(intrinsic, f"{param} must be an integer, got {ty}", f"pass an int, e.g. {param}=n")


def given_integer(intrinsic, args, param):
    """Whether the optional run-time integer ``args[param]`` was given (checked to be an integer).

    Example::

        from numba.cuda import types
        from numba_tiles import extending as ext

        assert ext.given_integer("block_top", {"num_valid": types.int32}, "num_valid")
        assert not ext.given_integer("block_top", {"num_valid": None}, "num_valid")
    """
    given = args[param] is not None
    if given:
        integer(intrinsic, param, args[param])
    return given


def named(intrinsic, param, value):
    """The `Dtype` of a dtype given on the host: a Numba type, a NumPy dtype or type, or a name.

    Example::

        import numpy as np
        from numba_tiles import extending as ext

        assert ext.named("Matmul", "dtype", np.float16) == ext.named("Matmul", "dtype", "float16")
    """
    for dtype in SCALARS:
        if value is dtype.numba or value == dtype.name:
            return dtype
    try:
        name = np.dtype(value).name
    except TypeError:
        name = None
    found = next((d for d in SCALARS if d.name == name), None)
    if found is None:
        raise error(
            intrinsic,
            f"{param}={value!r} is not a dtype numba_tiles knows",
            f"pass one of {', '.join(d.name for d in SCALARS)} (a Numba type, a NumPy dtype or its name)",
        )
    return found


def half_bits(ty, value):
    """float16 / bfloat16 ``value`` as the i16 bit pattern both compilers hold them in."""
    if ty == types.float16:
        return int(np.float16(value).view(np.uint16))
    wide = int(np.float32(value).view(np.uint32))  # bfloat16: float32's bits, rounded to nearest even
    return (wide + 0x7FFF + ((wide >> 16) & 1)) >> 16 & 0xFFFF
