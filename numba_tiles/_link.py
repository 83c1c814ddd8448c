"""The last step: a kernel's modules linked by nvJitLink (LTO, then ptxas), kept in the disk cache.

A kernel that calls an intrinsic links Numba's LTO-IR with ours. nvJitLink optimizes the whole
program and runs ptxas on it: for a cuBLASDx kernel that took 0.7 s on the 2-core machine, in
every process, with every LTO-IR module already in the cache. What it makes depends only on the
modules' bytes, the link options and nvJitLink's version, so it is stored under a key of those
(`numba_tiles.cache`; ``NUMBA_TILES_CACHE=0`` turns it off with the rest). Both links of a kernel
go through `link`: `tiles.compile`'s, and numba-cuda's own at a kernel's first launch
(`numba_cuda_compile.link_through`).
"""

import dataclasses
import hashlib
import re
import time
import warnings

from . import cache
from ._stats import count
from ._version import __version__


def components(objects, options, output):
    """What a link's key digests: each module's kind and SHA-256, the options, ``output`` and the versions
    of nvJitLink and numba_tiles. The modules are sorted: numba-cuda keeps a kernel's linking files in
    a set, so their order changes from process to process, and it does not change the program (the
    definitions that two modules share are the same template instances, ODR)."""
    from cuda.bindings import nvjitlink

    settings = {k: v for k, v in dataclasses.asdict(options).items() if v is not None and k != "name"}
    return {
        "modules": sorted([o.code_type, hashlib.sha256(o.code).hexdigest()] for o in objects),
        "options": {k: repr(v) for k, v in sorted(settings.items())},
        "output": output,
        "versions": {"nvjitlink": "%d.%d" % nvjitlink.version(), "numba_tiles": __version__},
    }


def link(objects, options, output="cubin"):
    """The bytes of ``output`` ('cubin' or 'ptx') linked from ``objects`` (cuda.core ``ObjectCode``s)
    with ``options`` (``LinkerOptions``): from the cache, else made by nvJitLink and stored.
    """
    from cuda.core import Linker

    def make():
        start = time.perf_counter()
        linker = Linker(*objects, options=options)
        code = bytes(linker.link(output).code)
        count("links")
        count("link_seconds", time.perf_counter() - start)
        warn_if_serialized(linker.get_info_log())
        return code

    return cache.cached(components(objects, options, output), make)


# ptxas's C7509/C7510 in nvJitLink's log:
# "wgmma.mma_async instructions are serialized due to <why> in the function '<symbol>'"
_SERIALIZED = re.compile(r"wgmma\.mma_async instructions are serialized due to (.+?) in the function '(\w+)'")


def warn_if_serialized(log):
    """A ``NumbaPerformanceWarning`` for each kernel whose ``wgmma`` ptxas serialized (each then waits for the
    one before; tiles.Matmul.tile's 8192^3 GEMMs on Hopper took 14% longer on an H200 so), as nvJitLink's info
    ``log`` reports it. A call in the kernel does it (``print``, or NUMBA_TILES_DEBUG's messages). Shown when
    the kernel is linked, not when the link comes from the disk cache."""
    from ._backends.numba_cuda import NumbaPerformanceWarning  # (numba-cuda's, as its own launch warnings)

    for why, symbol in _SERIALIZED.findall(log or ""):
        kernel = _python_name(symbol)
        warnings.warn(
            f"numba_tiles: ptxas serialized the wgmma (tensor-core products) of kernel {kernel}, "
            f"due to {why}: each waits for the one before. A call in the kernel does this: print(), or the "
            "messages NUMBA_TILES_DEBUG=1 compiles in; keep calls out of kernels that call "
            "Matmul.tile",
            NumbaPerformanceWarning,
            stacklevel=2,
        )


def _python_name(symbol):
    """A Numba kernel's symbol as the dotted path it mangles (``_ZN8examples4gemm...`` → ``examples.gemm...``)."""
    parts, rest = [], symbol[3:] if symbol.startswith("_ZN") else ""
    while length := re.match(r"\d+", rest):  # (each name: its length, then itself)
        end = length.end() + int(length.group())
        parts.append(rest[length.end() : end])
        rest = rest[end:]
    return ".".join(parts) or symbol
