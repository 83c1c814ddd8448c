"""The command line: ``python -m numba_tiles`` (or ``numba-tiles``) cache | precompile | doctor, or --version.

Example::

    python -m numba_tiles --version
    python -m numba_tiles cache info
    python -m numba_tiles precompile examples.segmented_sum --arch sm_90 --arch sm_80
    python -m numba_tiles doctor
"""

import argparse
import datetime
import os
import sys


def _cache(args):
    from . import _library, _toolchain, cache

    if args.action == "info":
        info = cache.info()
        print(f"directory   {info['directory']}")
        print(f"enabled     {info['enabled']}  (NUMBA_TILES_CACHE=0 turns it off)")
        print(f"trust       {info['trust'] or 'not checked'}  (NUMBA_TILES_CACHE_TRUST=user or group)")
        print(f"trusted     {'yes' if info['trusted'] else 'no'}: {info['trust_detail']}")
        print(f"entries     {info['entries']}, {info['bytes'] / 2**20:.1f} MiB of {info['max_bytes'] / 2**20:.0f} MiB"
              "  (NUMBA_TILES_CACHE_MAX_BYTES)")
        print("key         digest of: " + ", ".join(info["key_components"]))
        now = {**_toolchain.versions(), **_library.CUB.versions()}
        print("now         " + ", ".join(f"{k}={v}" for k, v in now.items()))
        print("this process " + ", ".join(f"{k}={v:g}" for k, v in info["stats"].items()))
    elif args.action == "list":
        rows = cache.entries()
        print(f"{'key':<18}{'bytes':>10}  {'last used':<20}{'arch':<8}{'output':<9}{'nvrtc':<7}libraries")
        for e in rows:
            c = e["components"]
            used = datetime.datetime.fromtimestamp(e["last_used"]).strftime("%Y-%m-%d %H:%M:%S")
            versions = c.get("versions", {})
            if "modules" in c:  # a linked kernel (numba_tiles._link)
                arch, what = c["options"].get("arch", "?").strip("'"), f"a kernel linked from {len(c['modules'])} modules"
            else:
                arch = c.get("target", {}).get("arch", "?")
                what = ", ".join(name for name, v in versions.items() if isinstance(v, dict))
            print(f"{e['key'][:16]:<18}{e['bytes']:>10}  {used:<20}{arch:<8}"
                  f"{c.get('output', '?'):<9}{versions.get('nvrtc', '-'):<7}{what}")
        print(f"{len(rows)} entries")
    elif args.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.directory()}")
    elif args.action == "prune":
        print(f"removed {cache.prune(args.max_bytes)} entries; {cache.info()['bytes']} bytes left")


def _precompile(args):
    from . import _compile

    sys.path.insert(0, os.getcwd())
    _compile.precompile(args.module, arch=args.arch or ["sm_90"])


def _tool(name):
    from cuda.pathfinder import load_nvidia_dynamic_lib

    try:
        return load_nvidia_dynamic_lib(name).abs_path
    except Exception as exc:  # pathfinder raises several kinds; all mean "not usable"
        return f"not found ({type(exc).__name__})"


def _libmathdx_row():
    """libmathdx's version and file (cuBLASDx's pipelines: tiles.Matmul.tile on Hopper where the wgmma block does
    not serve), or why there is none."""
    from . import _toolchain

    try:
        return f"{_toolchain.libmathdx_version()} (cuBLASDx 0.7 pipelines: Matmul.tile on Hopper)  {_toolchain.libmathdx_path()}"
    except Exception as exc:  # (the rest of the library works without it)
        return f"not found: {exc}"


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


def _cccl_release(number):
    """CCCL_VERSION (3000001) as people write it: ``"3.0.1"``."""
    return f"{number // 1000000}.{number // 1000 % 1000}.{number % 1000}"


def _cuda_release(number):
    """CUDART_VERSION (13000, 12090) as people write it: ``"13.0"``, ``"12.9"``."""
    return f"{number // 1000}.{number % 1000 // 10}"


def report():
    """What ``doctor`` prints: its rows, ``(what, value)`` pairs, and the problems it found, each with its fix.

    Example::

        from numba_tiles.__main__ import report

        rows, problems = report()
        versions = dict(rows)
        print(versions["NVRTC"], versions["numba-cuda-mlir"])   # 13.0  /.../libnvrtc.so.13  0.6.0
    """
    from importlib.metadata import PackageNotFoundError, version

    from cuda.bindings import nvjitlink

    from . import _library, _mlir, _toolchain, cache

    def package(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    rows, problems = [], []
    for name in ("numba-cuda", "numba-cuda-mlir", "numba", "cuda-core", "cuda-bindings", "numpy"):
        rows.append((name, package(name)))
    if rows[1][1] != "not installed" and not _mlir.available():  # (its kernels then get no intrinsics)
        low, high = (".".join(map(str, v)) for v in (_mlir.MIN_VERSION, _mlir.MAX_VERSION))
        rows[1] = (rows[1][0], f"{rows[1][1]}  (not used: numba_tiles works with >={low}, <{high})")
    nvrtc = "%d.%d" % _toolchain.nvrtc_version()
    jitlink = "%d.%d" % nvjitlink.version()
    line = _toolchain.cuda_line()
    rows += [
        ("CUDA line", f"{line}  (numba-tiles[{line}]: NVRTC, nvJitLink, NVVM and the CUDA headers of one line)"),
        ("NVRTC", f"{nvrtc}  {_tool('nvrtc')}"),
        ("nvJitLink", f"{jitlink}  {_tool('nvJitLink')}"),
        ("NVVM", _tool("nvvm")),
        ("CCCL", f"{_cccl_release(_toolchain.cccl_version())}  {_toolchain.cccl_include_dir()}"),
        ("CUDA headers", f"{_cuda_release(_toolchain.cuda_headers_version())}  {_toolchain.cuda_include_dir()}"),
        (f"library {_library.CUB.name}", "in the cache key: "
         + ", ".join(f"{k}={v}" for k, v in _library.CUB.versions().items())),
        ("MathDx", f"{package('nvidia-mathdx')}, cuBLASDx {_toolchain.cublasdx_version()}  "
                   f"{_toolchain.mathdx_include_dirs()[0]}"),
        (f"library {_library.MATHDX.name}", "in the cache key: " + ", ".join(
            f"{k}={v}" for k, v in _library.MATHDX.versions().items() if k not in _library.CUB.versions())),
        ("libmathdx", _libmathdx_row()),
        ("targets", ", ".join(_toolchain.supported_archs())),
    ]
    if _toolchain.nvrtc_version() > nvjitlink.version():
        problems.append(f"NVRTC {nvrtc} is newer than nvJitLink {jitlink}, which cannot link its LTO-IR: "
                        f"reinstall with one line's pins, {_toolchain.INSTALL}")
    if nvjitlink.version()[0] != _toolchain.nvrtc_version()[0]:
        problems.append(f"NVRTC {nvrtc} and nvJitLink {jitlink} are of two CUDA lines: {_toolchain.INSTALL}")
    driver = _driver_version()
    if driver is None:
        rows.append(("driver", "none (compiling works; launching needs a GPU)"))
    else:
        rows.append(("driver", "CUDA %d.%d" % driver))
        if nvjitlink.version() > driver:
            older = "; or the CUDA 12 line, pip install 'numba-tiles[cu12]'" if driver >= (12, 9) else ""
            problems.append(f"the toolkit ({jitlink}) is newer than the driver (CUDA {'%d.%d' % driver}), which "
                            f"cannot load its code: install a driver for CUDA {jitlink} or newer (r580 for 13.0, "
                            f"r575 for 12.9){older}")
        from numba import cuda

        for gpu in cuda.gpus if cuda.is_available() else ():
            name = gpu.name.decode() if isinstance(gpu.name, bytes) else gpu.name
            rows.append((f"GPU {gpu.id}", "%s, sm_%d%d" % ((name,) + gpu.compute_capability)))
    info = cache.info()
    state = "on" if info["enabled"] else "off (NUMBA_TILES_CACHE=0)"
    rows.append(("cache", f"{info['directory']}  {state}, {info['entries']} entries, {info['bytes'] / 2**20:.1f} MiB"))
    rows.append(("cache trust", f"{info['trust'] or 'not checked'}: {info['trust_detail']}"))
    if info["enabled"] and not info["trusted"]:
        problems.append(f"the cache directory is not used: {info['trust_detail']}")
    return rows, problems


def _doctor(args):
    rows, problems = report()
    width = max(len(what) for what, _ in rows)
    for what, value in rows:
        print(f"{what:<{width}}  {value}")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


def main(argv=None):
    from ._version import __version__

    parser = argparse.ArgumentParser(prog="numba-tiles", description="numba_tiles: cache, precompilation, toolchain")
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command")
    cache = sub.add_parser("cache", help="inspect or empty the on-disk LTO-IR cache")
    cache.add_argument("action", choices=["info", "list", "clear", "prune"])
    cache.add_argument("--max-bytes", type=int, default=None, help="with prune: the size to prune to")
    pre = sub.add_parser("precompile", help="compile a module's kernels (NUMBA_TILES_PRECOMPILE) into the cache")
    pre.add_argument("module", help="dotted module name, importable from the current directory")
    pre.add_argument("--arch", action="append", help="target, e.g. sm_90 (repeatable; default sm_90)")
    sub.add_parser("doctor", help="report the toolchain, driver, GPU and cache, and flag problems")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "cache" and args.action == "prune" and args.max_bytes is None:
        parser.error("cache prune needs --max-bytes N")
    return {"cache": _cache, "precompile": _precompile, "doctor": _doctor}[args.command](args) or 0


if __name__ == "__main__":
    sys.exit(main())
