"""numba-cuda's bytecode front end (its compiler's first step) over a simulated kernel's code, in plain terms: what
the simulator reads to tell which arguments the compiler would see as compile-time constants (`_constness`)."""

import functools
import typing


class BytecodeIR(typing.NamedTuple):
    """A function's IR as numba-cuda's bytecode front end makes it (the compiler's first step, before its
    rewrites and type inference), in plain terms.

    ``definitions``: {variable: [(block, definition), ...]}, where a definition is one of
    ``("const", value)``, ``("global", name)`` (a module global or a builtin), ``("freevar", name)`` (a
    closure variable), ``("arg", name)``, ``("var", variable)``, ``("getattr", variable, attribute)``,
    ``("getitem", variable, index variable)``, ``("static_getitem", variable, index)``, ``("tuple",
    variables)``, ``("unpack", variable)`` (the sequence ``a, b = ...`` unpacks: its items are static_getitems
    of this), ``("truth", variable)`` (a branch's test of it), ``("computed",)`` (arithmetic, a comparison or
    a call: computed at run time) or ``("other",)``. A variable assigned again where the function always
    passes is a variable of its own (``n``, then ``n.1``).
    ``exits``: {block: (test variable or None, successors)}: a branch goes to the first successor where
    its test is true. ``entry``: the first block.
    ``calls``: {offset of a call instruction, as ``dis`` numbers it: (positional argument variables,
    ((keyword, variable), ...))}, or None for a call that spreads ``*args`` or ``**kwargs``.
    """

    definitions: dict
    exits: dict
    entry: int
    calls: dict


def bytecode_ir(code, globals_):
    """`BytecodeIR` of the function of ``code`` (its globals ``globals_``), or None where numba-cuda's front
    end does not take its bytecode (the compiler would refuse the function)."""
    import types as pytypes

    from numba.cuda.core import bytecode

    # Empty cells: the IR names a closure variable; its value is the running frame's, read where it is needed.
    closure = tuple(pytypes.CellType() for _ in code.co_freevars) or None
    function = pytypes.FunctionType(code, globals_, code.co_name, None, closure)
    interpreter = _recording_interpreter()
    try:
        identity = bytecode.FunctionIdentity.from_function(function)
        recorder = interpreter(identity)
        func_ir = recorder.interpret(bytecode.ByteCode(func_id=identity))
    except Exception:  # (bytecode it does not take: an exception kept in a variable, yield from, await, ...)
        return None
    return _plain_ir(func_ir, recorder.calls, bytecode._FIXED_OFFSET)


@functools.cache
def _recording_interpreter():
    """numba-cuda's Interpreter, recording which call instruction made each of the IR's calls."""
    from numba.cuda.core import interpreter, ir

    class Recording(interpreter.Interpreter):
        def __init__(self, func_id):
            super().__init__(func_id)
            self.made = {}  # offset of a call instruction, as numba-cuda numbers it → the call expressions it made
            self.dispatching = None

        def _dispatch(self, inst, kws):
            self.dispatching = inst
            try:
                return super()._dispatch(inst, kws)
            finally:
                self.dispatching = None

        def store(self, value, name, redefine=False):
            inst = self.dispatching  # (CALL, CALL_KW, CALL_FUNCTION[_KW|_EX], CALL_METHOD)
            if (
                inst is not None
                and inst.opname.startswith("CALL")
                and isinstance(value, ir.expr_types)
                and value.op == "call"
            ):
                self.made.setdefault(inst.offset, []).append(value)
            return super().store(value, name, redefine)

        @property
        def calls(self):
            """{id(call expression): (its instruction's offset, the expression)}, for instructions that made one."""
            return {id(made[0]): (offset, made[0]) for offset, made in self.made.items() if len(made) == 1}

    return Recording


def _plain_ir(func_ir, calls, shift):
    """`BytecodeIR` of numba-cuda's ``func_ir``; ``calls`` is `_recording_interpreter`'s, ``shift`` how far
    numba-cuda's instruction offsets are past ``dis``'s (it puts a NOP first)."""
    from numba.cuda.core import ir

    raw = {}
    for label, block in func_ir.blocks.items():
        for stmt in block.body:
            if isinstance(stmt, ir.assign_types):
                raw.setdefault(stmt.target.name, []).append((label, stmt.value))

    def is_bool(var):  # (the front end tests a branch's value with a call of the builtin bool)
        found = raw.get(var.name, ())
        return len(found) == 1 and isinstance(found[0][1], ir.global_types) and found[0][1].value is bool

    def plain(value):
        if isinstance(value, ir.var_types):
            return ("var", value.name)
        if isinstance(value, ir.const_types):
            return ("const", value.value)
        if isinstance(value, ir.global_types):
            return ("global", value.name)
        if isinstance(value, ir.freevar_types):
            return ("freevar", value.name)
        if isinstance(value, ir.arg_types):
            return ("arg", value.name)
        if not isinstance(value, ir.expr_types):
            return ("other",)
        if value.op == "getattr":
            return ("getattr", value.value.name, value.attr)
        if value.op == "getitem":
            return ("getitem", value.value.name, value.index.name)
        if value.op == "static_getitem":
            return ("static_getitem", value.value.name, value.index)
        if value.op == "build_tuple":
            return ("tuple", tuple(item.name for item in value.items))
        if value.op == "exhaust_iter":
            return ("unpack", value.value.name)
        if value.op in ("binop", "inplace_binop", "unary") or value.op == "call" and id(value) in calls:
            return ("computed",)
        if value.op == "call" and not value.kws and len(value.args) == 1 and is_bool(value.func):
            return ("truth", value.args[0].name)
        return ("other",)

    definitions = {name: [(label, plain(value)) for label, value in found] for name, found in raw.items()}
    found_calls = {}
    for found in raw.values():
        for _, value in found:
            if isinstance(value, ir.expr_types) and id(value) in calls:
                spread = value.vararg is not None or value.varkwarg is not None
                found_calls[calls[id(value)][0] - shift] = (
                    None if spread else (tuple(a.name for a in value.args), tuple((k, v.name) for k, v in value.kws))
                )
    exits = {}
    for label, block in func_ir.blocks.items():
        end = block.body[-1] if block.body else None
        if isinstance(end, ir.branch_types):
            exits[label] = (end.cond.name, (end.truebr, end.falsebr))
        elif isinstance(end, ir.jump_types):
            exits[label] = (None, (end.target,))
        else:
            exits[label] = (None, ())
    return BytecodeIR(definitions, exits, min(func_ir.blocks), found_calls)
