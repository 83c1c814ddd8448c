"""Which arguments of an intrinsic's call the compiler would see as compile-time constants, on the simulator.

The twins get plain Python values, whatever the kernel wrote: ``block_dim=cuda.blockDim.x`` is an int there,
and a run-time value to the compiler, which refuses it. So each call's arguments are classified as numba-cuda
types them (measured with ``tiles.compile``), from the IR that numba-cuda's own bytecode front end makes of the
calling function: the same rules whether or not its source can be read (a file, ``exec``, ``python -c``).
"""

import bisect
import dis
import inspect
import threading

from ._backends import bytecode, simulated
from ._errors import host_only

_functions = {}  # code object → its _Function, or None where the front end does not take its bytecode
_verdicts = {}  # (spec, code, instruction offset) → {parameter: True (compile-time) or False (run-time)}
_classifying = threading.Lock()  # (a block's threads arrive at once, and numba-cuda's front end is not
#                                    thread-safe)


def compile_time_arguments(spec, frame):
    """{parameter: whether the compiler sees it as a compile-time constant} for the compile-time parameters
    that the call of ``spec`` running in ``frame`` (the simulated kernel's or device function's) gives, as far
    as its bytecode tells; the others are left out (and go unchecked)."""
    key = (spec, frame.f_code, frame.f_lasti)
    found = _verdicts.get(key)
    if found is None:
        with _classifying:
            found = _verdicts.get(key)
            if found is None:
                found = _verdicts[key] = _classify(spec, frame)
    return found


def _classify(spec, frame):
    function = _function(frame.f_code, frame.f_globals)
    call = function and function.call_at(frame.f_lasti)
    if call is None:  # (not a function's code, bytecode the compiler refuses, or a call of *args or **kwargs)
        return {}
    args, keywords = call
    try:
        given = spec.pysig.bind(*args, **dict(keywords)).arguments
    except TypeError:  # (the call's own bind reports it)
        return {}
    scope = _Scope(function.ir, frame)
    verdicts = {name: scope.compile_time(var) for name, var in given.items() if name in spec.consts}
    return {name: verdict for name, verdict in verdicts.items() if verdict is not None}


def _function(code, globals_):
    if code not in _functions:
        # A module's or a class's body is no kernel (and may be long): its calls go unchecked.
        compiled = code.co_flags & inspect.CO_OPTIMIZED and bytecode.bytecode_ir(code, globals_)
        _functions[code] = _Function(code, compiled) if compiled else None
    return _functions[code]


class _Function:
    """A function's `bytecode.BytecodeIR` and where its instructions start."""

    def __init__(self, code, ir):
        self.ir = ir
        self.starts = [instruction.offset for instruction in dis.get_instructions(code)]

    def call_at(self, lasti):
        """The call (positional variables, keyword variables) of the instruction running at ``lasti``, or None.

        ``lasti`` may be past the call's own offset, in its inline caches (Python 3.11 and 3.12)."""
        index = bisect.bisect_right(self.starts, lasti) - 1
        return self.ir.calls.get(self.starts[index]) if index >= 0 else None


class _Unknown(Exception):
    pass


class _Scope:
    """A function's variables, classified as numba-cuda types them; values as the running ``frame`` has them."""

    def __init__(self, ir, frame):
        self.ir, self.frame = ir, frame
        self.live = None  # (every block, while the tests of branches are read)
        self.live = self._live()

    def _live(self):
        """The blocks the function can reach: Numba prunes a branch whose test is a constant."""
        live, todo = set(), [self.ir.entry]
        while todo:
            block = todo.pop()
            if block in live:
                continue
            live.add(block)
            test, successors = self.ir.exits.get(block, (None, ()))
            if test is not None and len(successors) == 2 and self.compile_time(test):
                try:
                    successors = successors[:1] if self.value(test) else successors[1:]
                except _Unknown:
                    pass
            todo.extend(successors)
        return live

    def _sites(self, var):
        return [site for block, site in self.ir.definitions.get(var, ()) if self.live is None or block in self.live]

    def compile_time(self, var, seen=frozenset()):
        """True (a compile-time constant), False (a run-time value) or None (not known here) for the variable."""
        sites = self._sites(var)
        if var in seen or not sites:
            return None
        verdicts = [self._site(site, seen | {var}) for site in sites]
        verdict = _all(verdicts)
        if verdict and len(sites) > 1:  # constants assigned in several places are one only where all are equal
            try:
                values = [self._site_value(site) for site in sites]
            except _Unknown:
                return None
            return all(type(v) is type(values[0]) and v == values[0] for v in values)
        return verdict

    def _site(self, site, seen):
        kind = site[0]
        if kind in ("const", "global", "freevar"):
            return True  # a literal (CPython folds 2 * 64 and -1), a global, a builtin, a closure variable
        if kind == "arg":
            return False
        if kind in ("var", "unpack", "truth"):
            return self.compile_time(site[1], seen)
        if kind == "tuple":
            return _all(self.compile_time(item, seen) for item in site[1])
        if kind == "getattr":
            return self._attribute(site, seen)
        if kind in ("getitem", "static_getitem"):
            item = self._unpacked(site)
            if item is not None:  # (a, b = 128, n: a is 128)
                return self.compile_time(item, seen)
            # DIMS[0] of a tuple of constants is one; of a namedtuple, as its attributes, a run-time value.
            index = self.compile_time(site[2], seen) if kind == "getitem" else True
            known = _all([self.compile_time(site[1], seen), index])
            return known and self._kind(site, item=True)
        if kind == "computed":
            return False  # (2 * TPB, not FLAG, len(DIMS), int(TPB): Numba computes them at run time)
        return None

    def _unpacked(self, site):
        """The variable that ``a, b = x, y`` assigns to ``a`` (a static_getitem of the unpacked tuple), or None."""
        if site[0] != "static_getitem" or type(site[2]) is not int:
            return None
        unpacked = self._sites(site[1])
        if len(unpacked) != 1 or unpacked[0][0] != "unpack":
            return None
        packed = self._sites(unpacked[0][1])
        if len(packed) != 1 or packed[0][0] != "tuple" or not 0 <= site[2] < len(packed[0][1]):
            return None
        return packed[0][1][site[2]]

    def _attribute(self, site, seen):
        _, owner_var, attr = site
        if attr == "ndim":
            return True  # (Numba rewrites an array's ndim to a constant)
        base = self.compile_time(owner_var, seen)
        if not base:
            return base
        try:
            owner = self.value(owner_var)
        except _Unknown:
            return None
        if simulated.is_cuda_module(owner):
            return False  # cuda.blockDim.x, cuda.threadIdx.x, ...
        return self._kind(site)

    def _kind(self, site, item=False):
        """Of an attribute (or an ``item``) of a constant: Numba types a module's data and a namedtuple's fields
        as run-time values, a module's functions, a tuple's items and a description's sizes as constants."""
        try:
            owner, value = self.value(site[1]), self._site_value(site)
        except _Unknown:
            return None
        if isinstance(owner, tuple):
            return type(owner) is tuple if item else False
        refused = None if item else host_only(owner, site[2])
        if refused:  # (the compilers refuse it so)
            raise refused
        if inspect.ismodule(owner):
            return not isinstance(value, (int, float, complex, str, bytes, tuple))
        return None if item else True

    def value(self, var):
        """The value of a variable classified compile-time, as the running frame has it."""
        sites = self._sites(var)
        if not sites:
            raise _Unknown
        return self._site_value(sites[0])  # (where there are several, all are equal)

    def _site_value(self, site):
        kind = site[0]
        try:
            if kind == "const":
                return site[1]
            if kind == "global":
                for names in (self.frame.f_globals, self.frame.f_builtins):
                    if site[1] in names:
                        return names[site[1]]
            if kind in ("freevar", "arg"):
                return self.frame.f_locals[site[1]]
            if kind in ("var", "unpack"):
                return self.value(site[1])
            if kind == "truth":
                return bool(self.value(site[1]))
            if kind == "tuple":
                return tuple(map(self.value, site[1]))
            if kind == "getattr":
                return getattr(self.value(site[1]), site[2])
            if kind == "getitem":
                return self.value(site[1])[self.value(site[2])]
            if kind == "static_getitem":
                return self.value(site[1])[site[2]]
        except _Unknown:
            raise
        except Exception:  # (an attribute or an item it does not have, a value with no truth, ...)
            raise _Unknown from None
        raise _Unknown


def _all(verdicts):
    """False if any is False, else None if any is None, else True."""
    verdicts = list(verdicts)
    return False if False in verdicts else None if None in verdicts else True
