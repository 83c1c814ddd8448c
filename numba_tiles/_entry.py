"""What a rule makes of an intrinsic's call: an `Instance`, one C++ template instantiated, called from an entry point.

An entry point is ``extern "C" __device__ void symbol(...)`` calling one template. Each of its parameters
(`Instance.params`) is one of four kinds: a run-time argument of the call (`Arg`), a C++ expression passed as it
is (`Literal`), a member of a handle argument (`Member`), or the functor of a user's function with the values
passed along to it (`Function`). Rules make them (``numba_tiles.extending`` exports them); the spec mechanism
(`_spec`) types the call and lowers it from them, and `Instance.entry` renders the C++.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import TYPE_CHECKING, Any

from numba.cuda import types

from . import _dtypes

if TYPE_CHECKING:
    from ._callback import Callback
    from ._library import Header

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


@dataclasses.dataclass(frozen=True, kw_only=True)
class Instance:
    """One instantiation: ``template`` called from an ``extern "C" __device__`` entry point.

    ``header`` is a `Header` of the library it comes from; ``template`` its spelling, from
    ``header.template(...)``. ``params`` are the entry point's parameters, in order (`_entry`: an `Arg`, a
    `Literal`, a `Member` or a `Function` each). ``result`` is a scalar type, a tuple of them, or ``types.none``.
    The entry point takes every scalar by pointer and writes every result through a pointer,
    so that no type (half, bfloat16, complex) depends on a C calling convention shared by
    Numba and NVRTC; a 1-D array arrives as ``numba_tiles::array_ref<T>`` (data, size, stride in
    items), a 2-D one as ``numba_tiles::matrix_ref<T>`` (data, rows, cols, strides in items), a 3-D
    one as ``numba_tiles::batch_ref<T>`` (data, count, rows, cols, the three strides in items).
    nvJitLink inlines the entry point, after which these pointers are registers again.

    Example, continuing `numba_tiles.extending`'s::

        from numba.cuda import types

        instance = _rule("block_sum_of_squares", {"value": types.float32, "block_dim": (128, 1, 1)})
        assert instance.template == "mine::block_sum_of_squares<float, 128, 1, 1>"
        print(instance.entry())   # extern "C" __device__ void numba_tiles_block_sum_of_squares_...(...) {...}
    """

    intrinsic: str
    header: Header
    template: str
    result: NumbaType
    params: tuple[Param, ...]
    prelude: str = ""  # C++ declarations the template needs (a user op's functor)
    functions: tuple = ()  # (symbol, Python function, Numba signature, fastmath): compiled by Numba and linked in
    modules: tuple = ()  # LTO-IR another producer made (``numba.cuda.LTOIR``\ s: libmathdx's), linked in
    storage: str = ""  # the C++ type of its shared temp storage ("" for none)
    threads: int = 0  # the block's threads its code needs, when the rule fixes them (the kernel's launch bound)

    def param_type(self, name: str) -> NumbaType:
        """The entry type of the parameter ``name`` (an `Arg` or a `Member`).

        Example, continuing `Instance`'s::

            assert instance.param_type("value") == types.float32
        """
        return next(p.type for p in self.params if isinstance(p, (Arg, Member)) and p.name == name)

    @property
    def outputs(self) -> tuple:
        """The result's types, one a value the entry point writes: ``()``, ``(result,)``, or the tuple's.

        Example, continuing `Instance`'s::

            assert instance.outputs == (types.float32,)
        """
        if self.result is types.none:
            return ()
        return tuple(self.result) if isinstance(self.result, types.BaseTuple) else (self.result,)

    def _declarations(self) -> tuple[list[str], list[str]]:
        decls, args = [], []
        for p in self.params:
            if isinstance(p, Literal):
                args.append(p.cxx)
                continue
            name = p.name.replace(".", "_")  # (a handle's member)
            if isinstance(p, Function):
                decls.append(f"const void* {name}")
                args.append(f"{p.callback.functor}{{{name}}}")
                continue
            ty = p.type
            cxx = _dtypes.cxx(ty)
            if isinstance(ty, types.Array) and ty.ndim in (2, 3):
                parts = [f"{name}_{part}" for part in _REFS[ty.ndim][1]]
                decls += [f"{cxx}* {name}", *(f"long long {part}" for part in parts)]
                args.append(f"::numba_tiles::{_REFS[ty.ndim][0]}<{cxx}>{{{name}, {', '.join(parts)}}}")
            elif isinstance(ty, types.Array):
                decls += [f"{cxx}* {name}", f"long long {name}_size", f"long long {name}_stride"]
                args.append(f"::numba_tiles::array_ref<{cxx}>{{{name}, {name}_size, {name}_stride}}")
            else:
                decls.append(f"const {cxx}* {name}")
                args.append(f"*{name}")
        decls += [f"{_dtypes.cxx(ty)}* result{i}" for i, ty in enumerate(self.outputs)]
        return decls, args

    @property
    def symbol(self) -> str:
        """The name of the entry point, the same for every instance of one template with the same parameter types.

        Example, continuing `Instance`'s::

            assert instance.symbol.startswith("numba_tiles_block_sum_of_squares_")
        """
        # Named after the C++ template and the entry's parameter types, not the intrinsic, so
        # that spellings of one instantiation (block_sum and block_reduce with "+") share one
        # entry point, and a scalar and a one-item array (same template) do not.
        decls, _ = self._declarations()
        callbacks = "".join(p.callback.functor for p in self.params if isinstance(p, Function))
        origin = f"{self.header.library.name}/{self.header.name}:{self.template}({', '.join(decls)}){callbacks}"
        digest = hashlib.sha256(origin.encode()).hexdigest()[:16]
        base = self.template.split("<", 1)[0].rsplit("::", 1)[-1]
        return f"numba_tiles_{base}_{digest}"

    def entry(self, lines: bool = False) -> str:
        """The C++ entry point NVRTC compiles for this instance (after ``#include`` of its header).

        ``lines``: its call is marked (``#line``) as the line of the header that declares the
        template, so that a line table maps the inlined entry to a file a user can open, between
        the header's lines and the kernel's Python call line.

        Example, continuing `Instance`'s::

            assert instance.entry().startswith('extern "C" __device__ void numba_tiles_block_sum_of_squares_')
            assert "#line" in instance.entry(lines=True)
        """
        decls, args = self._declarations()
        call = f"{self.template}({', '.join(args)})"
        results = [f"*result{i}" for i in range(len(self.outputs))]
        if len(results) > 1:
            call = f"::cuda::std::tie({', '.join(results)}) = {call}"
        elif results:
            call = f"{results[0]} = {call}"
        line = f'#line {self.header.line(self.template)} "{self.header.path()}"\n' if lines else ""
        return f'extern "C" __device__ void {self.symbol}({", ".join(decls)}) {{\n{line}  {call};\n}}\n'

    @property
    def static_storage(self) -> str:
        """The C++ type of the static shared buffer this instance declares ("" if it has none or uses ``temp``): the
        storage of a call given no ``temp``.

        Example, continuing `Instance`'s::

            from dataclasses import replace

            own = replace(instance, params=(*instance.params, ext.Literal("temp", "::numba_tiles::own_storage{}")))
            assert own.static_storage == "mine::storage<float, 128, 1, 1>"   # a call given no temp
            assert instance.static_storage == ""                             # (the rule's, before the call's temp)
        """
        return self.storage if Literal("temp", OWN_STORAGE) in self.params else ""


# The C++ view of a 2-D and a 3-D array, and its fields after the data (as `numba_cuda._pass` passes them).
_REFS = {
    2: ("matrix_ref", ("rows", "cols", "row_stride", "col_stride")),
    3: ("batch_ref", ("count", "rows", "cols", "batch_stride", "row_stride", "col_stride")),
}

OWN_STORAGE = "::numba_tiles::own_storage{}"
