"""The command line: ``numba-tiles`` (or ``python -m numba_tiles``) cache | precompile | doctor, or --version.

A mistake of the user's (a bad arch, a module that does not import, a signature that does not parse, an
intrinsic misused in a kernel) prints one line, ``numba-tiles: <what is wrong, and the fix>``, and exits with
status 2; ``--traceback`` prints the stack before it. Output piped into a command that stops reading early
(``numba-tiles cache list | head -1``) ends quietly.

In a shell::

    numba-tiles --version
    numba-tiles cache info
    numba-tiles precompile examples.segmented_sum --arch sm_90 --arch sm_80
    numba-tiles precompile my_kernels --signature 'void(float32[::1], float32[::1])'
    numba-tiles doctor
"""

import argparse
import datetime
import importlib
import inspect
import os
import re
import sys
import traceback

USAGE, BUG = 2, 1  # exit statuses: a mistake of the user's (argparse's status too), an unexpected exception


class _UsageError(Exception):
    """A mistake of the command line's user; its message says what is wrong and the fix."""


def _cache(args):
    from . import _library, _toolchain, cache

    if args.action == "info":
        info = cache.info()
        print(f"directory   {info['directory']}")
        print(f"enabled     {info['enabled']}  (NUMBA_TILES_CACHE=0 turns it off)")
        print(f"trust       {info['trust'] or 'not checked'}  (NUMBA_TILES_CACHE_TRUST=user or group)")
        print(f"trusted     {'yes' if info['trusted'] else 'no'}: {info['trust_detail']}")
        print(
            f"entries     {info['entries']}, {info['bytes'] / 2**20:.1f} MiB of {info['max_bytes'] / 2**20:.0f} MiB"
            "  (NUMBA_TILES_CACHE_MAX_BYTES)"
        )
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
                arch = c["options"].get("arch", "?").strip("'")
                what = f"a kernel linked from {len(c['modules'])} modules"
            else:
                arch = c.get("target", {}).get("arch", "?")
                what = ", ".join(name for name, v in versions.items() if isinstance(v, dict))
            print(
                f"{e['key'][:16]:<18}{e['bytes']:>10}  {used:<20}{arch:<8}"
                f"{c.get('output', '?'):<9}{versions.get('nvrtc', '-'):<7}{what}"
            )
        print(f"{len(rows)} entries")
    elif args.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.directory()}")
    elif args.action == "prune":
        print(f"removed {cache.prune(args.max_bytes)} entries; {cache.info()['bytes']} bytes left")


def _check_arch(arch):
    """Refuse an ``--arch`` NVRTC cannot compile for, before any work."""
    from . import _compile, _toolchain

    try:
        _compile.parse_arch(arch)
    except ValueError as exc:
        nvrtc = ".".join(map(str, _toolchain.nvrtc_version()))
        raise _UsageError(
            f"--arch {arch} is not a target NVRTC {nvrtc} compiles for: use one of "
            f"{', '.join(_toolchain.supported_archs())}, or from sm_90 on the arch-specific form (sm_90a)"
        ) from exc


def _parse_signature(text):
    """``--signature``'s ``[KERNEL=]SIGNATURE`` as (kernel name or None, signature text, argument types)."""
    from numba.cuda import types

    from ._backends import numba_cuda

    # (a Numba signature never holds '=', so a leading "name=" can only be a kernel's name)
    named = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=(.*)", text, re.DOTALL)
    name, signature = (named[1], named[2].strip()) if named else (None, text.strip())
    try:
        args, returns = numba_cuda.normalize_signature(signature)
    except Exception as exc:  # (Numba evaluates the text: NameError, SyntaxError, TypeError, ...)
        raise _UsageError(
            f"--signature {text!r} is not a Numba signature ({type(exc).__name__}: {_one_line(str(exc))}): write "
            "the argument types as @cuda.jit takes them, e.g. 'void(float32[::1], float32[::1])'"
        ) from exc
    if returns not in (None, types.none):
        raise _UsageError(f"--signature {text!r} returns {returns}, but a kernel returns nothing: write void(...)")
    return name, signature, args


def _import(name):
    """Import the module ``name`` as Python would, with the current directory first on ``sys.path``."""
    here = os.getcwd()
    if name.endswith(".py") or os.sep in name or not all(part.isidentifier() for part in name.split(".")):
        dotted = name.removesuffix(".py").replace(os.sep, ".").strip(".")
        hint = f" (for the file {name}: {dotted})" if all(p.isidentifier() for p in dotted.split(".")) else ""
        raise _UsageError(f"{name!r} is not a module name: give the module's dotted name{hint}, as import takes it")
    sys.path.insert(0, here)  # (a console script's own sys.path[0] is its bin directory)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            of = "" if exc.name == name else f" (for {name})"
            raise _UsageError(
                f"no module named {exc.name!r}{of} in the current directory ({here}) or on the rest of sys.path "
                "(PYTHONPATH, the installed packages): run from the directory that holds it, or add that "
                "directory to PYTHONPATH"
            ) from exc
        raise _UsageError(f"{name} does not import: {exc}, which it imports: install it") from exc
    except Exception as exc:  # the module's own code failed: say where
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = "" if isinstance(exc, SyntaxError) else f" at {frame.filename}, line {frame.lineno}"
        raise _UsageError(f"{name} does not import: {type(exc).__name__}{where}: {_one_line(str(exc))}") from exc


def _signatures(module, given, kernels):
    """What to compile of ``kernels`` (``{name: dispatcher}``, device functions too), ``{name: [signature,
    ...]}``: the ``--signature`` arguments ``given``, else the module's ``NUMBA_TILES_PRECOMPILE``."""
    entry = [n for n, k in kernels.items() if not getattr(k, "targetoptions", {}).get("device")]
    if not given:
        declared = getattr(module, "NUMBA_TILES_PRECOMPILE", None) or {}
        if any(k in declared or n in declared for n, k in kernels.items()):
            return declared
        first = kernels[(entry or list(kernels))[0]]
        params = ", ".join(inspect.signature(first.py_func).parameters)
        them = "them" if len(entry) > 1 else "it"
        raise _UsageError(
            f"no signatures to compile {', '.join(entry) or 'the device functions'} of {module.__name__} for: the "
            f"module has no NUMBA_TILES_PRECOMPILE = {{kernel: [signature, ...]}} for {them}; give the argument types "
            f"with --signature {first.py_func.__name__}='void(...)' (a Numba type for each of {params}; repeatable)"
        )
    wanted = {}
    for name, signature, args in given:
        if name is None:
            if not entry:
                raise _UsageError(
                    f"{module.__name__} has device functions only ({', '.join(kernels)}): precompile "
                    "the module of a kernel that calls them"
                )
            if len(entry) > 1:
                raise _UsageError(
                    f"--signature '{signature}' names no kernel, and {module.__name__} has {len(entry)} "
                    f"({', '.join(entry)}): say which, as --signature {entry[0]}='{signature}'"
                )
            name = entry[0]
        if name not in entry:
            what = "a device function (a kernel that calls it compiles it)" if name in kernels else "not one of them"
            raise _UsageError(
                f"--signature {name}=...: {module.__name__}'s kernels are {', '.join(entry) or 'none'}; "
                f"{name} is {what}"
            )
        params = inspect.signature(kernels[name].py_func).parameters.values()
        if all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) and len(params) != len(args):
            raise _UsageError(
                f"--signature '{signature}' gives {len(args)} argument type(s), but {name} takes "
                f"{len(params)} ({', '.join(p.name for p in params)})"
            )
        wanted.setdefault(name, []).append(signature)
    return wanted


def _precompile(args):
    from . import _compile

    archs = args.arch or ["sm_90"]
    for arch in archs:
        _check_arch(arch)
    given = [_parse_signature(text) for text in args.signature or ()]  # (before the import: mistakes show fast)
    module = _import(args.module)
    kernels = {k.py_func.__name__: k for k in vars(module).values() if hasattr(k, "py_func")}
    if not kernels:
        raise _UsageError(
            f"{args.module} ({module.__file__}) has no @cuda.jit kernel among its globals: nothing to precompile"
        )
    _compile.precompile(module, arch=archs, signatures=_signatures(module, given, kernels))


def _tool(name):
    from cuda.pathfinder import load_nvidia_dynamic_lib

    try:
        return load_nvidia_dynamic_lib(name).abs_path
    except Exception as exc:  # pathfinder raises several kinds; all mean "not usable"
        return f"not found ({type(exc).__name__})"


def _libmathdx_row():
    """libmathdx's version and file (cuBLASDx's pipelines: tiles.Matmul.tile on Hopper where the wgmma block does
    not serve; cuSOLVERDx's solvers: tiles.Solver), or why there is none."""
    from . import _toolchain

    try:
        return (
            f"{_toolchain.libmathdx_version()} "
            "(cuBLASDx 0.7 pipelines: Matmul.tile on Hopper; cuSOLVERDx 0.5: Solver)  "
            f"{_toolchain.libmathdx_path()}"
        )
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

    from . import _library, _toolchain, cache
    from ._backends import mlir

    def package(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    rows, problems = [], []
    for name in ("numba-cuda", "numba-cuda-mlir", "numba", "cuda-core", "cuda-bindings", "numpy"):
        rows.append((name, package(name)))
    if rows[1][1] != "not installed" and not mlir.available():  # (its kernels then get no intrinsics)
        low, high = (".".join(map(str, v)) for v in (mlir.MIN_VERSION, mlir.MAX_VERSION))
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
        (
            "cuRAND headers",
            f"{package('nvidia-curand' + ('' if line == 'cu13' else '-cu12'))}  {_toolchain.curand_include_dir()}",
        ),
        (
            f"library {_library.CUB.name}",
            "in the cache key: " + ", ".join(f"{k}={v}" for k, v in _library.CUB.versions().items()),
        ),
        (
            "MathDx",
            f"{package('nvidia-mathdx')}, cuBLASDx {_toolchain.mathdx_version('cublasdx')}, cuFFTDx "
            f"{_toolchain.mathdx_version('cufftdx')}, cuRANDDx {_toolchain.mathdx_version('curanddx')}  "
            f"{_toolchain.mathdx_include_dirs()[0]}",
        ),
        (
            f"library {_library.MATHDX.name}",
            "in the cache key: "
            + ", ".join(f"{k}={v}" for k, v in _library.MATHDX.versions().items() if k not in _library.CUB.versions()),
        ),
        ("libmathdx", _libmathdx_row()),
        ("targets", ", ".join(_toolchain.supported_archs())),
    ]
    if _toolchain.nvrtc_version() > nvjitlink.version():
        problems.append(
            f"NVRTC {nvrtc} is newer than nvJitLink {jitlink}, which cannot link its LTO-IR: "
            f"reinstall with one line's pins, {_toolchain.INSTALL}"
        )
    if nvjitlink.version()[0] != _toolchain.nvrtc_version()[0]:
        problems.append(f"NVRTC {nvrtc} and nvJitLink {jitlink} are of two CUDA lines: {_toolchain.INSTALL}")
    driver = _driver_version()
    if driver is None:
        rows.append(("driver", "none (compiling works; launching needs a GPU)"))
    else:
        rows.append(("driver", "CUDA %d.%d" % driver))
        if nvjitlink.version() > driver:
            older = "; or the CUDA 12 line, pip install 'numba-tiles[cu12]'" if driver >= (12, 9) else ""
            problems.append(
                f"the toolkit ({jitlink}) is newer than the driver (CUDA {'%d.%d' % driver}), which "
                f"cannot load its code: install a driver for CUDA {jitlink} or newer (r580 for 13.0, "
                f"r575 for 12.9){older}"
            )
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


def _one_line(text):
    """``text`` on one line (a message's later lines say where, e.g. a `TilesError`'s file, line and source)."""
    return " ".join(text.split())


def _numba_summary(text):
    """Numba's error message on one line: what failed and where (its first lines are the pipeline's steps)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith(("Failed in ", "During:", 'File "', "<source elided>"))]
    what = " ".join(said[:2]) if said and said[0].endswith(":") else (said or ["(no message)"])[0]
    where = next((line.rstrip(":") for line in lines if line.startswith('File "')), None)
    return what + (f" ({where})" if where else "")


def _compiling(exc):
    """``"kernel for signature (arch)"``: what `precompile` compiled when ``exc`` was raised, from its frame's
    variables (a Numba message may not say which kernel it is about), or ``"the kernel"``."""
    from . import _compile

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code is not _compile.precompile.__code__:
        tb = tb.tb_next
    seen = tb.tb_frame.f_locals if tb is not None else {}
    if not {"kernel", "sig", "a"} <= seen.keys():
        return "the kernel"
    kernel = getattr(seen["kernel"], "py_func", seen["kernel"])
    return f"{getattr(kernel, '__name__', kernel)} for {seen['sig']} ({seen['a']})"


def _explain(exc):
    """``(one-line message, exit status)`` for an exception a command raised: which are the user's to fix."""
    from ._errors import TilesError

    numba_errors = []
    for module in ("numba.core.errors", "numba.cuda.core.errors"):
        try:
            numba_errors.append(importlib.import_module(module).NumbaError)
        except (ImportError, AttributeError):
            pass
    if isinstance(exc, _UsageError):
        return str(exc), USAGE
    if isinstance(exc, TilesError):  # an intrinsic misused: the message names it, the fix, then the kernel's line
        return _one_line(str(exc)), USAGE
    if isinstance(exc, tuple(numba_errors)):  # the kernel does not compile for the signature
        return f"Numba cannot compile {_compiling(exc)}: {_numba_summary(str(exc))}", USAGE
    if isinstance(exc, ValueError) and str(exc).startswith(("numba_tiles.", "tiles.")):  # our API's checks
        return _one_line(str(exc)), USAGE
    if isinstance(exc, OSError):  # the machine's: a cache directory not writable, a full disk, ...
        return _one_line(str(exc)), USAGE
    bug = (
        f"unexpected {type(exc).__name__}: {_one_line(str(exc))}. This is a bug of numba_tiles or of a library "
        "it calls: run again with --traceback and report the stack"
    )
    return bug, BUG


def _stdout_closed():
    """Whether stdout is a pipe its reader has closed (poll says POLLERR), not some other pipe that broke; where
    poll is missing (Windows), a broken pipe is taken for stdout's."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return True


def _parser():
    from ._version import __version__

    stack = argparse.ArgumentParser(add_help=False)
    # (also after the command; SUPPRESS keeps a subcommand's default from hiding the top-level flag)
    stack.add_argument(
        "--traceback",
        action="store_true",
        default=argparse.SUPPRESS,
        help="on an error, print the stack before the one-line message",
    )
    parser = argparse.ArgumentParser(
        prog="numba-tiles",
        description="numba_tiles: cache, precompilation, toolchain",
        epilog="exit status: 0 done; 1 doctor found a problem, or an unexpected error (a bug); 2 a mistake in "
        "the command or its input, said in one line on stderr",
    )
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument(
        "--traceback", action="store_true", help="on an error, print the stack before the one-line message"
    )
    sub = parser.add_subparsers(dest="command")
    cache = sub.add_parser("cache", parents=[stack], help="inspect or empty the on-disk LTO-IR cache")
    cache.add_argument("action", choices=["info", "list", "clear", "prune"])
    cache.add_argument("--max-bytes", type=int, default=None, help="with prune: the size to prune to")
    pre = sub.add_parser(
        "precompile",
        parents=[stack],
        help="compile a module's kernels into the cache, with no GPU",
        description="Compile a module's @cuda.jit kernels into the cache, for each --arch, with no GPU: for the "
        "signatures given with --signature, else those of the module's NUMBA_TILES_PRECOMPILE = "
        "{kernel: [signature, ...]}.",
    )
    pre.add_argument(
        "module",
        metavar="MODULE",
        help="a module's dotted name (my_kernels, pkg.kernels; not a file), imported as Python imports "
        "it with the current directory first on sys.path: the current directory, then "
        "PYTHONPATH, then the installed packages",
    )
    pre.add_argument("--arch", action="append", help="target, e.g. sm_90 (repeatable; default sm_90)")
    pre.add_argument(
        "--signature",
        action="append",
        metavar="[KERNEL=]SIGNATURE",
        help="compile KERNEL for these argument types, e.g. 'void(float32[::1], float32[::1])' "
        "(repeatable; KERNEL= may be left out when the module has one kernel); given, these "
        "replace the module's NUMBA_TILES_PRECOMPILE",
    )
    sub.add_parser("doctor", parents=[stack], help="report the toolchain, driver, GPU and cache, and flag problems")
    return parser


def main(argv=None):
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``) and return its exit status: 0 done, 1 a problem
    doctor found or an unexpected error, 2 a mistake of the user's, said in one line on stderr.

    Example::

        from numba_tiles.__main__ import main

        assert main(["precompile", "examples.segmented_sum", "--arch", "sm_91"]) == 2   # not a target
    """
    parser = _parser()
    stack = False
    try:
        args = parser.parse_args(argv)
        stack = args.traceback
        if args.command is None:
            parser.print_help()
            return 0
        if args.command == "cache" and args.action == "prune" and args.max_bytes is None:
            parser.error("cache prune needs --max-bytes N")
        status = {"cache": _cache, "precompile": _precompile, "doctor": _doctor}[args.command](args) or 0
        sys.stdout.flush()  # (a closed pipe shows here, where it is handled, not at exit)
        return status
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # (every error ends as one line; _explain says whose it is to fix)
        if isinstance(exc, BrokenPipeError) and _stdout_closed():
            # Whoever read the output has all it wanted (`| head -1`). Python would flush stdout again at exit
            # and fail the same way: point it at /dev/null first.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        message, status = _explain(exc)
        if stack:
            traceback.print_exc()
        print(f"numba-tiles: {message}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
