"""C++ → LTO-IR with NVRTC (through ``cuda.core.Program``), through the memo and the disk cache.

Lowering does not compile: each call site puts its instance into the pending program of the
code library being lowered (a kernel or a device function), one per `Target` and `Library`;
that program compiles all of them at once when Numba first links the kernel, so a kernel costs
one NVRTC run per library it uses, and the program includes only the headers its instances
use. An instance already given to a program in this process is reused from it, so programs
never overlap: each entry point is defined once in any link, and a kernel links only the
instances it uses. Each program is stored in the disk cache (`numba_tiles.cache`) under a
digest of everything that changes its bytes (`cache.components`).
"""

import contextlib
import functools
import os
import threading
import time
import weakref

from . import _library, _notices, _nvrtc_worker, _pch, _stats, _toolchain, cache
from ._backends import numba_cuda_compile
from ._library import STATIC_SHARED_BYTES
from ._target import Target, checks_requested

_lock = threading.RLock()
_recording = None  # a list that collects every instance lowered, inside recording()
_memo = {}  # (entry symbol, target) → the program that defines it
_open = weakref.WeakKeyDictionary()  # code library → {(target, library): its pending program}


def is_recording():
    """Whether `recording` is collecting the instances lowered now."""
    return _recording is not None


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
    return (
        _includes(instances[0].header.library, {i.header.name for i in instances})
        + "".join(dict.fromkeys("\n" + i.prelude for i in instances if i.prelude))
        + "".join("\n" + i.entry(lines) for i in instances)
    )


def _includes(library, headers):
    """The include lines of a program of ``library`` using ``headers``: the library's prelude first
    (so that its precompiled header serves every program), then the headers, sorted."""
    first = [library.base] if library.base else []
    return "".join(f'#include "{h}"\n' for h in first + sorted(set(headers) - set(first)))


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
        self.code = numba_cuda_compile.lazy_ltoir(f"numba_tiles-{library.name}-{target.arch}.ltoir", self._build)

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

    progress = _notices.SideBySide(programs, min(_jobs(), len(programs)))
    with ThreadPoolExecutor(progress.jobs, thread_name_prefix="numba_tiles NVRTC") as pool:
        # Last lowered first: a kernel calls its loads before the product and the store, the
        # heavier instantiations (cuBLASDx's product alone is most of a matmul kernel's compile).
        futures = {
            p: pool.submit(
                progress.attempt, lambda p=p: build(p._sorted(), p.target, isolated=True, announce=progress.compiling)
            )
            for p in reversed(programs)
        }
        results = [futures[p].result() for p in programs]
    progress.close()
    for program, result in zip(programs, results):
        if isinstance(result, NVRTCError):  # (its size check reads constants, under _lock: here, not there)
            result = _too_big(program._sorted(), program.target) or result
        program._finish(result)


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


def build(instances, target, isolated=False, announce=_notices.announce):
    """LTO-IR bytes for one translation unit of one library: from the disk cache, else NVRTC (then
    stored); ``isolated``: NVRTC in a worker process, and an oversized storage is the caller's to find;
    ``announce(instances, target)`` is called before NVRTC starts (by default: a notice if it is long)
    and returns whether it is long: NVRTC's time so far then shows while it runs (`_notices.elapsed`).
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
        _notices.say(
            f"waiting for {_notices.described(instances)} for {target.arch}, which NVRTC has been "
            f"compiling in the background for {time.perf_counter() - started:.0f} s"
        )
        with _notices.elapsed("NVRTC has been compiling it", since=started):
            return making.result()

    def make():
        long = announce(instances, target)
        try:
            with _notices.elapsed("NVRTC has been compiling") if long else contextlib.nullcontext():
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

    return error(
        "compile",
        f"the kernel calls Matmul.tile or .batched on Hopper (TMA and wgmma: arch-specific "
        f"code), which links only for {arch}a, not {arch} (nvJitLink rejects wgmma and tensormap.replace "
        "there)",
        f"pass arch='{arch}a'",
    )


def key_parts(source, library, target, output="ltoir"):
    """What the cache key of a program of ``library`` for ``target`` digests (`cache.components`)."""
    return cache.components(
        source,
        output=output,
        target=target.key(),
        options=library.program_options(target, output),
        versions={**_toolchain.versions(), library.name: library.versions()},
    )


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
    declared library's versions, and ``NUMBA_TILES_DEBUG`` (see `numba_cuda_compile.cache_kernels_with_intrinsics`)."""
    return f"{_libraries_stamp(tuple(_library.DECLARED))[:16]}{'-checks' if checks_requested() else ''}"


def _too_big(instances, target):
    """The `TilesError` for an instance whose own static storage is over a block's static shared memory,
    or None. (Typing catches most such tiles from their bytes alone; this is CUB's exact size.)"""
    from ._errors import error

    for i in instances:
        size = i.static_storage and constant(f"sizeof({i.static_storage})", i.header, target.arch)
        if size and size > STATIC_SHARED_BYTES:
            return error(
                i.intrinsic,
                f"its temp storage needs {size} bytes of shared memory, over the "
                f"{STATIC_SHARED_BYTES} a block can have statically",
                "use fewer items_per_thread or threads, a smaller dtype, or fewer bins",
            )
    return None


_constants = {}  # (C++ expression, header, arch) → its value


def constant(expression, header, arch):
    """The value of a C++ constant expression over ``header`` (a temp storage's size, cuBLASDx's suggested
    block): NVRTC compiles it into a global of a cubin and we read it from the ELF. Memoized and in
    the disk cache."""
    from ._elf import symbol_bytes

    with _lock:
        if (expression, header, arch) not in _constants:
            source = (
                _includes(header.library, [header.name])
                + f'extern "C" __device__ unsigned long long numba_tiles_constant = {expression};\n'
            )
            target = Target(arch)

            def make():
                long = _notices.long_library(header.library)
                if long:
                    _notices.say(
                        f"computing {expression.replace('numba_tiles::', '')} with {long} for {arch} "
                        f"(NVRTC; {_notices.CONSTANT_TIME}; cached afterwards)"
                    )
                with _notices.elapsed("NVRTC has been computing it") if long else contextlib.nullcontext():
                    cubin = _nvrtc(source, header.library, target, "numba_tiles_constant", (), output="cubin")
                return symbol_bytes(cubin, "numba_tiles_constant", 8)

            value = cache.cached(key_parts(source, header.library, target, "constant"), make)
            _constants[expression, header, arch] = int.from_bytes(value, "little")
        return _constants[expression, header, arch]


class NVRTCError(RuntimeError):
    """NVRTC rejected a program: the message names what failed and whom to blame; ``log`` and
    ``source`` hold NVRTC's whole log and the program."""

    def __init__(self, message, log, source):
        super().__init__(message)
        self.log, self.source = log, source


def _nvrtc(source, library, target, name, instances, output="ltoir", isolated=False):
    """NVRTC's ``output`` (LTO-IR, or a cubin: a PTX target would make cuda.core ask the driver);
    ``isolated``: in a worker process (`_nvrtc_worker`)."""
    flags = library.program_options(target, output)
    pch = _pch.made(library, flags) if library.base and not isolated else None
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
        _pch.start(library, flags)
    return code


def _in_worker(source, program_options, output):
    return _nvrtc_worker.ask(_nvrtc_worker.__file__, (source, program_options, output), "NVRTC")


def _failure(log, library, target, name, instances):
    """What NVRTC's failure says: the failing instantiation(s), the log's errors trimmed, the blame."""
    failing = [i for i in instances if i.symbol in log or i.template.split("<", 1)[0] in log] or list(instances)
    lines = [line.strip() for line in log.splitlines()]
    errors = [line for line in lines if " error" in line or "detected during" in line][:12] or lines[:12]
    what = "; ".join(f"tiles.{i.intrinsic} as {i.template}" for i in failing[:3]) or name
    return (
        f"NVRTC failed to compile {what} for {target.arch} ({library.name}). {library.blame}.\n"
        + "\n".join(errors)
        + "\n(the whole log and program are this error's .log and .source)"
    )
