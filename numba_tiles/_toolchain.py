"""Where the CUDA pieces come from (NVRTC, CCCL headers, our lto_libs) and their versions and digests.

Everything is found in Python packages (the pinned ``nvidia-*`` wheels); no system toolkit is
needed. Versions feed the compile key, so a toolkit change never reuses stale LTO-IR.
"""

import functools
import hashlib
import re
import sys
from pathlib import Path

from ._version import __version__

_PACKAGE = Path(__file__).resolve().parent


@functools.cache
def lto_libs_dir():
    """The C++ sources: shipped inside the wheel, or beside the package in a checkout."""
    for candidate in (_PACKAGE / "lto_libs", _PACKAGE.parent / "lto_libs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"numba_tiles: lto_libs/ not found next to {_PACKAGE}; reinstall numba_tiles")


INSTALL = "pip install 'numba-tiles[cu13]' (or [cu12] for a CUDA 12 driver)"


def _nvidia_dirs():
    """Every ``nvidia/`` folder on ``sys.path``, in its order: a wheel installed with ``pip --target`` on
    ``PYTHONPATH`` comes before site-packages. (Not the ``nvidia`` package's own path: a CUDA 12 wheel
    that ships ``nvidia/__init__.py`` makes it an ordinary package of one folder.)"""
    seen = []
    for entry in sys.path:
        folder = Path(entry or ".").resolve() / "nvidia"
        if folder.is_dir() and folder not in seen:
            seen.append(folder)
    return seen


def _wheel_header_dir(layouts, marker, pathfinder_name, accept=lambda found: True):
    """The first include folder of an nvidia-* wheel, ``layouts`` (globs under ``nvidia/``: the CUDA 13
    wheels' ``cu13/...`` first, then the CUDA 12 ones'), that has the ``marker`` file and that ``accept``
    takes; cuda.pathfinder is the fallback."""
    for root in _nvidia_dirs():
        for layout in layouts:
            for found in sorted(root.glob(layout)):
                if (found / marker).is_file() and accept(found):
                    return found
    from cuda.pathfinder import find_nvidia_header_directory

    found = find_nvidia_header_directory(pathfinder_name)
    if found is None or not accept(Path(found)):
        raise FileNotFoundError(f"numba_tiles: {marker} not found; {INSTALL}")
    return Path(found)


@functools.cache
def cccl_include_dir():
    """CCCL (CUB, libcu++) headers: the ``nvidia-cuda-cccl`` 13.0 wheel's (CCCL 3.0) on either CUDA line, else
    the CUDA 12 line's own (``nvidia-cuda-cccl-cu12``: CCCL 2.8)."""
    return _wheel_header_dir(("cu1[0-9]/include/cccl", "cuda_cccl/include"), "cub/cub.cuh", "cccl")


def _headers_version(folder):
    return int(re.search(r"#define CUDART_VERSION\s+(\d+)", (folder / "cuda_runtime_api.h").read_text()).group(1))


@functools.cache
def cuda_include_dir():
    """The CUDA headers NVRTC lacks (cuda_fp16.h, cuda_bf16.h), from the CUDA runtime wheel of NVRTC's line.

    CCCL needs them: without them CUB 3.0 takes its half-precision SIMD path for any 32-bit
    type in ThreadReduce (over 4 or more items), which returns wrong sums.
    """
    major = nvrtc_version()[0]
    return _wheel_header_dir(
        ("cu1[0-9]/include", "cuda_runtime/include"),
        "cuda_fp16.h",
        "cudart",
        accept=lambda found: _headers_version(found) // 1000 == major,
    )


def cuda_line():
    """The CUDA line in use, ``"cu13"`` or ``"cu12"``: NVRTC's major version."""
    return f"cu{nvrtc_version()[0]}"


@functools.cache
def mathdx_include_dirs():
    """MathDx's headers (cuBLASDx, commondx) and the CUTLASS/CuTe they build on, from the ``nvidia-mathdx`` wheel."""
    for root in _nvidia_dirs():
        found = root / "mathdx"
        if (found / "include" / "cublasdx.hpp").is_file():
            return found / "include", found / "external" / "cutlass" / "include"
    raise FileNotFoundError(f"numba_tiles: cublasdx.hpp not found; {INSTALL}")


@functools.cache
def mathdx_version(library):
    """The version of one of the MathDx wheel's libraries (``"cublasdx"``, ``"cufftdx"``, ``"curanddx"``), e.g.
    ``"0.4.0"``, from its version header."""
    text = (mathdx_include_dirs()[0] / library / f"{library}_version.hpp").read_text()
    return ".".join(
        re.search(rf"#define {library.upper()}_VERSION_{part} (\d+)", text)[1] for part in ("MAJOR", "MINOR", "PATCH")
    )


@functools.cache
def curand_include_dir():
    """cuRAND's device headers (curand_kernel.h), which cuRANDDx includes, from the ``nvidia-curand`` wheel of
    NVRTC's line (CUDA 13: beside the runtime's headers; CUDA 12: ``nvidia/curand/include``)."""
    return _wheel_header_dir(("cu1[0-9]/include", "curand/include"), "curand_kernel.h", "curand")


@functools.cache
def libmathdx_path():
    """libmathdx (cuBLASDx's pipelines and cuSOLVERDx's solvers, `numba_tiles._libmathdx`), from the
    ``nvidia-libmathdx-cu13`` wheel."""
    for root in _nvidia_dirs():
        for found in sorted(root.glob("cu1[0-9]/lib/libmathdx.so.*")):
            return found
    if cuda_line() == "cu12":
        raise FileNotFoundError(
            "libmathdx 0.4 (cuBLASDx 0.7's pipelines, which tiles.Matmul.tile uses on Hopper, and cuSOLVERDx's "
            "solvers, tiles.Solver's) is published for CUDA 13 only, as nvidia-libmathdx-cu13 (the newest "
            "nvidia-libmathdx-cu12 on PyPI is 0.3.1)"
        )
    raise FileNotFoundError(
        "libmathdx (cuBLASDx 0.7's pipelines, which tiles.Matmul.tile uses on Hopper, and tiles.Solver's code) is not "
        "installed: it is the nvidia-libmathdx-cu13 wheel of numba-tiles[cu13]"
    )


@functools.cache
def libmathdx_version():
    """libmathdx's wheel version, e.g. ``"0.4.1.15"`` (its cuBLASDx is 0.7.1)."""
    from importlib.metadata import version

    return version(f"nvidia-libmathdx-{libmathdx_path().parent.parent.name}")


def nvrtc_libraries():
    """The files of the NVRTC in use (its builtins first), for a process that loads NVRTC by name (libmathdx)."""
    from cuda.pathfinder import load_nvidia_dynamic_lib

    nvrtc = Path(load_nvidia_dynamic_lib("nvrtc").abs_path)
    return [*sorted(nvrtc.parent.glob("libnvrtc-builtins.so.*.*"))[:1], nvrtc]


@functools.cache
def cccl_version():
    text = (cccl_include_dir() / "cuda" / "std" / "__cccl" / "version.h").read_text()
    return int(re.search(r"#define CCCL_VERSION (\d+)", text).group(1))


@functools.cache
def nvrtc_version():
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"numba_tiles: NVRTC did not load ({err}); {INSTALL}")
    return (major, minor)


@functools.cache
def cuda_headers_version():
    return _headers_version(cuda_include_dir())


@functools.cache
def directory_digest(directory):
    """A digest of the content of every file under ``directory``.

    For a directory that pip-installed packages fill (the CCCL and CUDA header wheels), the
    digest of those packages' RECORDs, which list every file's SHA-256: as exact, and read in
    milliseconds rather than hashing thousands of headers in every process.
    """
    directory = Path(directory).resolve()
    records = _records_under(directory)
    h = hashlib.sha256()
    for record in records:
        h.update(b"RECORD\0" + record)
    if not records:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                h.update(path.relative_to(directory).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def _records_under(directory):
    """The RECORD files (bytes) of the installed distributions that have files under ``directory``."""
    for root in directory.parents:  # the nearest folder with distributions in it (site-packages)
        infos = sorted(root.glob("*.dist-info"))
        if infos:
            relative = directory.relative_to(root).as_posix() + "/"
            found = []
            for info in infos:
                try:
                    text = (info / "RECORD").read_bytes()
                except OSError:
                    continue
                if text.startswith(relative.encode()) or b"\n" + relative.encode() in text:
                    found.append(text)
            return found
    return []


@functools.cache
def supported_archs():
    """The real architectures this NVRTC compiles for, as ``"sm_XY"`` strings (CUDA 13.0: sm_75 on; 12.9: sm_50 on)."""
    from cuda.bindings import nvrtc

    err, archs = nvrtc.nvrtcGetSupportedArchs()
    return tuple(f"sm_{a}" for a in archs)


def current_device_cc():
    """(major, minor) compute capability of device 0, or None without a driver or a GPU."""
    try:
        from cuda.bindings import driver

        attribute = driver.CUdevice_attribute
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        cc = [
            driver.cuDeviceGetAttribute(getattr(attribute, f"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_{part}"), 0)
            for part in ("MAJOR", "MINOR")
        ]
        return None if any(err != driver.CUresult.CUDA_SUCCESS for err, _ in cc) else tuple(v for _, v in cc)
    except Exception:  # no libcuda at all
        return None


def versions():
    """The toolchain's part of every compile key (each library adds its own, see `_library`)."""
    return {"numba_tiles": __version__, "nvrtc": "%d.%d" % nvrtc_version()}
