"""C++ → LTO-IR with NVRTC (through ``cuda.core.Program``), through the memo and the disk cache; and `compile`.

Lowering does not compile: each call site puts its instance into the pending LTO-IR object of
the code library being lowered (a kernel or a device function), and that object compiles all
of them in one NVRTC program when Numba first links it, so a kernel costs one NVRTC run
however many intrinsics it calls. An instance already given to an object in this process is
reused from it, so objects never overlap: each entry point is defined once in any link, and
a kernel links only the instances it uses. Each program is stored in the disk cache
(`numba_tiles.cache`) under a digest of everything that changes its bytes: the C++ text, the
arch, the options and the toolchain versions (NVRTC, CCCL, our lto_libs, numba_tiles).
"""

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
import weakref

from numba.cuda.cudadrv.linkable_code import LTOIR

from . import _toolchain, cache

# NDEBUG: CCCL's device assertions (__assertfail calls) are for debugging CCCL, not release code.
# _CCCL_META_UNROLL_LIMIT=10 is what CCCL picks under nvcc; under NVRTC it keeps 16, and its
# preprocessor unrolling then takes 0.7 s of a 1.5 s compile (same LTO-IR either way).
# CCCL_DISABLE_NVFP8_SUPPORT: no intrinsic takes fp8; parsing its headers is wasted time.
_OPTIONS = {"std": "c++20", "link_time_optimization": True, "relocatable_device_code": True,
            "define_macro": ["NDEBUG", ("_CCCL_META_UNROLL_LIMIT", "10"), "CCCL_DISABLE_NVFP8_SUPPORT"]}


def debug():
    """Whether ``NUMBA_TILES_DEBUG=1``: intrinsics check the launch's block shape and their inputs, and trap."""
    return os.environ.get("NUMBA_TILES_DEBUG", "0") not in ("", "0")


def options():
    """NVRTC's options for the current mode (they are part of every cache key)."""
    if not debug():
        return _OPTIONS
    return {**_OPTIONS, "define_macro": [*_OPTIONS["define_macro"], "NUMBA_TILES_DEBUG"]}


_lock = threading.RLock()
_recording = None  # a list that collects every instance lowered, inside recording()
_memo = {}  # (entry symbol, arch, debug) → the object that defines it
_open = weakref.WeakKeyDictionary()  # code library → {(arch, debug): its pending object}


@contextlib.contextmanager
def recording():
    """Collect every instance lowered while the block runs (`shared_memory` reads them)."""
    global _recording
    with _lock:
        _recording = []
        try:
            yield _recording
        finally:
            _recording = None


def translation_unit(instances):
    """One C++ source defining the entry points of ``instances`` (anything with entry()).

    It includes every lto_libs header, whichever it needs: then all programs of a process share
    one precompiled header (see `_pch_options`), which costs less than parsing only the
    needed headers in each.
    """
    preludes = "".join(dict.fromkeys("\n" + i.prelude for i in instances if i.prelude))
    return _includes() + preludes + "".join("\n" + i.entry() for i in instances)


def _includes():
    return "".join(f'#include "{h}"\n' for h in _toolchain.lto_libs_headers())


def _include_path():
    return [str(d) for d in (_toolchain.lto_libs_dir(), _toolchain.cccl_include_dir(), _toolchain.cuda_include_dir())]


_functions = {}  # (symbol, cc) → LTO-IR of a user's Python function


def python_function(symbol, pyfunc, signature, cc):
    """A user's Python function (an op) compiled by Numba to LTO-IR under ``symbol`` (C ABI), memoized.

    Like the intrinsics' objects, one object per symbol and arch is shared by every code
    library that needs it, so the symbol is defined once in any link.
    """
    from numba import cuda

    with _lock:
        found = _functions.get((symbol, cc))
        if found is None:
            code, _ = cuda.compile(pyfunc, signature, device=True, abi="c", abi_info={"abi_name": symbol},
                                   output="ltoir", cc=cc)
            found = _functions[symbol, cc] = LTOIR(code, name=f"{symbol}.ltoir")
        return found


def key(source, arch):
    """The hex digest naming one compiled program; its components are in `key_components`."""
    return _digest(key_components(source, arch))


def _digest(components):
    return hashlib.sha256(json.dumps(components, sort_keys=True).encode()).hexdigest()


def key_components(source, arch):
    return {
        "source": hashlib.sha256(source.encode()).hexdigest(),
        "arch": arch,
        "options": options(),
        **_toolchain.versions(),
    }


class Pending(LTOIR):
    """LTO-IR for a set of instances, built (from the disk cache or NVRTC) when Numba first reads it."""

    def __init__(self, arch):
        super().__init__(None, name=f"numba_tiles-{arch}.ltoir")
        self.arch = arch
        self.instances = {}
        self._code = None

    def add(self, instance):
        assert self._code is None, "numba_tiles: an instance was added after its LTO-IR was built"
        self.instances.setdefault(instance.symbol, instance)

    @property
    def data(self):
        with _lock:
            if self._code is None:
                self._code = build(sorted(self.instances.values(), key=lambda i: i.symbol), self.arch)
            return self._code


def for_call(instance, arch, library):
    """The object that will define ``instance``'s entry point for a call lowered into ``library``."""
    with _lock:
        if _recording is not None:
            _recording.append(instance)
        tag = (arch, debug())
        found = _memo.get((instance.symbol, *tag))
        if found is not None:
            cache._stats["memo"] += 1
            return found
        per_arch = _open.setdefault(library, {})
        pending = per_arch.get(tag)
        if pending is None or pending._code is not None:
            pending = per_arch[tag] = Pending(arch)
        pending.add(instance)
        _memo[(instance.symbol, *tag)] = pending
        return pending


def build(instances, arch):
    """LTO-IR bytes for one translation unit: from the disk cache, else NVRTC (then stored)."""
    source = translation_unit(instances)
    name = instances[0].symbol if len(instances) == 1 else f"numba_tiles_{len(instances)}"

    def make():
        try:
            return _nvrtc(source, arch, name)
        except _StorageTooBig:
            raise _too_big(instances, arch) from None

    return _cached(key_components(source, arch), make)


def _cached(components, make):
    """The payload stored under the digest of ``components``, else ``make()``'s, then stored."""
    digest = _digest(components)
    payload = cache.load(digest)
    if payload is None:
        payload = make()
        cache.store(digest, components, payload)
    return payload


class _StorageTooBig(Exception):
    pass


# What common.cuh's own_storage asserts; block.STATIC_SHARED_BYTES is the same limit at typing.
_STATIC_SHARED_LIMIT = 48 * 1024
_TOO_BIG = "numba_tiles: static shared storage over 48 KiB"


def _too_big(instances, arch):
    """The error for the instance whose static storage is over the limit (typing catches most such
    tiles earlier, from their bytes alone; this is CUB's exact size, seen only by NVRTC)."""
    from ._errors import error

    for i in instances:
        size = i.static_storage and constant(f"sizeof({i.static_storage})", arch)
        if size and size > _STATIC_SHARED_LIMIT:
            return error(i.intrinsic, f"its temp storage needs {size} bytes of shared memory, over the "
                         f"{_STATIC_SHARED_LIMIT} a block can have statically",
                         "use fewer items_per_thread or threads, a smaller dtype, or fewer bins")
    raise AssertionError("numba_tiles: NVRTC reported a storage over the limit that no instance has")


_constants = {}  # (C++ expression, arch) → its value


def constant(expression, arch):
    """The value of a C++ constant expression over lto_libs (a temp storage's size): NVRTC compiles it
    into a global of a cubin and we read it from the ELF. Memoized and in the disk cache."""
    from ._elf import symbol_bytes

    with _lock:
        if (expression, arch) not in _constants:
            source = f'{_includes()}extern "C" __device__ unsigned long long numba_tiles_constant = {expression};\n'

            def make():
                cubin = _nvrtc(source, arch, "numba_tiles_constant", output="cubin")
                return symbol_bytes(cubin, "numba_tiles_constant", 8)

            value = _cached({**key_components(source, arch), "output": "constant"}, make)
            _constants[expression, arch] = int.from_bytes(value, "little")
        return _constants[expression, arch]


_pch_dir = None
_pch_made = {}  # (arch, options) → this process's precompiled header file, or None if it could not be made


def _pch_options(tag):
    """NVRTC precompiled-header options for a program compiled with ``tag`` = (arch, options).

    NVRTC accepts a precompiled header only in the process that made it (a PCH file records
    that process's heap address), so they cannot live in the disk cache; they go to a
    temporary directory of this process (about 120 MB each). The first program makes it, for
    about 0.4 s more than a plain compile; every later one then parses nothing (about 0.25 s
    instead of 0.9 s). Returns (options, path to record once NVRTC reports it created).
    """
    global _pch_dir
    if tag in _pch_made:
        if _pch_made[tag] is None:
            return {}, None
        cache._stats["pch_used"] += 1
        return {"use_pch": _pch_made[tag]}, None
    if _pch_dir is None:
        _pch_dir = tempfile.mkdtemp(prefix="numba_tiles_pch_")
        atexit.register(shutil.rmtree, _pch_dir, ignore_errors=True)
    path = os.path.join(_pch_dir, f"{len(_pch_made)}-{tag[0]}.pch")
    return {"create_pch": path}, path


def _nvrtc(source, arch, name, output="ltoir"):
    """NVRTC's ``output`` (LTO-IR, or a cubin: a PTX target would make cuda.core ask the driver)."""
    from cuda.core import Program, ProgramOptions

    flags = options()
    if output != "ltoir":
        flags = {k: v for k, v in flags.items() if k != "link_time_optimization"}
    tag = (arch, json.dumps(flags, sort_keys=True))
    extra, pch = _pch_options(tag)
    program = Program(source, "c++", options=ProgramOptions(
        name=name,
        arch=arch,
        include_path=_include_path(),
        **flags,
        **extra,
    ))
    start = time.perf_counter()
    try:
        code = program.compile(output).code
    except Exception as exc:  # cuda.core raises its own error types; keep the log and source visible
        if _TOO_BIG in str(exc):
            raise _StorageTooBig from None
        raise RuntimeError(
            f"numba_tiles: NVRTC failed to compile {name} for {arch}. This is a numba_tiles bug; "
            f"please report it with this message.\n{exc}\n--- source ---\n{source}"
        ) from exc
    if pch is not None:
        # A PCH NVRTC did not make (heap too small, ...) is never asked for: use_pch on a
        # missing file is an error, not a plain compile.
        _pch_made[tag] = pch if program.pch_status == "created" else None
    cache._stats["nvrtc_seconds"] += time.perf_counter() - start
    cache._stats["nvrtc"] += 1
    return code


def parse_arch(arch):
    """``"sm_90"`` → ``(9, 0)``, for the architectures this toolkit's NVRTC supports."""
    supported = _toolchain.supported_archs()
    if arch not in supported:
        raise ValueError(
            f"numba_tiles.compile: arch must be one of {', '.join(supported)} "
            f"(what NVRTC {'%d.%d' % _toolchain.nvrtc_version()} supports); got {arch!r}"
        )
    number = arch[3:]
    return int(number[:-1]), int(number[-1])


def compile(pyfunc, signature, *, arch="sm_90", output="cubin", lineinfo=False):
    """Compile a kernel for ``arch`` and link it with its intrinsics, on any machine: no GPU needed.

    ``arch`` is any real architecture the pinned NVRTC supports (CUDA 13.0: sm_75 to sm_121).

    ``pyfunc`` is a Python function or a ``@cuda.jit`` kernel; ``signature`` its argument types
    (``"void(float32[:], float32[:])"`` or a tuple of Numba types). ``output="cubin"`` or
    ``"ptx"`` returns the bytes of the fully linked kernel; ``output="ltoir"`` returns the list of
    LTO-IR modules that the link would take (Numba's first, then the intrinsics').

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
    from cuda.core import Linker, LinkerOptions, ObjectCode
    from numba import cuda

    if output not in ("cubin", "ptx", "ltoir"):
        raise ValueError(f"numba_tiles.compile: output must be 'cubin', 'ptx' or 'ltoir'; got {output!r}")
    cc = parse_arch(arch)
    pyfunc = getattr(pyfunc, "py_func", pyfunc)
    codes, _ = cuda.compile_all(
        pyfunc, signature, device=False, abi="numba", output="ltoir", cc=cc, lineinfo=lineinfo
    )
    # bytes, our LTOIR objects (.data), or cuda.core ObjectCode (.code: numba-cuda's own fp16 helpers)
    modules = [code if isinstance(code, bytes) else getattr(code, "data", None) or code.code for code in codes]
    if output == "ltoir":
        return modules
    options = LinkerOptions(arch=arch, link_time_optimization=True, lineinfo=lineinfo, ptx=output == "ptx")
    linker = Linker(*(ObjectCode.from_ltoir(m) for m in modules), options=options)
    return linker.link(output).code


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
        compile(kernel, sig, arch=a, output="ltoir")  # builds (or loads) the intrinsics' LTO-IR
        done.append((getattr(kernel, "py_func", kernel).__name__, str(sig), a))
    if progress:
        print(f"numba_tiles: precompiled {len(done)} kernel signature(s) in {time.perf_counter() - start:.1f} s"
              + (f"; skipped (no signatures): {', '.join(missing)}" if missing else ""))
    return done
