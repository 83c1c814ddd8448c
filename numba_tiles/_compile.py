"""C++ → LTO-IR with NVRTC (through ``cuda.core.Program``), through the memo and the disk cache; and `compile`.

Lowering does not compile: each call site puts its instance into the pending program of the
code library being lowered (a kernel or a device function), one per `Target` and `Library`;
that program compiles all of them at once when Numba first links the kernel, so a kernel costs
one NVRTC run per library it uses, and the program includes only the headers its instances
use. An instance already given to a program in this process is reused from it, so programs
never overlap: each entry point is defined once in any link, and a kernel links only the
instances it uses. Each program is stored in the disk cache (`numba_tiles.cache`) under a
digest of everything that changes its bytes (`cache.components`).
"""

import atexit
import contextlib
import functools
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import weakref

from . import _library, _link, _mlir, _numba, _nvrtc_worker, _stats, _toolchain, cache
from ._library import STATIC_SHARED_BYTES
from ._target import Target, checks_requested

# What every program is compiled with, whatever its library and target.
_BASE_OPTIONS = {"std": "c++20", "link_time_optimization": True, "relocatable_device_code": True}

_lock = threading.RLock()
_recording = None  # a list that collects every instance lowered, inside recording()
_memo = {}  # (entry symbol, target) → the program that defines it
_open = weakref.WeakKeyDictionary()  # code library → {(target, library): its pending program}


@contextlib.contextmanager
def recording():
    """Collect every (instance, target) lowered while the block runs (`shared_memory` reads them)."""
    global _recording
    with _lock:
        _recording = []
        try:
            yield _recording
        finally:
            _recording = None


def translation_unit(instances, lines=False):
    """One C++ source defining the entry points of ``instances`` (of one library): its prelude, the
    headers they use in a fixed order, then their declarations and entry points (``lines``: with
    ``#line``s, for a build with line tables)."""
    return (_includes(instances[0].header.library, {i.header.name for i in instances})
            + "".join(dict.fromkeys("\n" + i.prelude for i in instances if i.prelude))
            + "".join("\n" + i.entry(lines) for i in instances))


def _includes(library, headers):
    """The include lines of a program of ``library`` using ``headers``: the library's prelude first
    (so that its precompiled header serves every program), then the headers, sorted."""
    first = [library.base] if library.base else []
    return "".join(f'#include "{h}"\n' for h in first + sorted(set(headers) - set(first)))


def options(library, target, output="ltoir"):
    """NVRTC's options for a program of ``library`` built for ``target`` (all part of its cache key)."""
    flags = {**_BASE_OPTIONS, **dict(library.flags), **target.nvrtc_options()}
    if library.arch_specific:
        flags["arch"] += "a"
    macros = [*library.options, *flags.pop("define_macro", ())]
    if macros:
        flags["define_macro"] = macros
    if output != "ltoir":
        del flags["link_time_optimization"]
    return flags


def typing_cc():
    """The compute capability of the kernel being typed, by whichever compiler types it."""
    return _mlir.typing_cc() or _numba.target_flags()[0]


def device_function(value):
    """The Python function of ``value``, a ``@cuda.jit(device=True)`` function of numba-cuda (or its simulator's)
    or of numba-cuda-mlir, else None."""
    return _numba.python_function(value) or _mlir.python_function(value)


_PLAIN = (int, float, complex, str, bytes, bool, type(None))
_kept = []  # functions whose symbol holds their id (kept alive: an id is unique while its object lives)


def function_symbol(kind, pyfunc, *more):
    """The C symbol under which a user's function ``pyfunc`` is compiled for an intrinsic (``kind``: "op",
    "epilogue"): its name as an identifier (a lambda's is ``<lambda>``) and a digest of its code, of the values
    its closure holds (Numba freezes them into the code: two functions of one factory differ only there) and of
    ``more`` (what else changes the code: the types, fastmath). A closure of other than plain values is told
    apart by the function's identity."""
    import hashlib

    code = pyfunc.__code__
    cells = tuple(cell.cell_contents for cell in pyfunc.__closure__ or ())
    plain = all(isinstance(v, _PLAIN) or (isinstance(v, tuple) and all(isinstance(x, _PLAIN) for x in v))
                for v in cells)
    if not plain:
        with _lock:
            if not any(f is pyfunc for f in _kept):
                _kept.append(pyfunc)
    origin = ":".join(map(str, (pyfunc.__module__, pyfunc.__qualname__, code.co_code.hex(), code.co_consts,
                                cells if plain else f"id {id(pyfunc)}", *more)))
    name = re.sub(r"\W", "_", pyfunc.__name__)
    return f"numba_tiles_{kind}_{name}_{hashlib.sha256(origin.encode()).hexdigest()[:12]}"


_functions = {}  # (symbol, cc, mlir) → LTO-IR of a user's Python function


def python_function(symbol, pyfunc, signature, cc, fastmath=False, mlir=False):
    """A user's Python function (an op) compiled to LTO-IR under ``symbol`` (C ABI), memoized: by numba-cuda, or
    (``mlir``) by numba-cuda-mlir, the compiler of the kernel that calls it (``fastmath``: the device
    function's own option; its symbol tells the two compiles apart).

    Like the intrinsics' programs, one object per symbol and arch is shared by every code
    library that needs it, so the symbol is defined once in any link.
    """
    with _lock:
        found = _functions.get((symbol, cc, mlir))
        if found is None:
            compiler = _mlir if mlir else _numba
            found = _functions[symbol, cc, mlir] = _numba.ltoir(
                f"{symbol}.ltoir", compiler.compile_device_ltoir(pyfunc, signature, symbol, cc, fastmath))
        return found


class _Program:
    """The instances of one library that one code library calls, built into LTO-IR on first read.

    ``siblings`` is the code library's dict of pending programs: for a library with a program per
    entry point, the first one read builds every unbuilt sibling of such a library at once, each
    NVRTC in a worker process (`_build_side_by_side`).
    """

    def __init__(self, library, target, siblings):
        self.library, self.target, self.siblings = library, target, siblings
        self.instances = {}
        self.built = False
        self.code = _numba.lazy_ltoir(f"numba_tiles-{library.name}-{target.arch}.ltoir", self._build)

    def _build(self):
        with _lock:
            if not self.built:
                together = [p for p in self.siblings.values() if p.library.per_entry and not p.built]
                if self.library.per_entry and len(together) > 1 and _jobs() > 1:
                    _build_side_by_side(together)
                else:
                    self._finish(_attempt(lambda: build(self._sorted(), self.target)))
            if isinstance(self._bytes, BaseException):
                raise self._bytes
            return self._bytes

    def _sorted(self):
        return sorted(self.instances.values(), key=lambda i: i.symbol)

    def _finish(self, result):
        self.built = True
        self._bytes = result
        if isinstance(result, BaseException):
            # Nothing of this failed program may serve a later kernel: its instances
            # compile afresh there (with their own errors, if any).
            for symbol in self.instances:
                _memo.pop((symbol, self.target), None)


def _attempt(work):
    try:
        return work()
    except BaseException as exc:
        return exc


def _jobs():
    """How many NVRTC worker processes may run at once (``NUMBA_TILES_COMPILE_JOBS``, default: the CPUs)."""
    return int(os.environ.get("NUMBA_TILES_COMPILE_JOBS", 0)) or os.cpu_count() or 1


def _build_side_by_side(programs):
    """Build ``programs`` at once, each one's NVRTC in a worker process (threads wait on them)."""
    from concurrent.futures import ThreadPoolExecutor

    progress = _SideBySide(programs)
    with ThreadPoolExecutor(min(_jobs(), len(programs)), thread_name_prefix="numba_tiles NVRTC") as pool:
        # Last lowered first: a kernel calls its loads before the product and the store, the
        # heavier instantiations (cuBLASDx's product alone is most of a matmul kernel's compile).
        futures = {p: pool.submit(progress.attempt, lambda p=p: build(p._sorted(), p.target, isolated=True,
                                                                      announce=progress.compiling))
                   for p in reversed(programs)}
        results = [futures[p].result() for p in programs]
    progress.close()
    for program, result in zip(programs, results):
        if isinstance(result, NVRTCError):  # (its size check reads constants, under _lock: here, not there)
            result = _too_big(program._sorted(), program.target) or result
        program._finish(result)


def quiet():
    """Whether ``NUMBA_TILES_QUIET`` (set and not ``0``) silences the notices of long compiles."""
    return os.environ.get("NUMBA_TILES_QUIET", "0") not in ("", "0")


def say(message):
    """Tell the user on stderr, once as it starts, that a compile will take a while (else they see a
    silent wait of seconds); nothing under ``NUMBA_TILES_QUIET=1``. In Jupyter, stderr shows in the cell."""
    if not quiet():
        print(f"numba_tiles: {message}", file=sys.stderr, flush=True)


def _interactive():
    """Whether a person reads stderr as it comes: a terminal, or a Jupyter cell (which, as a terminal does, rewrites
    a line after a carriage return). A log (a file, a pipe) is not rewritten: it gets the notices alone."""
    return sys.stderr.isatty() or "ipykernel" in sys.modules


TICK_S = 1.0  # how often a long wait's elapsed time is rewritten


class _Ticker(threading.Thread):
    """Calls ``tick()`` every `TICK_S` seconds, in a daemon thread, until `halt` (which waits for the last call)."""

    def __init__(self, tick):
        super().__init__(daemon=True, name="numba_tiles ticker")
        self._tick, self._halted = tick, threading.Event()
        self.start()

    def run(self):
        while not self._halted.wait(TICK_S):
            self._tick()

    def halt(self):
        self._halted.set()
        self.join()


@contextlib.contextmanager
def elapsed(what, since=None, when=None):
    """While the block runs, ``numba_tiles: <what> for 12 s`` on one line of stderr, rewritten each second from
    the first (the seconds since ``since``, a ``time.perf_counter()``, by default the block's start), then cleared:
    a long wait that a notice announced, seen to go on rather than silent. Only where a person reads it as it
    comes (`_interactive`), and not under ``NUMBA_TILES_QUIET=1``. ``when``: shown only once ``when()`` holds
    (checked each second: a wait that may turn out to be a cache hit).

    Example (on a terminal, ``numba_tiles: NVRTC has been compiling for 1 s`` until the block ends)::

        import time
        from numba_tiles._compile import elapsed

        with elapsed("NVRTC has been compiling"):
            time.sleep(1.5)
    """
    if quiet() or not _interactive():
        yield
        return
    start = time.perf_counter() if since is None else since
    width = 0

    def tick():
        nonlocal width
        if when is None or when():
            line = f"numba_tiles: {what} for {time.perf_counter() - start:.0f} s"
            sys.stderr.write("\r" + line.ljust(width))
            sys.stderr.flush()
            width = max(width, len(line))

    ticker = _Ticker(tick)
    try:
        yield
    finally:
        ticker.halt()
        if width:
            sys.stderr.write("\r" + " " * width + "\r")
            sys.stderr.flush()


# Whether a compile is long is decided by what it compiles, not by a timer: a notice then comes at
# the start of the wait, and a small program never prints, however busy the machine. A program of
# cuBLASDx takes seconds to a minute of NVRTC; one of CUB alone, under a second. The figure a notice
# gives is the measured first compile of its form (`_compile_times`, which benchmarks/report.py makes
# from the benchmark results, as it makes the matmul guide's); a form no benchmark times gets none.
_FORMS = {"matmul": "tiles.matmul",
          **{f"Matmul.{entry}": "tiles.Matmul" for entry in ("load_a", "load_b", "multiply", "store")}}
UNTIMED = "tens of seconds the first time"
CONSTANT_TIME = "a few seconds the first time"  # (a cuBLASDx constant: its headers' parse, most of it)


def cold_time(instances):
    """What a notice says of the first compile of ``instances`` (cuBLASDx's, of one or more programs): how long a
    first kernel of their form took, measured (`_compile_times.COLD`), or `UNTIMED` for a form not measured (or
    several forms at once)."""
    from ._compile_times import COLD

    forms = {_FORMS.get(i.intrinsic) for i in instances}
    return COLD.get(forms.pop(), UNTIMED) if len(forms) == 1 else UNTIMED


def _uses_cublasdx(library):
    """Whether ``library``'s programs instantiate cuBLASDx (its version is in their key)."""
    return "cublasdx" in library.versions()


def _described(instances):
    """What the user wrote that makes ``instances``: ``tiles.matmul 64x64x64 (float16, float32)`` (the
    intrinsics; their templates' first three arguments where all are integers, as cuBLASDx's M, N, K;
    and their element types)."""
    from ._dtypes import SCALARS

    names = {d.cxx: d.name for d in SCALARS}
    shapes, dtypes = {}, {}
    for i in instances:
        arguments = re.split(r",\s*", i.template.partition("<")[2][:-1])
        shape = [a for a in arguments[:3] if a.isdigit()]
        if len(shape) == 3:
            shapes["x".join(shape)] = None
        dtypes.update(dict.fromkeys(names[a] for a in arguments if a in names))
    text = ", ".join(dict.fromkeys(f"tiles.{i.intrinsic}" for i in instances))
    text += "".join(f" {shape}" for shape in shapes)
    return text + (f" ({', '.join(dtypes)})" if dtypes else "")


def _announce(instances, target):
    """The notice of one program about to compile, if it is long (cuBLASDx's); returns whether it is."""
    long = _uses_cublasdx(instances[0].header.library)
    if long:
        say(f"compiling {_described(instances)} with cuBLASDx for {target.arch} (NVRTC; {cold_time(instances)}; "
            "cached afterwards)")
    return long


class _SideBySide:
    """The notice and progress bar of programs built side by side: nothing while they come from the
    cache; at the first that NVRTC compiles, one notice, then a bar of the programs done and the time
    taken, redrawn each second (on a terminal or in Jupyter; a log gets the notice alone)."""

    def __init__(self, programs):
        self.programs, self.done, self.bar, self.ticker = programs, 0, None, None
        self._lock = threading.Lock()

    def compiling(self, instances, target):
        with self._lock:
            if self.bar is not None or quiet():
                return
            everything = [i for p in self.programs for i in p._sorted()]
            cublasdx = any(_uses_cublasdx(p.library) for p in self.programs)
            time_taken = f"; {cold_time(everything)};" if cublasdx else ","
            say(f"compiling {len(self.programs)} {'cuBLASDx ' if cublasdx else ''}programs side by side for "
                f"{target.arch}: {_described(everything)} (NVRTC in {min(_jobs(), len(self.programs))} worker "
                f"processes{time_taken} cached afterwards)")
            from tqdm import tqdm

            self.bar = tqdm(total=len(self.programs), initial=self.done, desc="numba_tiles NVRTC", unit="program",
                            file=sys.stderr, leave=False, disable=not _interactive())
            if not self.bar.disable:  # (tqdm redraws as programs finish: its elapsed time would stand still)
                self.ticker = _Ticker(self._redraw)

    def _redraw(self):
        with self._lock:
            self.bar.refresh()

    def attempt(self, work):
        """`_attempt` ``work`` (one program's build), then count it done."""
        result = _attempt(work)
        with self._lock:
            self.done += 1
            if self.bar is not None:
                self.bar.update()
        return result

    def close(self):
        if self.ticker is not None:
            self.ticker.halt()
        if self.bar is not None:
            self.bar.close()


def for_call(instance, target, code_library):
    """The LTO-IR object that will define ``instance``'s entry point for a call lowered into ``code_library``."""
    with _lock:
        if _recording is not None:
            _recording.append((instance, target))
        found = _memo.get((instance.symbol, target))
        if found is not None:
            _stats.count("memo")
            return found.code
        per_library = _open.setdefault(code_library, {})
        library = instance.header.library
        group = (target, library, instance.symbol if library.per_entry else None)
        program = per_library.get(group)
        if program is None or program.built:
            program = per_library[group] = _Program(library, target, per_library)
        program.instances.setdefault(instance.symbol, instance)
        _memo[(instance.symbol, target)] = program
        return program.code


_making = {}  # the cache key of each program a thread of this process is making → (its Future, when it started)
_making_lock = threading.Lock()


def build(instances, target, isolated=False, announce=_announce):
    """LTO-IR bytes for one translation unit of one library: from the disk cache, else NVRTC (then
    stored); ``isolated``: NVRTC in a worker process, and an oversized storage is the caller's to find;
    ``announce(instances, target)`` is called before NVRTC starts (by default: a notice if it is long)
    and returns whether it is long: NVRTC's time so far then shows while it runs (`elapsed`).
    A program another thread of this process is making (a description's, compiled ahead) is waited for,
    with a notice and the time it has taken, not made twice."""
    from concurrent.futures import Future

    library = instances[0].header.library
    source = translation_unit(instances, lines=target.lineinfo)
    name = instances[0].symbol if len(instances) == 1 else f"numba_tiles_{len(instances)}"
    parts = key_parts(source, library, target, "ltoir")
    digest = cache.key(parts)
    with _making_lock:
        mine = digest not in _making
        if mine:
            _making[digest] = (Future(), time.perf_counter())
        making, started = _making[digest]
    if not mine:
        if making.done():
            return making.result()
        say(f"waiting for {_described(instances)} for {target.arch}, which NVRTC has been compiling in the "
            f"background for {time.perf_counter() - started:.0f} s")
        with elapsed("NVRTC has been compiling it", since=started):
            return making.result()

    def make():
        long = announce(instances, target)
        try:
            with elapsed("NVRTC has been compiling") if long else contextlib.nullcontext():
                return _nvrtc(source, library, target, name, instances, isolated=isolated)
        except NVRTCError as exc:
            raise (None if isolated else _too_big(instances, target)) or exc from None

    try:
        code = cache.cached(parts, make)
        if library.arch_specific:
            arch_specific.add(code)
        making.set_result(code)
    except BaseException as exc:
        making.set_exception(exc)
        raise
    finally:
        with _making_lock:
            del _making[digest]
    return code


# This process's arch-specific (sm_90a) LTO-IR, `build`'s and libmathdx's (its bytes, or the lazy object that
# makes them): `compile` names it, and a numba-cuda-mlir kernel that links it is linked for sm_90a.
arch_specific = set()


def arch_specific_error(arch):
    """The error of `compile` for ``arch`` (sm_90) of a kernel whose intrinsics' code is arch-specific."""
    from ._errors import error

    return error("compile", f"the kernel calls Matmul.tile or .batched on Hopper (TMA and wgmma: arch-specific "
                 f"code), which links only for {arch}a, not {arch} (nvJitLink rejects wgmma and tensormap.replace "
                 "there)", f"pass arch='{arch}a'")


def key_parts(source, library, target, output="ltoir"):
    """What the cache key of a program of ``library`` for ``target`` digests (`cache.components`)."""
    return cache.components(source, output=output, target=target.key(), options=options(library, target, output),
                            versions={**_toolchain.versions(), library.name: library.versions()})


@functools.cache
def _libraries_stamp(libraries):
    versions = {}
    for library in libraries:
        try:
            versions[library.name] = library.versions()
        except Exception as exc:  # (a library that cannot be found now compiles nothing now)
            versions[library.name] = f"unavailable: {exc}"
    return cache.key({"toolchain": _toolchain.versions(), "libraries": versions})


def kernel_cache_stamp():
    """What numba-cuda's cache key for a ``cache=True`` kernel lacks: numba_tiles', the toolchain's and every
    declared library's versions, and ``NUMBA_TILES_DEBUG`` (see `_numba.cache_kernels_with_intrinsics`)."""
    return f"{_libraries_stamp(tuple(_library.DECLARED))[:16]}{'-checks' if checks_requested() else ''}"


def _too_big(instances, target):
    """The `TilesError` for an instance whose own static storage is over a block's static shared memory,
    or None. (Typing catches most such tiles from their bytes alone; this is CUB's exact size.)"""
    from ._errors import error

    for i in instances:
        size = i.static_storage and constant(f"sizeof({i.static_storage})", i.header, target.arch)
        if size and size > STATIC_SHARED_BYTES:
            return error(i.intrinsic, f"its temp storage needs {size} bytes of shared memory, over the "
                         f"{STATIC_SHARED_BYTES} a block can have statically",
                         "use fewer items_per_thread or threads, a smaller dtype, or fewer bins")
    return None


_constants = {}  # (C++ expression, header, arch) → its value


def constant(expression, header, arch):
    """The value of a C++ constant expression over ``header`` (a temp storage's size, cuBLASDx's suggested
    block): NVRTC compiles it into a global of a cubin and we read it from the ELF. Memoized and in
    the disk cache."""
    from ._elf import symbol_bytes

    with _lock:
        if (expression, header, arch) not in _constants:
            source = (_includes(header.library, [header.name]) +
                      f'extern "C" __device__ unsigned long long numba_tiles_constant = {expression};\n')
            target = Target(arch)

            def make():
                long = _uses_cublasdx(header.library)
                if long:
                    say(f"computing {expression.replace('numba_tiles::', '')} with cuBLASDx for {arch} (NVRTC; "
                        f"{CONSTANT_TIME}; cached afterwards)")
                with elapsed("NVRTC has been computing it") if long else contextlib.nullcontext():
                    cubin = _nvrtc(source, header.library, target, "numba_tiles_constant", (), output="cubin")
                return symbol_bytes(cubin, "numba_tiles_constant", 8)

            value = cache.cached(key_parts(source, header.library, target, "constant"), make)
            _constants[expression, header, arch] = int.from_bytes(value, "little")
        return _constants[expression, header, arch]


_pch_dir = None
_pchs = {}  # (library, options) → its `_PrecompiledBase` in this process
_background = []  # the threads NVRTC may be running in


def _in_background(work):
    # Not a daemon: Python joins such threads before any atexit handler runs. A process that exited
    # right after `import numba_tiles` on a GPU machine died with SIGSEGV while this thread was still
    # in cuInit/NVRTC: the atexit handlers registered after ours (by the CUDA modules the thread
    # imports) ran first and tore down what it was using.
    thread = threading.Thread(target=work, name="numba_tiles NVRTC")
    _background.append(thread)
    thread.start()
    return thread


@atexit.register
def _at_exit():
    if _pch_dir is not None:
        shutil.rmtree(_pch_dir, ignore_errors=True)


class _PrecompiledBase:
    """A library's base header (what its headers share, most of a program's parse) precompiled
    for one option set, in a background thread (NVRTC releases the GIL).

    Every program of the library includes its base first, so one precompiled header serves
    them all, whatever their other headers. NVRTC accepts a precompiled header only in the
    process that made it (the file records that process's heap address), so they go to a
    temporary directory of this process, not to the disk cache.
    """

    def __init__(self, library, flags):
        global _pch_dir
        if _pch_dir is None:
            _pch_dir = tempfile.mkdtemp(prefix="numba_tiles_pch_")
        self.path = os.path.join(_pch_dir, f"{len(_pchs)}.pch")
        self.created = False
        self._thread = _in_background(lambda: self._make(library, flags))

    def _make(self, library, flags):
        from cuda.core import Program, ProgramOptions

        program = Program(f'#include "{library.base}"\n', "c++", options=ProgramOptions(
            name="numba_tiles_pch", include_path=library.include_path(), create_pch=self.path, **flags))
        try:
            program.compile("ltoir" if flags.get("link_time_optimization") else "cubin")
        except Exception:  # (a program that includes the base will say what is wrong)
            return
        # A PCH NVRTC did not make (heap too small, ...) is never asked for: use_pch on a
        # missing file is an error, not a plain compile.
        self.created = program.pch_status == "created"

    def options(self):
        """NVRTC's options to use it, once made (waiting for it if it is under way), or {}."""
        start = time.perf_counter()
        self._thread.join()
        _stats.count("pch_wait_seconds", time.perf_counter() - start)
        if not self.created:
            return {}
        _stats.count("pch_used")
        return {"use_pch": self.path}


def _tag(library, flags):
    return library.name, json.dumps(flags, sort_keys=True)


def _start_base_pch(library, flags):
    """Start precompiling ``library``'s base header for ``flags``, unless this process has already."""
    with _lock:
        if _tag(library, flags) not in _pchs:
            _pchs[_tag(library, flags)] = _PrecompiledBase(library, flags)


def prepare_for_current_device(library):
    """Start precompiling ``library``'s base header for this machine's GPU (device 0), if it has one.

    Called when numba_tiles is imported: Numba types and lowers the user's first kernel in
    the next second or so, and that kernel's program then finds most of its headers parsed
    (see docs/performance.md, "Time to first result"). It costs one background parse, about half a second
    of one CPU core; a machine with no GPU pays nothing. It initializes the CUDA driver in that
    thread; ``NUMBA_TILES_PREPARE=0`` turns it off (for processes that fork CUDA-using children).
    """
    def start():
        cc = _toolchain.current_device_cc()
        if cc is not None and "sm_%d%d" % cc in _toolchain.supported_archs():
            _start_base_pch(library, options(library, Target.for_lowering(cc, lineinfo=False)))

    _in_background(start)


def wait_for_precompiled_headers():
    """Wait until the precompiled headers under way are made."""
    for thread in list(_background):
        thread.join()


class NVRTCError(RuntimeError):
    """NVRTC rejected a program: the message names what failed and whom to blame; ``log`` and
    ``source`` hold NVRTC's whole log and the program."""

    def __init__(self, message, log, source):
        super().__init__(message)
        self.log, self.source = log, source


def _nvrtc(source, library, target, name, instances, output="ltoir", isolated=False):
    """NVRTC's ``output`` (LTO-IR, or a cubin: a PTX target would make cuda.core ask the driver);
    ``isolated``: in a worker process (`_nvrtc_worker`)."""
    flags = options(library, target, output)
    pch = _pchs.get(_tag(library, flags)) if library.base and not isolated else None
    # NVRTC runs one compile at a time: waiting for a PCH under way costs no more than parsing.
    use = pch.options() if pch is not None else {}
    program_options = dict(name=name, include_path=library.include_path(), **flags, **use)
    start = time.perf_counter()
    status, code = (_in_worker if isolated else _nvrtc_worker.run)(source, program_options, output)
    if status != "ok":
        raise NVRTCError(_failure(code, library, target, name, instances), code, source)
    _stats.count("nvrtc_seconds", time.perf_counter() - start)
    _stats.count("nvrtc")
    if library.base:
        # A process that compiled one program will likely compile more: precompile the base
        # for them behind this one (and behind the Python work before the next).
        _start_base_pch(library, flags)
    return code


def _in_worker(source, program_options, output):
    return _nvrtc_worker.ask(_nvrtc_worker.__file__, (source, program_options, output), "NVRTC")


def _failure(log, library, target, name, instances):
    """What NVRTC's failure says: the failing instantiation(s), the log's errors trimmed, the blame."""
    failing = [i for i in instances if i.symbol in log or i.template.split("<", 1)[0] in log] or list(instances)
    lines = [line.strip() for line in log.splitlines()]
    errors = [line for line in lines if " error" in line or "detected during" in line][:12] or lines[:12]
    what = "; ".join(f"tiles.{i.intrinsic} as {i.template}" for i in failing[:3]) or name
    return (f"NVRTC failed to compile {what} for {target.arch} ({library.name}). {library.blame}.\n"
            + "\n".join(errors) + "\n(the whole log and program are this error's .log and .source)")


def parse_arch(arch):
    """``"sm_90"`` → ``(9, 0)``, for the architectures this toolkit's NVRTC supports; an arch-specific
    ``"sm_90a"`` (sm_90 on) → ``(9, 0, "a")``."""
    supported = _toolchain.supported_archs()
    specific = isinstance(arch, str) and arch.endswith("a") and arch[:-1] in supported and Target(arch[:-1]).cc >= (9, 0)
    if arch not in supported and not specific:
        raise ValueError(
            f"numba_tiles.compile: arch must be one of {', '.join(supported)} "
            f"(what NVRTC {'%d.%d' % _toolchain.nvrtc_version()} supports), or one of those from sm_90 on "
            f"with an 'a' (arch-specific: what numba-cuda links for on such a GPU); got {arch!r}"
        )
    return Target(arch[:-1]).cc + ("a",) if specific else Target(arch).cc


def refuse_simulator(intrinsic, nothing, to):
    """Under Numba's simulator, which compiles nothing, raise ``intrinsic``'s `TilesError` (a user called
    ``tiles.<intrinsic>``): ``nothing`` is what it then lacks, ``to`` what unsetting the simulator lets it do."""
    if _numba.simulator_enabled():
        from ._errors import error

        raise error(intrinsic, f"Numba's simulator (NUMBA_ENABLE_CUDASIM=1) runs kernels as Python and compiles "
                    f"{nothing}", f"unset NUMBA_ENABLE_CUDASIM to {to}: no GPU is needed")


def compile(pyfunc, signature, *, arch="sm_90", output="cubin", lineinfo=False, debug=False):
    """Compile a kernel for ``arch`` and link it with its intrinsics, on any machine: no GPU needed.

    ``arch`` is any real architecture the pinned NVRTC supports (CUDA 13.0: sm_75 to sm_121; 12.9: sm_50 on),
    or, from sm_90 on, its arch-specific form (``"sm_90a"``): what numba-cuda itself links a kernel for on
    such a GPU (Numba's part compiled for ``compute_90a``; the intrinsics' LTO-IR is the same as for sm_90).

    ``pyfunc`` is a Python function or a ``@cuda.jit`` kernel (numba-cuda's, or numba-cuda-mlir's: then
    ``output="cubin"`` only); ``signature`` its argument types
    (``"void(float32[:], float32[:])"`` or a tuple of Numba types). ``output="cubin"`` or
    ``"ptx"`` returns the bytes of the fully linked kernel; ``output="ltoir"`` returns the list of
    LTO-IR modules that the link would take (Numba's first, then the intrinsics'). ``lineinfo``
    is as for ``@cuda.jit`` and reaches NVRTC too (``-lineinfo``); ``debug=True`` is refused for a
    kernel that calls an intrinsic, as for ``@cuda.jit`` (see the profiling guide). A ``@cuda.jit``
    kernel's own ``fastmath``, ``launch_bounds`` and ``max_registers`` apply, as at its launches. (An
    intrinsic bounds its kernel's block to its ``block_dim``, and ptxas then keeps to that bound rather
    than to ``max_registers``: cap such a kernel's registers with ``launch_bounds=(threads,
    blocks_per_sm)``.)

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def block_sums(x, out):
            s = tiles.block_sum(x[cuda.grid(1)], block_dim=128)
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = s

        cubin = tiles.compile(block_sums, "void(float32[:], float32[:])", arch="sm_80")
    """
    from cuda.core import LinkerOptions, ObjectCode

    if output not in ("cubin", "ptx", "ltoir"):
        raise ValueError(f"numba_tiles.compile: output must be 'cubin', 'ptx' or 'ltoir'; got {output!r}")
    refuse_simulator("compile", "nothing", "compile")
    cc = parse_arch(arch)
    if _mlir.is_kernel(pyfunc):  # (a numba-cuda-mlir kernel: its own compiler links it)
        if output != "cubin":
            raise ValueError(f"numba_tiles.compile: a numba-cuda-mlir kernel compiles to a cubin only so far; "
                             f"got output={output!r}")
        return _mlir.compile_kernel(pyfunc, signature, cc, arch)
    # A @cuda.jit kernel's own options that shape its code, as its launches compile it
    options = getattr(pyfunc, "targetoptions", {})
    pyfunc = getattr(pyfunc, "py_func", pyfunc)
    # While recording (shared_memory), device functions compile again, so that their intrinsics are seen.
    modules = _numba.compile_kernel_ltoir(pyfunc, signature, cc, lineinfo=lineinfo, debug=debug,
                                          fresh=_recording is not None, fastmath=options.get("fastmath", False),
                                          launch_bounds=options.get("launch_bounds"))
    if output == "ltoir":
        return modules
    if not arch.endswith("a") and any(m in arch_specific for m in modules):
        raise arch_specific_error(arch)
    linker_options = LinkerOptions(arch=arch, link_time_optimization=True, lineinfo=lineinfo, debug=debug,
                                   ptx=output == "ptx", max_register_count=options.get("max_registers"))
    return _link.link([ObjectCode.from_ltoir(m) for m in modules], linker_options, output)


def precompile(kernels, *, arch="sm_90", signatures=None, progress=True):
    """Compile kernels for each arch without linking or launching, to fill the disk cache: no GPU needed.

    ``kernels`` is a module (or its dotted name; its ``@cuda.jit`` kernels), a kernel, or a list
    of kernels (``@cuda.jit`` or plain functions). ``signatures`` maps each kernel (or its
    name) to its signatures; by default a module's
    ``NUMBA_TILES_PRECOMPILE`` dict is used. ``arch`` is one arch or a list. Returns the
    (kernel name, signature, arch) triples compiled; a progress bar shows on long runs.

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def tile_max(x, out):
            m = tiles.block_reduce(x[cuda.grid(1)], "max", block_dim=(16, 16))
            out[cuda.blockIdx.x] = m

        tiles.precompile(tile_max, arch=["sm_80", "sm_90"],
                         signatures={tile_max: ["void(float32[:], float32[:])"]})
    """
    import importlib
    import types as pytypes

    from tqdm import tqdm

    refuse_simulator("precompile", "nothing, so there is nothing to put in the disk cache", "precompile")
    module = importlib.import_module(kernels) if isinstance(kernels, str) else kernels
    if isinstance(module, pytypes.ModuleType):
        signatures = getattr(module, "NUMBA_TILES_PRECOMPILE", {}) if signatures is None else signatures
        kernels = [k for k in vars(module).values() if hasattr(k, "py_func")]
    elif callable(kernels):
        kernels = [kernels]
    signatures = signatures or {}
    archs = [arch] if isinstance(arch, str) else list(arch)
    for a in archs:
        parse_arch(a)
    tasks, missing = [], []
    for kernel in kernels:
        name = getattr(kernel, "py_func", kernel).__name__
        sigs = signatures.get(kernel, signatures.get(name))
        if sigs is None:
            missing.append(name)
            continue
        tasks += [(kernel, sig, a) for sig in ([sigs] if isinstance(sigs, str) else sigs) for a in archs]
    if missing and not tasks:
        raise ValueError(
            f"numba_tiles.precompile: no signatures for {', '.join(missing)}; pass signatures="
            "{kernel: ['void(float32[:], ...)']} or define NUMBA_TILES_PRECOMPILE in the module"
        )
    done = []
    start = time.perf_counter()
    bar = tqdm(tasks, desc="numba_tiles precompile", unit="kernel", disable=None if progress else True)
    for kernel, sig, a in bar:
        # (builds or loads the intrinsics' LTO-IR; a numba-cuda-mlir kernel's compile gives its cubin only)
        compile(kernel, sig, arch=a, output="cubin" if _mlir.is_kernel(kernel) else "ltoir")
        done.append((getattr(kernel, "py_func", kernel).__name__, str(sig), a))
    if progress:
        print(f"numba_tiles: precompiled {len(done)} kernel signature(s) in {time.perf_counter() - start:.1f} s"
              + (f"; skipped (no signatures): {', '.join(missing)}" if missing else ""))
    return done

