"""A user's device function that an intrinsic's C++ calls for each item: a matmul's epilogue.

The user writes ``@cuda.jit(device=True) def epilogue(value, row, col, bias)`` and passes it with the
run-time values it needs (``epilogue=epilogue, epilogue_args=(bias,)``). Numba compiles the function
(C ABI, under a symbol of ours) for the item's type, int64 coordinates and those values' types. The
kernel's own module gets a small function in the entry points' pointer ABI (`numba_cuda.define_callback`)
that unpacks the values from one pointer and calls it; the C++ calls that through a functor, and
nvJitLink inlines both into the store's loop.
"""

from dataclasses import dataclass

from numba.cuda import types

from . import _compile
from ._backends import mlir, numba_cuda, simulated
from ._entry import Function
from ._errors import error


@dataclass(frozen=True)
class Callback:
    """The device function ``pyfunc`` called as ``pyfunc(value, *coordinates, *extras)`` → ``value``'s type.

    ``value`` is the item's Numba type, ``coordinates`` how many int64 coordinates follow it, ``extras``
    the Numba types of the run-time values passed along (a tuple). In a numba-cuda-mlir kernel (``mlir``) the
    functor calls the function itself, numba-cuda-mlir's C ABI, with the extras' fields that `mlir.pack` lays
    out; under numba-cuda it calls a function in the kernel's module (`define`) that unpacks them."""

    pyfunc: object
    value: types.Type
    coordinates: int
    extras: tuple
    fastmath: bool = False  # the device function's own ``fastmath=True``, kept in our compile of it
    mlir: bool = False

    @property
    def signature(self):
        return self.value(self.value, *(types.int64,) * self.coordinates, *self.extras)

    @property
    def symbol(self):
        """The pointer-ABI function the C++ calls (defined in the kernel's module)."""
        return _compile.function_symbol("epilogue", self.pyfunc, self.signature, self.fastmath, self.mlir)

    @property
    def body(self):
        """The user's function as Numba compiles it (C ABI)."""
        return f"{self.symbol}_body"

    @property
    def functor(self):
        """The C++ type of the functor the store calls: built from the pointer to the extras."""
        return f"{self.symbol}_functor"

    @property
    def prelude(self):
        from ._dtypes import cxx

        value = cxx(self.value)
        coordinates = "".join(f", long long at{i}" for i in range(self.coordinates))
        if self.mlir:
            fields = mlir.c_abi_fields(self.extras)
            given = "".join(f", at{i}" for i in range(self.coordinates))
            read = "".join(f", *reinterpret_cast<{f} const*>(e + {mlir.FIELD_BYTES * k})" for k, f in enumerate(fields))
            return (
                f'extern "C" __device__ {value} {self.body}({value}{", long long" * self.coordinates}'
                f"{''.join(', ' + f for f in fields)});\n"
                f"struct {self.functor} {{\n  const void* extras;\n"
                f"  __device__ __forceinline__ {value} operator()({value} value{coordinates}) const {{\n"
                f"    const char* const e = static_cast<const char*>(extras);\n"
                f"    return {self.body}(value{given}{read});\n  }}\n}};\n"
            )
        pointers = "".join(f", &at{i}" for i in range(self.coordinates))
        return (
            f'extern "C" __device__ void {self.symbol}(const {value}*'
            f"{', const long long*' * self.coordinates}, const void*, {value}*);\n"
            f"struct {self.functor} {{\n  const void* extras;\n"
            f"  __device__ __forceinline__ {value} operator()({value} value{coordinates}) const {{\n"
            f"    {value} result;\n    {self.symbol}(&value{pointers}, extras, &result);\n"
            f"    return result;\n  }}\n}};\n"
        )

    def code(self, cc):
        """The user's function compiled for ``cc`` by the kernel's compiler (C ABI, under `body`)."""
        return _compile.python_function(self.body, self.pyfunc, self.signature, cc, self.fastmath, self.mlir)

    def define(self, context, builder):
        """Define the pointer-ABI function in the module being lowered (once)."""
        numba_cuda.define_callback(context, builder, self.symbol, self.body, self.value, self.coordinates, self.extras)

    def simulate(self, value, coordinates, extras):
        """The simulator's call: the Python function on Python values."""
        return self.pyfunc(value, *coordinates, *extras)


# The epilogue's parameters, by how many coordinates an item has: a tile's (row, col), a batch's (item, row, col).
PARAMETERS = {2: ("value", "row", "col"), 3: ("value", "item", "row", "col")}


def parse(intrinsic, value):
    """The ``epilogue=`` argument: None or a ``@cuda.jit(device=True)`` function."""
    if value is None:
        return None
    if _compile.device_function(value) is None:
        raise error(
            intrinsic,
            f"epilogue must be a @cuda.jit(device=True) function, got {value!r}",
            "define it as @cuda.jit(device=True) def epilogue(value, row, col, ...) returning the "
            "item's new value, and pass epilogue=epilogue",
        )
    return value


def bind(intrinsic, function, extras, value, coordinates, names):
    """The `Callback` of ``function`` (``epilogue=``, or None) for items of Numba type ``value``, with
    ``coordinates`` int64 coordinates (``names``, for messages) and ``extras`` (the type of
    ``epilogue_args=``: a tuple, or None); compiled now, so that a function that does not compile for
    these types is an error of this call."""
    if function is None:
        if extras is not None:
            raise error(
                intrinsic,
                "epilogue_args given without an epilogue",
                "pass epilogue=<a @cuda.jit(device=True) function> too, or leave epilogue_args out",
            )
        return None
    if extras is None:
        extras = ()
    elif isinstance(extras, types.BaseTuple):
        extras = tuple(extras)
    else:
        raise error(
            intrinsic,
            f"epilogue_args must be a tuple of the values the epilogue takes after ({', '.join(names)}), got {extras}",
            "pass epilogue_args=(bias,) (a 1-tuple has a comma)",
        )
    pyfunc = _compile.device_function(function)
    callback = Callback(
        pyfunc,
        types.unliteral(value),
        coordinates,
        tuple(types.unliteral(t) for t in extras),
        numba_cuda.fastmath(function),
        mlir.typing_cc() is not None,
    )
    if callback.mlir:
        mlir.c_abi_fields(callback.extras, intrinsic)  # (what it cannot pass is an error of this call)
    if not simulated.simulator_enabled():
        try:
            callback.code(_compile.typing_cc())
        except Exception as exc:  # noqa: BLE001 (Numba's typing and lowering errors: the user's code)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise error(
                intrinsic,
                f"the epilogue {pyfunc.__name__} does not compile for {callback.signature.args} "
                f"({', '.join(names)}{', *epilogue_args' if extras else ''}): {first}",
                f"make {pyfunc.__name__} take ({', '.join(names)}{', ...' if extras else ''}) and return a number",
            ) from None
    return callback


CONSTS = {"epilogue": parse}  # what an intrinsic taking ``epilogue=`` declares (``epilogue_args``: run-time values)


def fused(intrinsic, args, value, coordinates):
    """What ``epilogue=`` and ``epilogue_args=`` of a store add to its `Instance`: (its parameters, its
    prelude); the epilogue is given items of Numba type ``value`` and ``coordinates`` (2 or 3) of each."""
    callback = bind(intrinsic, args["epilogue"], args["epilogue_args"], value, coordinates, PARAMETERS[coordinates])
    return ((), "") if callback is None else ((Function("epilogue_args", callback),), callback.prelude)
