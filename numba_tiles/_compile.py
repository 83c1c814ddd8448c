"""C++ → LTO-IR with NVRTC (through ``cuda.core.Program``), once per key and process; and `compile`.

The key is a digest of everything that changes the bytes: the generated C++ text, the target
arch, the options, and the toolchain versions (NVRTC, CCCL, our lto_libs, numba_tiles), so it
can be persisted as it is.
"""

import collections
import hashlib
import json
import re
import threading

from . import _toolchain

_OPTIONS = {"std": "c++17", "link_time_optimization": True, "relocatable_device_code": True}

_memo = {}
_memo_lock = threading.Lock()
stats = collections.Counter()  # "nvrtc": programs compiled, "memo": reuses in this process


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


def ltoir(source, arch, name):
    """The LTO-IR of a C++ translation unit, as a Numba linkable object.

    The same object is returned for the same key, so Numba's set of linking files links it once
    however many call sites and device functions use it.
    """
    from numba.cuda.cudadrv.linkable_code import LTOIR

    digest = key(source, arch)
    with _memo_lock:
        found = _memo.get(digest)
        if found is not None:
            stats["memo"] += 1
            return found
    # NVRTC runs outside the lock: distinct instantiations compile in parallel threads.
    code = _nvrtc(source, arch, name)
    with _memo_lock:
        stats["nvrtc"] += 1
        return _memo.setdefault(digest, LTOIR(code, name=f"{name}.ltoir"))


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
    """``"sm_90"`` → ``(9, 0)``; only real architectures sm_70 and newer."""
    match = re.fullmatch(r"sm_(\d+)(\d)", arch) if isinstance(arch, str) else None
    if match is None or int(match.group(1)) < 7:
        raise ValueError(f"numba_tiles.compile: arch must be 'sm_70' or newer, like 'sm_90'; got {arch!r}")
    return int(match.group(1)), int(match.group(2))


def compile(pyfunc, signature, *, arch="sm_90", output="cubin", lineinfo=False):
    """Compile a kernel for ``arch`` and link it with its intrinsics, on any machine: no GPU needed.

    ``pyfunc`` is a Python function or a ``@cuda.jit`` kernel; ``signature`` its argument types
    (``"void(float32[:], float32[:])"`` or a tuple of Numba types). ``output="cubin"`` or
    ``"ptx"`` returns the bytes of the fully linked kernel; ``output="ltoir"`` returns the list of
    LTO-IR modules that the link would take (Numba's first, then the intrinsics').

    Example::

        import numba_tiles as tiles
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
