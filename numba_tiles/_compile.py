"""`numba_tiles.compile` and `numba_tiles.precompile` (a kernel compiled and linked for any arch, with no GPU), and
the LTO-IR of a user's Python functions (ops, comparisons, epilogues), compiled by the kernel's compiler."""

import re
import threading
import time

from . import _link, _programs, _toolchain
from ._backends import mlir, mlir_compile, numba_cuda, numba_cuda_compile, simulated
from ._target import Target

_lock = threading.Lock()  # (the memo of users' functions, and the functions their symbols keep alive)


def typing_cc():
    """The compute capability of the kernel being typed, by whichever compiler types it; None on the simulator
    (which compiles nothing)."""
    if simulated.simulator_enabled():
        return None
    return mlir.typing_cc() or numba_cuda.target_flags()[0]


def device_function(value):
    """The Python function of ``value``, a ``@cuda.jit(device=True)`` function of numba-cuda (or its simulator's)
    or of numba-cuda-mlir, else None."""
    return numba_cuda.python_function(value) or mlir.python_function(value)


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
    plain = all(
        isinstance(v, _PLAIN) or (isinstance(v, tuple) and all(isinstance(x, _PLAIN) for x in v)) for v in cells
    )
    if not plain:
        with _lock:
            if not any(f is pyfunc for f in _kept):
                _kept.append(pyfunc)
    origin = ":".join(
        map(
            str,
            (
                pyfunc.__module__,
                pyfunc.__qualname__,
                code.co_code.hex(),
                code.co_consts,
                cells if plain else f"id {id(pyfunc)}",
                *more,
            ),
        )
    )
    name = re.sub(r"\W", "_", pyfunc.__name__)
    return f"numba_tiles_{kind}_{name}_{hashlib.sha256(origin.encode()).hexdigest()[:12]}"


_functions = {}  # (symbol, cc, by numba-cuda-mlir) → LTO-IR of a user's Python function


def python_function(symbol, pyfunc, signature, cc, fastmath=False, by_mlir=False):
    """A user's Python function (an op) compiled to LTO-IR under ``symbol`` (C ABI), memoized: by numba-cuda, or
    (``by_mlir``) by numba-cuda-mlir, the compiler of the kernel that calls it (``fastmath``: the device
    function's own option; its symbol tells the two compiles apart).

    Like the intrinsics' programs, one object per symbol and arch is shared by every code
    library that needs it, so the symbol is defined once in any link.
    """
    with _lock:
        found = _functions.get((symbol, cc, by_mlir))
        if found is None:
            compiler = mlir if by_mlir else numba_cuda
            found = _functions[symbol, cc, by_mlir] = numba_cuda_compile.ltoir(
                f"{symbol}.ltoir", compiler.compile_device_ltoir(pyfunc, signature, symbol, cc, fastmath)
            )
        return found


def default_arch():
    """This machine's GPU's arch, else sm_90: what a description (`FFT`, `Solver`) is made for when not told (one
    made on a machine with no GPU, or on the simulator, is for cross-compiling)."""
    cc = None if simulated.simulator_enabled() else _toolchain.current_device_cc()
    return "sm_%d%d" % cc if cc else "sm_90"


def parse_arch(arch):
    """``"sm_90"`` → ``(9, 0)``, for the architectures this toolkit's NVRTC supports; an arch-specific
    ``"sm_90a"`` (sm_90 on) → ``(9, 0, "a")``."""
    supported = _toolchain.supported_archs()
    specific = (
        isinstance(arch, str) and arch.endswith("a") and arch[:-1] in supported and Target(arch[:-1]).cc >= (9, 0)
    )
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
    if simulated.simulator_enabled():
        from ._errors import error

        raise error(
            intrinsic,
            f"Numba's simulator (NUMBA_ENABLE_CUDASIM=1) runs kernels as Python and compiles {nothing}",
            f"unset NUMBA_ENABLE_CUDASIM to {to}: no GPU is needed",
        )


def compile(pyfunc, signature, *, arch="sm_90", output="cubin", lineinfo=False, debug=False):
    """Compile a kernel for ``arch`` and link it with its intrinsics, on any machine: no GPU needed.

    ``arch`` is any real architecture the pinned NVRTC supports (CUDA 13.0: sm_75 to sm_121; 12.9: sm_50 on),
    or, from sm_90 on, its arch-specific form (``"sm_90a"``): what numba-cuda itself links a kernel for on
    such a GPU (Numba's part compiled for ``compute_90a``; the intrinsics' LTO-IR is the same as for sm_90).

    ``pyfunc`` is a Python function or a ``@cuda.jit`` kernel (numba-cuda's, or numba-cuda-mlir's: then
    ``output="cubin"`` only); ``signature`` its argument types
    (``"void(float32[:], float32[:])"`` or a tuple of Numba types). ``output="cubin"`` or
    ``"ptx"`` returns the bytes of the fully linked kernel; ``output="ltoir"`` returns the list of
    modules that the link would take (Numba's LTO-IR first, then the intrinsics'; a `Solver`'s kernel adds
    cuSOLVERDx's fatbin, a ``bytes`` of the class ``Fatbin``; a kernel that syncs its grid, CUDA's device
    runtime, a ``bytes`` of the class ``Library``). ``lineinfo``
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
    if mlir.is_kernel(pyfunc):  # (a numba-cuda-mlir kernel: its own compiler links it)
        if output != "cubin":
            raise ValueError(
                f"numba_tiles.compile: a numba-cuda-mlir kernel compiles to a cubin only so far; got output={output!r}"
            )
        return mlir_compile.compile_kernel(pyfunc, signature, cc, arch)
    # A @cuda.jit kernel's own options that shape its code, as its launches compile it
    options = getattr(pyfunc, "targetoptions", {})
    pyfunc = getattr(pyfunc, "py_func", pyfunc)
    # While recording (shared_memory), device functions compile again, so that their intrinsics are seen.
    modules = numba_cuda_compile.compile_kernel_ltoir(
        pyfunc,
        signature,
        cc,
        lineinfo=lineinfo,
        debug=debug,
        fresh=_programs.is_recording(),
        fastmath=options.get("fastmath", False),
        launch_bounds=options.get("launch_bounds"),
    )
    if output == "ltoir":
        return modules
    if not arch.endswith("a") and any(m in _programs.arch_specific for m in modules):
        raise _programs.arch_specific_error(arch)
    linker_options = LinkerOptions(
        arch=arch,
        link_time_optimization=True,
        lineinfo=lineinfo,
        debug=debug,
        ptx=output == "ptx",
        max_register_count=options.get("max_registers"),
    )
    objects = [
        ObjectCode.from_fatbin(m)
        if isinstance(m, numba_cuda_compile.Fatbin)
        else ObjectCode.from_library(m)
        if isinstance(m, numba_cuda_compile.Library)
        else ObjectCode.from_ltoir(m)
        for m in modules
    ]
    return _link.link(objects, linker_options, output)


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
        compile(kernel, sig, arch=a, output="cubin" if mlir.is_kernel(kernel) else "ltoir")
        done.append((getattr(kernel, "py_func", kernel).__name__, str(sig), a))
    if progress:
        print(
            f"numba_tiles: precompiled {len(done)} kernel signature(s) in {time.perf_counter() - start:.1f} s"
            + (f"; skipped (no signatures): {', '.join(missing)}" if missing else "")
        )
    return done
