"""Where the CUDA pieces come from (NVRTC, CCCL headers, our lto_libs) and their versions.

Everything is found in Python packages (the pinned ``nvidia-*`` wheels); no system toolkit is
needed. Versions feed the compile key, so a toolkit change never reuses stale LTO-IR.
"""

import functools
import hashlib
import importlib.util
import re
from pathlib import Path

from . import __version__

_PACKAGE = Path(__file__).resolve().parent


@functools.cache
def lto_libs_dir():
    """The C++ sources: shipped inside the wheel, or beside the package in a checkout."""
    for candidate in (_PACKAGE / "lto_libs", _PACKAGE.parent / "lto_libs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"numba_tiles: lto_libs/ not found next to {_PACKAGE}; reinstall numba_tiles")


@functools.cache
def lto_libs_headers():
    """The family headers (block_reduce.cuh, warp.cuh, ...) in a fixed order; common.cuh comes with each."""
    return tuple(sorted(p.name for p in lto_libs_dir().glob("*.cuh") if p.name != "common.cuh"))


def _wheel_header_dir(directory, marker, pathfinder_name, requirement):
    """The include ``directory`` (under ``nvidia/cu*/``) of an nvidia-* wheel, checked by its ``marker`` file.

    The ``nvidia`` namespace package is searched first so that a wheel installed with
    ``pip --target`` on ``PYTHONPATH`` wins over one elsewhere; cuda.pathfinder is the fallback.
    """
    spec = importlib.util.find_spec("nvidia")
    for root in spec.submodule_search_locations if spec else ():
        for found in sorted(Path(root).glob(f"cu*/{directory}")):
            if (found / marker).is_file():
                return found
    from cuda.pathfinder import find_nvidia_header_directory

    found = find_nvidia_header_directory(pathfinder_name)
    if found is None:
        raise FileNotFoundError(f"numba_tiles: {marker} not found; pip install '{requirement}'")
    return Path(found)


@functools.cache
def cccl_include_dir():
    """CCCL (CUB, libcu++) headers, from the ``nvidia-cuda-cccl`` wheel."""
    return _wheel_header_dir("include/cccl", "cub/cub.cuh", "cccl", "nvidia-cuda-cccl==13.0.*")


@functools.cache
def cuda_include_dir():
    """The CUDA headers NVRTC lacks (cuda_fp16.h, cuda_bf16.h), from the ``nvidia-cuda-runtime`` wheel.

    CCCL needs them: without them CUB 3.0 takes its half-precision SIMD path for any 32-bit
    type in ThreadReduce (over 4 or more items), which returns wrong sums.
    """
    return _wheel_header_dir("include", "cuda_fp16.h", "cudart", "nvidia-cuda-runtime==13.0.*")


@functools.cache
def cccl_version():
    text = (cccl_include_dir() / "cuda" / "std" / "__cccl" / "version.h").read_text()
    return int(re.search(r"#define CCCL_VERSION (\d+)", text).group(1))


@functools.cache
def nvrtc_version():
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"numba_tiles: NVRTC did not load ({err}); pip install 'nvidia-cuda-nvrtc==13.0.*'")
    return (major, minor)


@functools.cache
def cuda_headers_version():
    text = (cuda_include_dir() / "cuda_runtime_api.h").read_text()
    return int(re.search(r"#define CUDART_VERSION\s+(\d+)", text).group(1))


@functools.cache
def lto_libs_digest():
    h = hashlib.sha256()
    for path in sorted(lto_libs_dir().rglob("*")):
        if path.is_file():
            h.update(path.relative_to(lto_libs_dir()).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def supported_archs():
    """The real architectures this NVRTC compiles for, as ``"sm_XY"`` strings (CUDA 13: sm_75 on)."""
    from cuda.bindings import nvrtc

    err, archs = nvrtc.nvrtcGetSupportedArchs()
    return tuple(f"sm_{a}" for a in archs)


def versions():
    """Everything outside the generated C++ text that changes the compiled bytes (part of the compile key)."""
    return {
        "numba_tiles": __version__,
        "nvrtc": "%d.%d" % nvrtc_version(),
        "cccl": cccl_version(),
        "cuda_headers": cuda_headers_version(),
        "lto_libs": lto_libs_digest(),
    }


def _library(name):
    from cuda.pathfinder import load_nvidia_dynamic_lib

    try:
        return load_nvidia_dynamic_lib(name).abs_path
    except Exception as exc:  # pathfinder raises several kinds; all mean "not usable"
        return f"not found ({type(exc).__name__})"


def _driver_version():
    """(major, minor) of the installed driver's CUDA version, or None without a driver."""
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        err, version = driver.cuDriverGetVersion()
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        return version // 1000, version % 1000 // 10
    except Exception:  # no libcuda at all
        return None


def report():
    """(rows of (what, value), problems with their fixes): what ``python -m numba_tiles doctor`` prints."""
    from importlib.metadata import PackageNotFoundError, version

    from cuda.bindings import nvjitlink

    from . import cache

    def package(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    rows, problems = [], []
    for name in ("numba-cuda", "numba", "cuda-core", "cuda-bindings", "numpy"):
        rows.append((name, package(name)))
    nvrtc = "%d.%d" % nvrtc_version()
    jitlink = "%d.%d" % nvjitlink.version()
    rows += [
        ("NVRTC", f"{nvrtc}  {_library('nvrtc')}"),
        ("nvJitLink", f"{jitlink}  {_library('nvJitLink')}"),
        ("NVVM", _library("nvvm")),
        ("CCCL", f"{cccl_version()}  {cccl_include_dir()}"),
        ("CUDA headers", f"{cuda_headers_version()}  {cuda_include_dir()}"),
        ("MathDx", package("nvidia-mathdx")),
        ("targets", ", ".join(supported_archs())),
    ]
    if nvrtc_version() > nvjitlink.version():
        problems.append(f"NVRTC {nvrtc} is newer than nvJitLink {jitlink}, which cannot link its LTO-IR: "
                        f"pip install 'nvidia-nvjitlink=={nvrtc}.*'")
    driver = _driver_version()
    if driver is None:
        rows.append(("driver", "none (compiling works; launching needs a GPU)"))
    else:
        rows.append(("driver", "CUDA %d.%d" % driver))
        if nvjitlink.version() > driver:
            problems.append(f"the toolkit ({jitlink}) is newer than the driver (CUDA {'%d.%d' % driver}): "
                            f"pip install 'cuda-toolkit[nvrtc,nvjitlink,nvvm,cccl]=={'%d.%d' % driver}.*'")
        from numba import cuda

        for gpu in cuda.gpus if cuda.is_available() else ():
            name = gpu.name.decode() if isinstance(gpu.name, bytes) else gpu.name
            rows.append((f"GPU {gpu.id}", "%s, sm_%d%d" % ((name,) + gpu.compute_capability)))
    info = cache.info()
    state = "on" if info["enabled"] else "off (NUMBA_TILES_CACHE=0)"
    rows.append(("cache", f"{info['directory']}  {state}, {info['entries']} entries, {info['bytes'] / 2**20:.1f} MiB"))
    return rows, problems
