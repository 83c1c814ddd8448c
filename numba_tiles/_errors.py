"""The one error type for misuse of an intrinsic, and where the call being typed stands (for its message) and
what its arguments are made of (for checks no type tells), found alike in both compilers' type inference."""

from dataclasses import dataclass


class TilesError(TypeError):
    """Bad input to an intrinsic, raised at compile time (on the simulator: at the call).

    The first line of its message names the intrinsic, what was wrong and the fix, e.g.
    ``tiles.block_reduce: op '%' is not supported. Fix: use one of '+', '*', 'min', ...``; raised
    while a kernel compiles (numba-cuda's or numba-cuda-mlir's), the message goes on with the file, line and
    source of the call.

    It is a Python ``TypeError``, not a Numba ``TypingError``: numba-cuda lets an
    exception that is not its own leave the compiler as it is, so ``tiles.compile``, a kernel's
    first launch and ``kernel.compile(...)`` all raise it with its own message first (Numba would
    bury a ``TypingError`` of ours under its list of candidate implementations). Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def bad(x, out):
            out[0] = tiles.block_reduce(x[cuda.grid(1)], "&", block_dim=128)

        try:
            tiles.compile(bad, "void(float32[:], float32[:])")
        except tiles.TilesError as e:
            assert str(e).startswith("tiles.block_reduce: op '&' needs an integer dtype")
    """


def error(intrinsic, problem, fix):
    """The `TilesError` for ``intrinsic``: what was wrong and how to fix it, for a rule to raise.

    Example::

        from numba_tiles import extending as ext

        e = ext.error("block_top", "k is 0", "pass k=1 or more")
        assert str(e) == "tiles.block_top: k is 0. Fix: pass k=1 or more."
    """
    return TilesError(f"tiles.{intrinsic}: {problem}. Fix: {fix}.")


def host_only(obj, name):
    """The error for a kernel's read of ``obj.name``, an attribute of a description (`extending.description`) that
    only the host has (a kernel has its sizes and methods, ``type(obj)._kernel_names``), or None where a kernel has
    it, ``obj`` is no description or has no such attribute. The compilers and the simulator raise the same one."""
    names = getattr(type(obj), "_kernel_names", None)
    if names is None or name in names or name.startswith("_") or not hasattr(obj, name):
        return None
    kind = type(obj).__name__
    sizes = sorted(n for n in names if isinstance(getattr(obj, n, None), int))
    fix = f"read it in the module (a global the kernel reads), or one of its sizes: {', '.join(sizes)}"
    threads = getattr(obj, "threads", None)
    if name == "block_dim" and isinstance(threads, int) and getattr(obj, name) == (threads, 1, 1):
        fix = f"pass block_dim={kind.lower()}.threads (the same block, ({threads}, 1, 1))"
    return error(f"{kind}.{name}", f"a kernel has a {kind}'s sizes and methods; {name} is the host's", fix)


def typing_site(func, propagate, call_constraint):
    """The call of ``func`` a compiler's type inference is typing now, as ``(constraint, typeinfer, location)``, or
    None: found by walking up the Python frames to the one running ``propagate`` (its ``ConstraintNetwork
    .propagate``, numba-cuda's or numba-cuda-mlir's copy), whose ``constraint`` (a ``call_constraint``: the call's
    IR variables and ``loc``) calls ``func``, and whose ``typeinfer`` holds the function's IR and types;
    ``location`` is the call's file, line, function and source, for the end of a `TilesError`."""
    import linecache
    import sys

    code = getattr(propagate, "__code__", None)
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    constraint = frame.f_locals.get("constraint") if frame is not None else None
    if not isinstance(constraint, call_constraint):
        return None
    typeinfer = frame.f_locals.get("typeinfer")
    try:
        if typeinfer.typevars[constraint.func].getone().typing_key is not func:
            return None
    except Exception:  # (not typed yet, ambiguous, or not a function)
        return None
    loc = constraint.loc
    function = getattr(getattr(typeinfer, "func_id", None), "func_qualname", "?")
    source = linecache.getline(loc.filename, loc.line).strip()
    return (
        constraint,
        typeinfer,
        f'File "{loc.filename}", line {loc.line}, in {function}:' + (f"\n    {source}" if source else ""),
    )


UNKNOWN = object()  # an `Origin`'s value where the IR does not hold it


@dataclass(frozen=True)
class Origin:
    """What the kernel's IR says of one argument: ``value``, where it is a literal, a global or a closure
    variable (else `UNKNOWN`), and ``length``, where it is ``cuda.local.array(N, dtype)`` with N constant."""

    value: object = UNKNOWN
    length: int = None


@dataclass(frozen=True)
class CallSite:
    """The call being typed: ``location`` (file, line, function and source, for an error message) and
    ``origins`` (the `Origin` of each positional argument, in a tuple, and of each keyword one, in a dict), or None."""

    location: str
    origins: tuple


def call_site(func, propagate, call_constraint, ir, local_array):
    """The call of ``func`` being typed (`typing_site`'s arguments) as a `CallSite`, or None; ``ir`` is that
    compiler's IR module and ``local_array`` its ``cuda.local.array``."""
    site = typing_site(func, propagate, call_constraint)
    if site is None:
        return None
    constraint, typeinfer, location = site
    if constraint.vararg is not None:
        return CallSite(location, None)

    def origin(var):
        return _origin(typeinfer, ir, local_array, var)

    keywords = {name: origin(var) for name, var in constraint.kws}
    return CallSite(location, (tuple(map(origin, constraint.args)), keywords))


def _type_of(typeinfer, name):
    try:
        return typeinfer.typevars[name].getone()
    except Exception:  # (not typed yet, or ambiguous)
        return None


def _origin(typeinfer, ir, local_array, var):
    try:
        found = typeinfer.func_ir.get_definition(var)
    except Exception:  # (defined more than once: a run-time value)
        return Origin()
    if isinstance(found, (ir.Const, ir.Global, ir.FreeVar)):
        return Origin(value=found.value)
    if (
        isinstance(found, ir.Expr)
        and found.op == "call"
        and getattr(_type_of(typeinfer, found.func.name), "typing_key", None) is local_array
    ):
        shape = found.args[0] if found.args else dict(found.kws).get("shape")
        ty = shape is not None and _type_of(typeinfer, shape.name)
        if any(c.__name__ == "BaseTuple" for c in type(ty).__mro__) and len(ty) == 1:  # (either compiler's types)
            ty = ty[0]
        length = getattr(ty, "literal_value", None)
        if type(length) is int:
            return Origin(length=length)
    return Origin()
