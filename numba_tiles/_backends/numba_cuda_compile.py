"""numba-cuda's compilers, links and caches of whole kernels, where they meet numba_tiles' LTO-IR (each pinned by a
contract test in ``tests/cpu/test_numba_contract.py``):
- `lazy_ltoir`: a public ``numba.cuda.LTOIR`` whose bytes are made when numba-cuda first reads
  them (its documented file-object form), so that all of a kernel's intrinsics compile together (or a
  ``numba.cuda.Fatbin``: cuSOLVERDx's drivers);
- `compile_kernel_ltoir`: numba-cuda's public ``compile_all`` of a kernel to LTO-IR (and, seen through its
  ``_compile_pyfunc_with_fixup``, whether the kernel syncs its grid);
- `device_functions_for`: device functions compiled for the kernel's arch, with no GPU;
- `loaded_as_extension`: whether numba-cuda's extension loader is importing us;
- `cache_kernels_with_intrinsics`: ``@cuda.jit(cache=True)`` for kernels that link our LTO-IR;
- `link_through`: numba-cuda's link of a kernel that links our LTO-IR, through the disk cache;
- `link_line_info_with_nvrtc`: numba-cuda's debug-info module flags given NVRTC's merge behavior,
  so that a kernel with line info links with our LTO-IR.
"""

import contextlib
import functools
import io
import sys
import weakref

from numba import cuda


class _Deferred(io.BytesIO):
    """A file object whose content is made on first read: ``LTOIR`` reads a file object's ``getvalue()``
    when numba-cuda takes its ``data`` at link time."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def getvalue(self):
        return self._make()


_ours = weakref.WeakSet()  # the LTO-IR objects numba_tiles linked into code libraries


def lazy_ltoir(name, make, kind=cuda.LTOIR):
    """A ``numba.cuda.LTOIR`` (or another ``kind`` of linkable code: ``numba.cuda.Fatbin``) named ``name`` whose
    bytes are ``make()``, called when numba-cuda links it."""
    code = kind(_Deferred(make), name=name)
    _ours.add(code)
    return code


class Fatbin(bytes):
    """A kernel's module that is a fatbin, not LTO-IR (`compile_kernel_ltoir`): linked as such."""


class Library(bytes):
    """A kernel's module that is a static library (`compile_kernel_ltoir`: CUDA's device runtime, for a grid's
    sync): linked as such."""


def ltoir(name, data):
    code = cuda.LTOIR(data, name=name)
    _ours.add(code)
    return code


def compile_kernel_ltoir(
    pyfunc, signature, cc, lineinfo=False, debug=False, fresh=False, fastmath=False, launch_bounds=None
):
    """A kernel's modules as bytes: numba-cuda's LTO-IR first, then every linked object's (a fatbin as a `Fatbin`;
    CUDA's device runtime as a `Library` where the kernel syncs its grid, as numba-cuda's launch links it;
    ``fresh``: its device functions compiled again, see `device_functions_for`)."""
    with device_functions_for(cc, fresh), _cooperative() as libraries:
        codes, _ = cuda.compile_all(
            pyfunc,
            signature,
            device=False,
            abi="numba",
            output="ltoir",
            cc=cc,
            lineinfo=lineinfo,
            debug=debug,
            opt=not debug,
            fastmath=fastmath,
            launch_bounds=launch_bounds,
        )
    # bytes, LTOIR or Fatbin objects (.data), or cuda.core ObjectCode (.code: numba-cuda's own fp16 helpers)
    modules = [
        Fatbin(code.data)
        if isinstance(code, cuda.Fatbin)
        else code
        if isinstance(code, bytes)
        else getattr(code, "data", None) or code.code
        for code in codes
    ]
    if any(library.use_cooperative for library in libraries):
        modules.append(_device_runtime())
    return modules


@functools.cache
def _device_runtime():
    """CUDA's device runtime (``libcudadevrt.a``, where numba-cuda finds it), read once a process."""
    from numba.cuda.cudadrv.libs import get_cudalib

    with open(get_cudalib("cudadevrt", static=True), "rb") as archive:
        return Library(archive.read())


@contextlib.contextmanager
def _cooperative():
    """The code libraries ``cuda.compile_all`` makes while the block runs (a list): whether a kernel syncs its
    grid (``use_cooperative``) is known to its library only, which ``compile_all`` does not return."""
    from numba.cuda import compiler

    original, made = compiler._compile_pyfunc_with_fixup, []

    def compile_and_keep(*args, **kwargs):
        library, result = original(*args, **kwargs)
        made.append(library)
        return library, result

    compiler._compile_pyfunc_with_fixup = compile_and_keep
    try:
        yield made
    finally:
        compiler._compile_pyfunc_with_fixup = original


class _Device:
    def __init__(self, cc):
        self.compute_capability = cc


@contextlib.contextmanager
def device_functions_for(cc, fresh=False):
    """While the block runs, in this thread, the ``@cuda.jit(device=True)`` functions a kernel calls
    compile for ``cc`` (a tuple), as the kernel does, with no GPU needed; ``fresh``: compiled again,
    in versions dropped afterwards (so that their intrinsics are lowered again, for `shared_memory`).

    numba-cuda 0.30 compiles a device function called from a kernel for the current device
    (``CUDADispatcher.compile_device`` asks ``get_current_device()``), whatever the kernel's
    ``cc``, and keeps one compiled version per argument types. So ``tiles.compile`` of a kernel
    that calls a helper failed on a machine with no GPU, and on one with a GPU the helper's
    intrinsics were built for that GPU, not for the arch asked. Here the dispatcher module's
    ``get_current_device`` answers ``cc`` to this thread, and a device function's compiled
    versions for another cc than the GPU's are kept apart (``overloads`` read through a
    property), so that neither a launch nor another arch ever takes them. Numba's compiler lock
    is held throughout. A numba-cuda without these names is left as it is (the contract test
    fails).
    """
    import collections
    import threading

    from numba.cuda import dispatcher
    from numba.cuda.core.compiler_lock import global_compiler_lock

    cls = dispatcher.CUDADispatcher
    original = getattr(dispatcher, "get_current_device", None)
    if original is None or "overloads" in vars(cls) or not hasattr(cls, "compile_device"):
        yield
        return
    me = threading.get_ident()

    @functools.cache
    def own():
        """The GPU's cc, asked only once a device function compiles (it makes numba-cuda's context)."""
        try:
            return tuple(original().compute_capability)
        except Exception:  # no driver or no GPU: every version is another cc's
            return None

    def get_current_device():
        return _Device(cc) if threading.get_ident() == me else original()

    throwaway = collections.defaultdict(collections.OrderedDict)

    def table(self):
        # (a dispatcher made meanwhile, e.g. for an @overload's implementation, reads its overloads in its
        # __init__, before it has targetoptions: it is no device function yet)
        if self.__dict__.get("targetoptions", {}).get("device") and threading.get_ident() == me:
            if fresh:
                return throwaway[id(self)]
            if tuple(cc) != own():
                by_cc = self.__dict__.setdefault("_numba_tiles_overloads", {})
                return by_cc.setdefault(tuple(cc), collections.OrderedDict())
        return self.__dict__["overloads"]

    def set_table(self, value):
        self.__dict__["overloads"] = value

    with global_compiler_lock:
        dispatcher.get_current_device, cls.overloads = get_current_device, property(table, set_table)
        try:
            yield
        finally:
            dispatcher.get_current_device = original
            del cls.overloads


# --- numba-cuda's extension entry point -------------------------------------------------

EXTENSION_LOADER = "numba.cuda.core.entrypoints"  # the module that loads ``numba_cuda_extensions`` entry points


def loaded_as_extension():
    """Whether numba_tiles is being imported by numba-cuda's extension loader (our ``numba_cuda_extensions``
    entry point, at a process's first kernel compile) rather than by code that uses it."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == EXTENSION_LOADER:
            return True
        frame = frame.f_back
    return False


# --- @cuda.jit(cache=True) ----------------------------------------------------------------


def cache_kernels_with_intrinsics(stamp):
    """Let ``@cuda.jit(cache=True)`` cache kernels that call intrinsics, and invalidate them with ``stamp()``.

    numba-cuda 0.30 refuses to pickle a code library that has linking files
    (``CUDACodeLibrary._reduce_states``: "Cannot pickle CUDACodeLibrary with linking files"),
    and every kernel that calls an intrinsic links LTO-IR of ours, so ``cache=True`` failed at the
    first launch. numba-cuda saves a kernel after ``bind()``, when its code library holds the
    linked cubin for the GPU's cc; the cache entry is per cc (its index key has the cc) and is
    loaded as that cubin, never linked again. So ours are left out of what is pickled when the
    cubin is there (other linking files still refuse, as before). ``stamp()`` (numba_tiles',
    the toolchain's and every library's versions, and the options from the environment) joins
    numba-cuda's index key, so that a kernel cached under another toolchain, ``lto_libs`` or
    ``NUMBA_TILES_DEBUG`` is compiled again. A numba-cuda without these names is left as it is
    (``cache=True`` then fails as before, and the contract test fails).
    """
    from numba.cuda import codegen, dispatcher

    library, cache = getattr(codegen, "CUDACodeLibrary", None), getattr(dispatcher, "CUDACache", None)
    if not (hasattr(library, "_reduce_states") and hasattr(cache, "_index_key")) or hasattr(library, "_numba_tiles"):
        return
    reduce_states, index_key = library._reduce_states, cache._index_key

    def _reduce_states(self):
        ours = {f for f in self._linking_files if f in _ours}
        if not ours or not self._cubin_cache:
            return reduce_states(self)
        self._linking_files -= ours
        try:
            return reduce_states(self)
        finally:
            self._linking_files |= ours

    def _index_key(self, sig, codegen):
        return index_key(self, sig, codegen) + (("numba_tiles", stamp()),)

    library._reduce_states, cache._index_key, library._numba_tiles = _reduce_states, _index_key, True


def link_through(link):
    """Link every kernel that links LTO-IR of ours with ``link(objects, options)`` (`_link.link`: the disk cache).

    numba-cuda 0.30 links a kernel at its first launch in ``_Linker.complete`` (cuda.core's
    ``Linker`` over the ``ObjectCode``s it gathered, with the options of
    ``_get_linker_options``), which returns the cubin as an ``ObjectCode``. For a link whose
    objects include one of ours (by name), ``complete`` takes the cubin from ``link`` instead;
    its info and error logs are then empty. Other links are numba-cuda's, as before. A numba-cuda
    without these names is left as it is (every launch links, and the contract test fails).
    """
    from cuda.core import ObjectCode
    from numba.cuda.cudadrv import driver

    linker = getattr(driver, "_Linker", None)
    if not all(hasattr(linker, n) for n in ("complete", "_get_linker_options")) or hasattr(linker, "_numba_tiles"):
        return
    complete = linker.complete

    def complete_through_link(self):
        names = {code.name for code in list(_ours)}
        if not any(getattr(o, "name", None) in names for o in self._object_codes):
            return complete(self)
        cubin = link(self._object_codes, self._get_linker_options(ptx=False))
        # As after numba-cuda's own link: `info_log` (read by get_cubin) needs `linker` set and `_complete`.
        self.linker, self._info_log, self._error_log, self._complete = link, "", "", True
        return ObjectCode.from_cubin(cubin, name=f"{self.arch}.cubin")

    linker.complete, linker._numba_tiles = complete_through_link, True


# --- line info -----------------------------------------------------------------------------

_LLVM_FLAG_ERROR = 1  # LLVM's module-flag merge behavior "Error", which NVRTC's LTO-IR uses


def link_line_info_with_nvrtc():
    """Give numba-cuda's "Dwarf Version" / "Debug Info Version" module flags NVRTC's merge behavior.

    With ``lineinfo=True`` or ``debug=True``, numba-cuda marks these flags with LLVM's "Warning"
    behavior (2). NVRTC's LTO-IR marks them "Error" (1), with or without ``-lineinfo``.
    nvJitLink refuses to link two modules whose behaviors for one flag differ ("linking module
    flags 'Debug Info Version': IDs have conflicting behaviors"), so every kernel with line info
    that called an intrinsic failed to link. The flags' values are unchanged. This replaces
    numba-cuda 0.30's ``DIBuilder._set_module_flags``; a numba-cuda without that method is left as
    it is, and the contract test fails.
    """
    from numba.cuda import cgutils, debuginfo

    builder = debuginfo.DIBuilder
    if not all(
        hasattr(builder, name) for name in ("_set_module_flags", "_const_int", "DWARF_VERSION", "DEBUG_INFO_VERSION")
    ):
        return

    def set_module_flags(self):
        flags = cgutils.get_or_insert_named_metadata(self.module, "llvm.module.flags")
        for name, version in (("Dwarf Version", self.DWARF_VERSION), ("Debug Info Version", self.DEBUG_INFO_VERSION)):
            if version is not None:
                flag = self.module.add_metadata([self._const_int(_LLVM_FLAG_ERROR), name, self._const_int(version)])
                if flag not in flags.operands:
                    flags.add(flag)

    builder._set_module_flags = set_module_flags
