"""The parameters of an intrinsic's entry point (`Instance.params`): what each passes the C++ template, and how.

An entry point is ``extern "C" __device__ void symbol(...)`` calling one template. Each of its parameters is one
of four kinds: a run-time argument of the call (`Arg`), a C++ expression passed as it is (`Literal`), a member of
a handle argument (`Member`), or the functor of a user's function with the values passed along to it
(`Function`). Rules make them (``numba_tiles.extending`` exports them); the spec mechanism renders the C++,
types the call and lowers it from them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._callback import Callback

NumbaType = Any  # a Numba type (numba.cuda.types): Numba ships no type information


@dataclasses.dataclass(frozen=True)
class Arg:
    """A run-time value the entry point takes, of Numba type ``type``: the call's argument ``name``, or ``default``
    where the call leaves it out (always, for a name the intrinsic does not take: an op's identity). A scalar
    arrives by pointer, an array as its data, sizes and strides (see `Instance`).

    Example::

        from numba.cuda import types
        from numba_tiles import extending as ext

        params = (ext.Arg("value", types.float32), ext.Arg("num_valid", types.int32, 0))   # num_valid=0 if left out
    """

    name: str
    type: NumbaType
    default: object = None


@dataclasses.dataclass(frozen=True)
class Literal:
    """A C++ expression the template gets as it is, with no entry parameter (named ``name`` for the rule's own use:
    the static temp storage, the launch's dynamic shared memory).

    Example::

        from numba_tiles import extending as ext

        shared = ext.Literal("shared", "::numba_tiles::dynamic_shared<unsigned char>()")
    """

    name: str
    cxx: str


@dataclasses.dataclass(frozen=True)
class Member:
    """Member ``member`` of the handle argument ``handle`` (a value of a `numba_cuda.Handle` type, such as
    ``tiles.Matmul.operands``'), of Numba type ``type``: a launch passes it as that type says.

    Example::

        from numba.cuda import types
        from numba_tiles import extending as ext

        c = ext.Member("ops", "c", types.Array(types.float32, 2, "A"))   # the member c of the argument ops
    """

    handle: str
    member: str
    type: NumbaType

    @property
    def name(self) -> str:
        """``handle.member``: how the entry point names the parameter.

        Example, continuing `Member`'s::

            assert c.name == "ops.c"
        """
        return f"{self.handle}.{self.member}"


@dataclasses.dataclass(frozen=True)
class Function:
    """A user's function the template's code calls (a `Callback`: an epilogue): its functor, given the call's
    argument ``name`` (a tuple of run-time values, or None) as the values passed along to it.

    Example::

        from numba.cuda import types
        from numba_tiles import extending as ext
        from numba_tiles._callback import Callback

        def scaled(value, row, col, factor):   # (the Python function of a user's @cuda.jit(device=True) epilogue)
            return value * factor

        # an epilogue of a float32 item at (row, col), passed the call's epilogue_args: one float32
        epilogue = ext.Function("epilogue_args", Callback(scaled, types.float32, 2, (types.float32,)))
    """

    name: str
    callback: Callback


Param = Arg | Literal | Member | Function
