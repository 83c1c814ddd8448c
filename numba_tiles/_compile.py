"""C++ → LTO-IR with NVRTC (through ``cuda.core.Program``), once per key and process; and `compile`.

The key is a digest of everything that changes the bytes: the generated C++ text, the target
arch, the options, and the toolchain versions (NVRTC, CCCL, our lto_libs, numba_tiles), so it
can be persisted as it is.
"""

import collections
import hashlib
import json
import threading
import time

from . import _toolchain

_OPTIONS = {"std": "c++17", "link_time_optimization": True, "relocatable_device_code": True}

_memo = {}
_lock = threading.Lock()
# "nvrtc": programs compiled, "nvrtc_seconds": time spent in them, "memo": reuses in this process
stats = collections.Counter()


def translation_unit(instances):
    """One C++ source defining the entry points of ``instances`` (anything with header, entry())."""
    includes = "".join(f'#include "{h}"\n' for h in sorted({i.header for i in instances}))
    return includes + "".join("\n" + i.entry() for i in instances)


def key(source, arch):
    """The hex digest naming one compiled product; its components are in `key_components`."""
    blob = json.dumps(key_components(source, arch), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()


def key_components(source, arch):
    return {
        "source": hashlib.sha256(source.encode()).hexdigest(),
        "arch": arch,
        "options": _OPTIONS,
        **_toolchain.versions(),
    }


def ltoir(instances, arch):
    """The LTO-IR defining each instance's entry point, as Numba linkable objects (one per instance).

    Instances not compiled yet in this process go into one NVRTC program together: the CUB
    headers are parsed once, and each further instantiation costs little. An instance keeps
    the object it was first compiled in, so Numba's set of linking files holds each object once
    however many call sites use it.
    """
    from numba.cuda.cudadrv.linkable_code import LTOIR

    keys = [key(translation_unit([i]), arch) for i in instances]
    # One lock around lookup and compile: no instance is compiled twice (NVRTC holds the GIL,
    # so threads would not compile in parallel anyway).
    with _lock:
        missing = {k: i for k, i in zip(keys, instances) if k not in _memo}
        stats["memo"] += len(keys) - len(missing)
        if missing:
            todo = list(missing.values())
            name = todo[0].symbol if len(todo) == 1 else f"numba_tiles_batch_of_{len(todo)}"
            start = time.perf_counter()
            code = LTOIR(_nvrtc(translation_unit(todo), arch, name), name=f"{name}.ltoir")
            stats["nvrtc_seconds"] += time.perf_counter() - start
            stats["nvrtc"] += 1
            _memo.update(dict.fromkeys(missing, code))
        return [_memo[k] for k in keys]


def _nvrtc(source, arch, name):
    from cuda.core import Program, ProgramOptions

    options = ProgramOptions(
        name=name,
        arch=arch,
        include_path=[str(_toolchain.lto_libs_dir()), str(_toolchain.cccl_include_dir())],
        **_OPTIONS,
    )
    program = Program(source, "c++", options=options)
    try:
        return program.compile("ltoir").code
    except Exception as exc:  # cuda.core raises its own error types; keep the log and source visible
        raise RuntimeError(
            f"numba_tiles: NVRTC failed to compile {name} for {arch}. This is a numba_tiles bug; "
            f"please report it with this message.\n{exc}\n--- source ---\n{source}"
        ) from exc


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
    modules = [code if isinstance(code, bytes) else code.data for code in codes]
    if output == "ltoir":
        return modules
    options = LinkerOptions(arch=arch, link_time_optimization=True, lineinfo=lineinfo, ptx=output == "ptx")
    linker = Linker(*(ObjectCode.from_ltoir(m) for m in modules), options=options)
    return linker.link(output).code
