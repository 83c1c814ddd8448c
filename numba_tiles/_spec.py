"""The one mechanism: an intrinsic spec becomes Numba typing, lowering, C++ and a simulator call.

An intrinsic is declared once, on its public function (see ``block.py``)::

    @intrinsic(consts={"op": ops.parse, "block_dim": _params.block_dim},
               rule=_reduce_rule, simulate=simulator.block_reduce)
    def block_reduce(value, op, *, block_dim, num_valid=None):
        '''docs; a line ``{{block_dim}}`` is replaced by the shared text of that parameter'''

Parameters named in ``consts`` are compile-time constants (literals or module globals), parsed
by the given function at typing; the others are run-time values; ``fixed`` pins parameters the
function does not take (``block_sum`` is ``block_reduce`` with ``op="+"``); ``per_thread`` names
the thread-local arrays of ``items_per_thread`` items, whose length is checked wherever it is
known (a ``cuda.local.array`` of constant length when compiled, every array on the simulator).
``rule`` turns the parsed arguments into an `Instance`: a template of a `Header` of a `Library`,
instantiated, with an ``extern "C"`` entry point. ``simulate`` is the pure-Python twin the simulator runs. An
intrinsic with a ``temp`` parameter takes shared temp storage: its template's last argument is
the user's ``temp`` array, or, when it is omitted, ``own_storage`` (a static buffer).
Lowering hands the instance to the kernel's pending program (`_programs.for_call`), links that
program's LTO-IR into the kernel and calls the entry point; nvJitLink links and inlines it
with Numba's own code. Everything compiler-specific goes through `_backends` (`Spec.lower` takes either
compiler's `_backends.Call`). On the simulator the
same checks run on the call's Python values, after `_constness.compile_time_arguments` has said
which of them the compiler would see as compile-time constants.
"""

import dataclasses
import difflib
import functools
import inspect
import math
import re
import sys
from collections.abc import Callable, Mapping

from numba.cuda import types

from . import _backends, _compile, _constness, _dtypes, _params, _programs, simulator
from ._backends import numba_cuda
from ._entry import OWN_STORAGE, Arg, Function, Instance, Literal, Member, NumbaType
from ._errors import UNKNOWN, Origin, error, host_only
from ._target import Target

Parser = Callable[[str, object], object]  # (intrinsic, value) → the parsed compile-time argument, or a TilesError
Rule = Callable[[str, dict], "Instance"]  # (intrinsic, parsed arguments) → its instantiation
Simulate = Callable[["Instance", dict], object]  # (instance, the call's Python values) → what the thread gets


_TEMP_FIX = "pass cuda.shared.array(TEMP_BYTES, uint8), with TEMP_BYTES from tiles.temp_bytes(...)"


def _with_temp(intrinsic: str, instance: Instance, temp: NumbaType) -> Instance:
    """``instance`` taking its storage from the user's ``temp`` (a 1-D array) or, if None, its own static buffer."""
    assert instance.storage, f"{intrinsic} takes temp but its rule gave no storage"
    if temp is not None and not (isinstance(temp, types.Array) and temp.ndim == 1):
        raise error(intrinsic, f"temp must be a 1-D array, got {temp}", _TEMP_FIX)
    if temp is None:
        return dataclasses.replace(instance, params=instance.params + (Literal("temp", OWN_STORAGE),))
    _dtypes.element(intrinsic, "temp", temp, fix=_TEMP_FIX)  # (shared bytes: no cast of items helps)
    return dataclasses.replace(instance, params=instance.params + (Arg("temp", temp),))


def _left_out(ty: NumbaType) -> bool:
    """An argument not given, or given as None (``num_valid=None``): the entry gets its default."""
    return isinstance(ty, (types.Omitted, types.NoneType))


class _NotConstant(Exception):
    pass


def _constant(ty: NumbaType) -> object:
    """The Python value behind a Numba type that carries one (a literal, a tuple of them, a global function)."""
    if isinstance(ty, types.Omitted):
        return ty.value
    if isinstance(ty, types.Literal):
        return ty.literal_value
    if isinstance(ty, types.BaseTuple):
        return tuple(_constant(t) for t in ty)
    if isinstance(ty, types.Function):
        return ty.typing_key
    if isinstance(ty, types.Dispatcher):  # a @cuda.jit(device=True) function
        return ty.dispatcher
    if isinstance(ty, types.NoneType):
        return None
    raise _NotConstant


def _typed_as_constant(value: object) -> bool:
    """Whether Numba types ``value`` (a literal's, a global's or a closure variable's) as one that `_constant`
    reads back: a float, a namedtuple or an array is typed as a run-time value, though the IR holds it."""
    if type(value) is tuple:
        return all(map(_typed_as_constant, value))
    return value is None or callable(value) or types.maybe_literal(value) is not None


# Values `Spec._example` tries, in order, for a compile-time parameter's example (block_dim=256 first).
_EXAMPLES = (256, 4, True, "+", (64, 64, 32))


class Spec:
    """An intrinsic's declaration: its Python signature, which parameters are compile-time, its rule."""

    def __init__(
        self,
        func: Callable,
        consts: Mapping[str, Parser],
        rule: Rule,
        simulate: Simulate | None,
        fixed: Mapping[str, object],
        per_thread: tuple[str, ...],
    ) -> None:
        self.name = func.__name__
        self.consts = consts
        self.rule = rule
        self.simulate = simulate
        self.fixed = fixed
        self.per_thread = per_thread
        self.pysig = inspect.signature(func)
        unknown = set(consts) - set(self.pysig.parameters) - set(fixed)
        assert not unknown, f"{self.name}: consts {unknown} are not parameters"
        assert set(per_thread) <= set(self.pysig.parameters) and (not per_thread or "items_per_thread" in consts)

    def _bind(self, args, kwargs, omitted):
        """Arguments by name, the fixed ones included; ``omitted(default)`` stands for each one not given."""
        call_as = f"call it as tiles.{self.name}{self.pysig}"
        # Before Python's bind, which would report a required block_dim missing, not blockdim unknown.
        keywords = [n for n, p in self.pysig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        for name in kwargs:
            if name not in keywords:
                close = (
                    difflib.get_close_matches(name, keywords, n=1, cutoff=0.75)
                    or [k for k in keywords if k.startswith(name)][:1]
                )  # (items → items_per_thread, not temp)
                raise error(
                    self.name,
                    f"unknown keyword argument {name!r}" + (f" (did you mean {close[0]}?)" if close else ""),
                    call_as,
                )
        try:
            bound = self.pysig.bind(*args, **kwargs)
        except TypeError as exc:
            raise error(self.name, str(exc), call_as) from None
        given = bound.arguments
        return {
            **{n: given[n] if n in given else omitted(p.default) for n, p in self.pysig.parameters.items()},
            **self.fixed,
        }

    def _parse(self, name, value):
        return self.consts[name](self.name, value)

    def _not_constant(self, name):
        return error(
            self.name,
            f"{name} must be a compile-time constant, got a run-time value",
            "write it as a literal or a module-level global" + self._example(name),
        )

    def _example(self, name):
        """``", e.g. name=value"`` for a value that ``name``'s parser accepts, or "" where none of the usual ones
        is: its parser's own example, the parameter's default, else the first of `_EXAMPLES` it takes (a fix's
        example of another kind, say warp_size=256, would send the user to the next error)."""
        default = getattr(self.pysig.parameters.get(name), "default", None)
        candidates = [getattr(self.consts[name], "example", None), default, *_EXAMPLES]
        for value in candidates:
            if value is None or value is inspect.Parameter.empty:
                continue
            try:
                self._parse(name, value)
            except Exception:  # (refused: a TilesError, or a parser that takes values of another shape)
                continue
            return f", e.g. {name}={value!r}"
        return ""

    def resolve_types(self, arguments: dict[str, NumbaType], origins: Mapping | None = None) -> Instance:
        """Typing: Numba types of the arguments (literal where constant, Omitted where not given) → `Instance`.

        ``origins``: {name: `_errors.Origin`} of the arguments, where the kernel's IR is at hand."""
        origins = origins or {}
        resolved = {}
        for name, ty in arguments.items():
            if name in self.fixed:
                resolved[name] = self._parse(name, ty)
            elif name not in self.consts:
                resolved[name] = None if isinstance(ty, (types.Omitted, types.NoneType)) else ty
            else:
                try:
                    value = _constant(ty)
                except _NotConstant:
                    known = origins.get(name, Origin()).value
                    if known is not UNKNOWN:  # a constant Numba types as a run-time value (block_dim=128.0)
                        self._parse(name, known)  # its parser's error where it is wrong, as on the simulator
                    raise self._not_constant(name) from None
                resolved[name] = self._parse(name, value)
        instance = self._instance(resolved)
        self._check_lengths(resolved, {n: o.length for n, o in origins.items() if o.length is not None})
        return instance

    def _instance(self, resolved):
        instance = self.rule(self.name, resolved)
        return _with_temp(self.name, instance, resolved["temp"]) if "temp" in resolved else instance

    def _check_lengths(self, resolved, lengths):
        """A thread-local array shorter than items_per_thread (``lengths``: {name: length}, where known)."""
        items = resolved.get("items_per_thread")
        for name in self.per_thread:
            if items is not None and lengths.get(name, items) < items:
                raise error(
                    self.name,
                    f"{name} has {lengths[name]} items but items_per_thread={items}",
                    f"make it at least items_per_thread long, e.g. cuda.local.array({items}, dtype)",
                )

    def resolve_values(self, *args: object, **kwargs: object) -> tuple[Instance, dict[str, object]]:
        """Typing from the run-time arguments' Python values (the simulator's) or Numba types.

        Returns (`Instance`, parsed arguments)."""
        return self._resolve_values(args, kwargs, {})

    def _resolve_values(self, args, kwargs, compile_time):
        """`resolve_values`, where ``compile_time`` is {name: whether the compiler would see that argument as a
        compile-time constant} (`_constness.compile_time_arguments`), for those known."""
        arguments = self._bind(args, kwargs, omitted=lambda default: default)
        parsed = {}
        for name, value in arguments.items():
            if name not in self.consts:
                parsed[name] = value
                continue
            if compile_time.get(name) is False:
                raise self._not_constant(name)
            parsed[name] = self._parse(name, value)
            if compile_time.get(name) and not _typed_as_constant(value):
                raise self._not_constant(name)  # (as compiled: parsed, then refused)
        typed = {
            n: v if n in self.consts or v is None or isinstance(v, types.Type) else numba_cuda.typeof(v)
            for n, v in parsed.items()
        }
        instance = self._instance(typed)
        shapes = {n: getattr(parsed[n], "shape", None) for n in self.per_thread}
        self._check_lengths(
            parsed, {n: shape[0] for n, shape in shapes.items() if isinstance(shape, tuple) and len(shape) == 1}
        )
        return instance, parsed

    def typing_signature(
        self, args: tuple, kws: dict, origins: tuple | None = None, debug: bool | None = None
    ) -> object:
        """The call's signature for the types ``args`` and ``kws`` (numba.cuda's; ``origins``: `_errors.call_site`'s,
        or None; ``debug``: whether the kernel is a debug build, by default numba-cuda's flags say)."""
        if debug is None:
            _, _, debug = numba_cuda.target_flags()
        if debug:
            # On an H200 (CUDA 13.0), a -G kernel that called block_reduce then block_scan stored
            # blockIdx.x where it stored the sum: after the second call, ptxas's debug code stored
            # the register it had just reused for blockIdx.x, not the one that kept the sum (the PTX
            # was right; our LTO-IR built without -G changed nothing).
            raise error(
                self.name,
                "debug builds (debug=True) of kernels that call intrinsics are refused: "
                "ptxas's debug code for such a kernel loses values that live across an intrinsic's "
                "call (wrong results, seen with CUDA 13.0)",
                "build with lineinfo=True instead (the SASS maps to your Python lines and the C++: "
                "profilers and cuda-gdb step by line), or run the kernel on Numba's simulator "
                "(NUMBA_ENABLE_CUDASIM=1) to debug its Python with pdb",
            )
        arguments = self._bind(args, kws, omitted=types.Omitted)
        instance = self.resolve_types(
            arguments, None if origins is None else self.pysig.bind(*origins[0], **origins[1]).arguments
        )
        entry = {p.name: p.type for p in instance.params if isinstance(p, Arg)}
        # Numba casts each run-time argument to the formal type: make it the entry point's.
        formal = [
            arguments[n] if n in self.consts or _left_out(arguments[n]) or n not in entry else entry[n]
            for n in self.pysig.parameters
        ]
        # Lowering gets the arguments folded in declaration order, omitted ones as Omitted(default).
        # A required keyword-only parameter after one with a default (op="+", *, block_dim) is
        # given a placeholder default there: the call was bound above, so it is never used.
        params, seen_default = [], False
        for p in self.pysig.parameters.values():
            seen_default |= p.default is not p.empty
            default = None if seen_default and p.default is p.empty else p.default
            params.append(p.replace(kind=p.POSITIONAL_OR_KEYWORD, default=default))
        positional = self.pysig.replace(parameters=params)
        return numba_cuda.signature(instance.result, formal, positional)

    def _threads(self, instance, arguments):
        """The block the call's code needs, if known at compile time: the kernel's launch bound."""
        if instance.threads:
            return instance.threads
        if "block_dim" in self.consts:
            # The launch's block shape is a constant of the call: compile the kernel for it, so
            # that ptxas caps its registers to fit (a 1000-thread sort otherwise fails to launch).
            given = self.fixed["block_dim"] if "block_dim" in self.fixed else _constant(arguments["block_dim"])
            return math.prod(self._parse("block_dim", given))
        return 0

    def lower(self, call: _backends.Call) -> object:
        """Lower one call of the intrinsic, by whichever compiler holds it (``call``: its `_backends.Call`): resolve
        the instance, bound the kernel's threads, link the programs and pass each entry parameter."""
        arguments = call.arguments()
        instance = self.resolve_types({**arguments, **self.fixed})
        threads = self._threads(instance, arguments)
        if threads:
            call.bound_threads(threads)
        cc, lineinfo = call.target()
        for code in _linked(instance, Target.for_lowering(cc, lineinfo), call):
            call.link(code)
        if instance.header.library.arch_specific or any(m in _programs.arch_specific for m in instance.modules):
            asked = call.link_arch_specific()
            if asked:
                raise _programs.arch_specific_error(asked)
        passed = []
        for p in instance.params:
            if isinstance(p, Literal):
                continue
            if isinstance(p, Member):
                passed.append((p.type, call.member(p.handle, p.member)))
                continue
            omitted = p.name not in arguments or _left_out(arguments[p.name])
            if isinstance(p, Function):
                call.link(p.callback.code(cc))
                passed.append((types.voidptr, call.callback(p.name, p.callback, omitted)))
            else:
                passed.append((p.type, call.constant(p.type, p.default) if omitted else call.value(p.name, p.type)))
        return call.call_entry(instance.symbol, passed, instance.outputs, instance.result)


def _linked(instance, target, call):
    """The LTO-IR a call links, by its compiler (``call``: its `_backends.Call`; numba-cuda-mlir compiles the user's
    functions there): its program (grouped by the call's code library), its user functions, its modules."""
    yield _programs.for_call(instance, target, call.code_library())
    for symbol, pyfunc, signature, fastmath in instance.functions:
        yield _compile.python_function(symbol, pyfunc, signature, target.cc, fastmath, call.mlir)
    yield from instance.modules


def _check_temp(intrinsic, instance, temp):
    """The simulator's twin of the GPU's check of a ``temp`` buffer (see common.cuh)."""
    from ._shared_memory import storage_need

    need = storage_need(instance)
    if temp.nbytes < need or not temp.flags.c_contiguous:
        raise error(
            intrinsic,
            f"temp holds {temp.nbytes} bytes{'' if temp.flags.c_contiguous else ', strided'}; "
            f"this call needs {need} contiguous bytes",
            "allocate the size tiles.temp_bytes(...) gives",
        )


def _document(doc):
    """A docstring whose ``{{name}}`` lines are the shared text of that parameter (`_params.DOCS`)."""
    return re.sub(r"\{\{(\w+)\}\}", lambda m: _params.DOCS[m[1]], doc or "")


def intrinsic(
    *,
    consts: Mapping[str, Parser],
    rule: Rule,
    simulate: Simulate | None,
    fixed: Mapping[str, object] | None = None,
    per_thread: tuple[str, ...] = (),
) -> Callable[[Callable], Callable]:
    """Declare the decorated function (its signature and docstring) as an intrinsic (see this module's doc).

    ``consts``: {parameter: parser} of the compile-time parameters; ``rule(name, args)`` gives the
    `Instance`; ``simulate(instance, args)``: the simulator's twin; ``fixed``: {parameter: value}
    pinned for a parameter the function does not take; ``per_thread``: the parameters that take a
    thread-local array of ``items_per_thread`` items (an array shorter than that is refused). Public as
    ``numba_tiles.extending.intrinsic``.

    Example, continuing `numba_tiles.extending`'s::

        from numba import cuda
        import numba_tiles as tiles

        @ext.intrinsic(consts={"block_dim": ext.block_dim}, rule=_rule, simulate=_simulate)
        def block_sum_of_squares(value, *, block_dim, temp=None):
            "The sum of the block's values squared, valid in thread 0."

        @cuda.jit
        def sums_of_squares(x, out):
            s = block_sum_of_squares(x[cuda.grid(1)], block_dim=128)
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = s

        cubin = tiles.compile(sums_of_squares, "void(float32[::1], float32[::1])")   # no GPU needed
    """

    def decorate(declaration):
        declaration.__doc__ = _document(declaration.__doc__)
        spec = Spec(declaration, consts, rule, simulate, fixed or {}, tuple(per_thread))

        @functools.wraps(declaration)
        def call(*args, **kwargs):
            # Outside a compiled kernel this is the simulator's implementation.
            if spec.simulate is None:
                raise error(
                    spec.name,
                    "it has no simulator twin (its declaration gives simulate=None)",
                    "run it compiled (unset NUMBA_ENABLE_CUDASIM), or declare it with simulate=",
                )
            compile_time = _constness.compile_time_arguments(spec, sys._getframe(1))
            simulator.note_call(sys._getframe(1))
            instance, arguments = spec._resolve_values(args, kwargs, compile_time)
            if arguments.get("temp") is not None:
                _check_temp(spec.name, instance, arguments["temp"])
            return spec.simulate(instance, arguments)

        call.spec = spec
        for backend in _backends.registered():
            backend.register(call, spec.name, spec.pysig, spec.typing_signature, spec.lower)
        return call

    return decorate


# ---- Descriptions: objects made at module level whose methods are intrinsics bound to them -------------


class method:
    """Declare a description's method (``def load_a(self, src, tile, ...)`` in its class) as an intrinsic
    bound to each description: ``mm.load_a`` is the intrinsic ``Matmul.load_a`` whose parameter ``mm`` is
    ``mm`` (``consts``, ``rule``, ``simulate`` as for `intrinsic`; ``fixed``: {parameter: function of the
    description} pinned for each, e.g. ``{"block_dim": lambda mm: mm.block_dim}``).
    Public as ``numba_tiles.extending.method``, with `description`.

    Example, continuing `numba_tiles.extending`'s::

        import math
        from numba import cuda
        import numba_tiles as tiles

        @ext.description(constants=("threads",))
        class Squares:
            "Sums of squares over a block of ``block_dim`` threads."

            def __init__(self, block_dim):
                self.block_dim = ext.block_dim("Squares", block_dim)
                self.threads = math.prod(self.block_dim)

            def __eq__(self, other):
                return isinstance(other, Squares) and other.block_dim == self.block_dim

            def __hash__(self):
                return hash(self.block_dim)

            @ext.method(fixed={"block_dim": lambda squares: squares.block_dim}, rule=_rule, simulate=_simulate)
            def total(self, value, *, temp=None):
                "The sum of the block's values squared, valid in thread 0."

        SQUARES = Squares(128)   # at module level

        @cuda.jit
        def sums_of_squares(x, out):
            s = SQUARES.total(x[cuda.grid(1)])
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = s

        cubin = tiles.compile(sums_of_squares, "void(float32[::1], float32[::1])")   # no GPU needed
    """

    def __init__(
        self,
        *,
        rule: Rule,
        simulate: Simulate | None,
        consts: Mapping[str, Parser] | None = None,
        fixed: Mapping[str, Callable[[object], object]] | None = None,
    ) -> None:
        self.consts, self.rule, self.simulate, self.fixed = consts or {}, rule, simulate, fixed or {}

    def __call__(self, declaration):
        self.declaration = declaration
        self.__doc__ = declaration.__doc__
        return self

    def __set_name__(self, owner, name):
        self.name, self.owner = name, owner.__name__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        # Bound once a description (kept in its __dict__, which then shadows this non-data descriptor).
        bound = obj.__dict__[self.name] = self.bind(obj)
        return bound

    def bind(self, obj: object) -> Callable:
        """The intrinsic ``<class>.<name>`` with ``mm`` = ``obj``: what ``obj.<name>`` is (the description binds each
        of its methods when it is made).

        Example, continuing `method`'s::

            total = Squares.total.bind(Squares(256))
            assert total.__name__ == "Squares.total"
        """
        signature = inspect.signature(self.declaration)
        stand_in = functools.wraps(self.declaration)(lambda *args, **kwargs: None)
        setattr(stand_in, "__signature__", signature.replace(parameters=list(signature.parameters.values())[1:]))
        stand_in.__name__ = stand_in.__qualname__ = f"{self.owner}.{self.name}"
        del stand_in.__wrapped__  # (inspect would follow it back to the signature with self)
        consts = {"mm": lambda intrinsic, value: value, **self.consts}
        for param in self.fixed:
            consts.setdefault(param, lambda intrinsic, value: value)
        return intrinsic(
            consts=consts,
            rule=self.rule,
            simulate=self.simulate,
            fixed={"mm": obj, **{p: f(obj) for p, f in self.fixed.items()}},
        )(stand_in)


def description(*, constants: tuple[str, ...] = ()) -> Callable[[type], type]:
    """Make module-level instances of the decorated class usable in kernels: its `method`\\ s are intrinsics
    bound to the instance, and the attributes named in ``constants`` (ints) compile-time constants. Two equal
    instances are one description: define ``__eq__`` and ``__hash__``, or a ``_key()`` method (a tuple of what
    the instance describes) from which the class gets both. Public as
    ``numba_tiles.extending.description``; see `method`.

    Example, continuing `method`'s::

        assert Squares(128) == SQUARES   # one description

        @cuda.jit
        def mean_squares(x, out):
            s = SQUARES.total(x[cuda.grid(1)])
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = s / SQUARES.threads   # a compile-time constant

        cubin = tiles.compile(mean_squares, "void(float32[::1], float32[::1])")
    """

    def register(cls):
        methods = {name for name in dir(cls) if isinstance(inspect.getattr_static(cls, name, None), method)}

        cls._kernel_names = frozenset(constants) | frozenset(methods)  # (what kernels read of an instance)

        def attribute(obj, name):
            if name in cls._kernel_names:
                return getattr(obj, name)
            refused = host_only(obj, name)  # (our error, not the compiler's unknown attribute)
            if refused:
                raise refused
            return None

        init = cls.__init__

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            for name in methods:  # (bound now: Numba's typing finds intrinsics registered before a compile)
                getattr(self, name)

        cls.__init__ = __init__
        if hasattr(cls, "_key"):
            cls.__eq__ = lambda self, other: type(other) is type(self) and self._key() == other._key()
            cls.__hash__ = lambda self: hash(self._key())
        for backend in _backends.registered():
            backend.register_description(cls, attribute)
        return cls

    return register
