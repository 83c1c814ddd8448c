"""Library descriptions: where a C++ library's headers are, how NVRTC compiles them, what versions them.

A `Library` is one body of C++ that intrinsics instantiate: numba_tiles' own CUB families
(`CUB`, below), later MathDx or a downstream package's header. Its description says
- where its headers and those they include are (``include_dirs``),
- the macros and NVRTC options it needs (``macros``, ``nvrtc_flags``),
- what goes into the cache key for it (``versions``: the content of its headers and of
  the libraries beneath them, not only a version number),
- whom a compile failure of its code blames (``blame``).
An NVRTC program compiles the instances of one library and includes only the headers those
instances use (`Header`); programs that include the same headers share a precompiled header.

A library may name a ``base``: the header every one of its programs includes first, holding
the base its headers share (for CUB, CCCL's configuration and utilities: most of a program's
parse). A process precompiles it once per option set, in the background, and every later
program of the library takes it from there, whatever its other headers.

A `Header` is one file of a library; ``template(name, **arguments)`` spells an instantiation of
one of its templates with the arguments named as the C++ declares them, checked against the
declaration, so that an argument in the wrong place is an error when the rule runs, not a
wrong instantiation found at link.
"""

import dataclasses
import functools
import re
from collections.abc import Callable

from . import _toolchain

# What every program is compiled with, whatever its library and target.
_BASE_OPTIONS = {"std": "c++20", "link_time_optimization": True, "relocatable_device_code": True}


@dataclasses.dataclass(frozen=True, eq=False)
class Library:
    """A C++ library intrinsics are instantiated from (`numba_tiles.extending.library` makes one over CUB).

    Example::

        import tempfile
        from pathlib import Path
        from numba_tiles.extending import CUB, Library

        HERE = Path(tempfile.mkdtemp())   # (a package's folder)
        (HERE / "include").mkdir()
        (HERE / "include" / "argmax.cuh").write_text("#pragma once")

        MINE = Library("mypkg", include_dirs=lambda: (HERE / "include", *CUB.include_dirs()),
                       versions=lambda: {**CUB.versions(), "mypkg": "1.0"},
                       blame="a bug in mypkg's C++; please report it to mypkg", macros=CUB.macros)
        ARGMAX = MINE.header("argmax.cuh")
        assert ARGMAX.path() == HERE / "include" / "argmax.cuh"
    """

    name: str
    include_dirs: Callable[[], tuple]  # () → directories, first searched first (found lazily: finding wheels costs)
    versions: Callable[[], dict]  # () → {name: version or digest}: this library's part of the cache key
    blame: str
    macros: tuple = ()  # the preprocessor macros it is compiled with: "NAME" or ("NAME", "value")
    nvrtc_flags: tuple = ()  # other NVRTC options, as (cuda.core ProgramOptions field, value) pairs
    base: str = None  # the header every program includes first: what its headers share, precompiled once
    per_entry: bool = False  # one program per entry point, built side by side in worker processes
    arch_specific: bool = False  # compiled for the arch-specific target (sm_90 → sm_90a): its code uses wgmma

    def __post_init__(self):
        DECLARED.append(self)

    def program_options(self, target, output="ltoir"):
        """NVRTC's options (cuda.core ``ProgramOptions`` fields) for a program of this library built for ``target``
        (all part of its cache key); ``output``: ``"ltoir"`` (what nvJitLink links), else code that is not.

        Example::

            from numba_tiles import extending as ext
            from numba_tiles._target import Target

            options = ext.CUB.program_options(Target("sm_90"))
            assert options["arch"] == "sm_90" and options["link_time_optimization"]
        """
        options = {**_BASE_OPTIONS, **dict(self.nvrtc_flags), **target.nvrtc_options()}
        if self.arch_specific:
            options["arch"] += "a"
        macros = [*self.macros, *options.pop("define_macro", ())]
        if macros:
            options["define_macro"] = macros
        if output != "ltoir":
            del options["link_time_optimization"]
        return options

    def header(self, filename):
        """The `Header` ``filename`` of this library (found in its include directories when it is used).

        Example::

            from numba_tiles import extending as ext

            REDUCE = ext.CUB.header("block_reduce.cuh")
            assert REDUCE.name == "block_reduce.cuh" and REDUCE.library is ext.CUB
        """
        return Header(self, filename)

    def include_path(self):
        """The include directories, first searched first, as strings (NVRTC's ``-I`` options).

        Example::

            from numba_tiles import extending as ext

            print(ext.CUB.include_path())   # ['.../numba_tiles/lto_libs', '.../cccl/include', '.../cuda/include']
        """
        return [str(d) for d in self.include_dirs()]


DECLARED = []  # every Library made in this process (a cached kernel's stamp has all their versions)


@dataclasses.dataclass(frozen=True)
class Header:
    """One header of a `Library` (``block_reduce.cuh``), from ``library.header(filename)``.

    Example::

        from numba_tiles import extending as ext

        REDUCE = ext.CUB.header("block_reduce.cuh")
        storage = REDUCE.template("numba_tiles::block_reduce_storage", T="float", BX=128, BY=1, BZ=1,
                                  Algo="cub::BLOCK_REDUCE_RAKING", Broadcast=False)
    """

    library: Library
    name: str

    def path(self):
        """Where the header is: the first of its library's include directories that has it.

        Example::

            from numba_tiles import extending as ext

            print(ext.CUB.header("block_reduce.cuh").path())   # .../numba_tiles/lto_libs/block_reduce.cuh
        """
        return _find(self)

    def template(self, qualified, **arguments):
        """``qualified<arguments...>`` in the order the header declares them: every argument named (an
        argument named out of the declaration's order is an ``AssertionError``).

        Trailing template parameters that C++ deduces from the call (``typename Temp``) are left out.

        Example::

            from numba_tiles import extending as ext

            REDUCE = ext.CUB.header("block_reduce.cuh")
            storage = REDUCE.template("numba_tiles::block_reduce_storage", T="float", BX=128, BY=1, BZ=1,
                                      Algo="cub::BLOCK_REDUCE_RAKING", Broadcast=False)
            assert storage == "numba_tiles::block_reduce_storage<float, 128, 1, 1, cub::BLOCK_REDUCE_RAKING, false>"
        """
        declared = self._declared(qualified)[0]
        given = list(arguments)
        if given != declared[: len(given)]:
            raise AssertionError(
                f"{self.library.name}: {qualified} in {self.name} takes <{', '.join(declared)}>; "
                f"the rule gives <{', '.join(given)}>"
            )
        return f"{qualified}<{', '.join(str(_cxx(v)) for v in arguments.values())}>"

    def line(self, qualified):
        """The line of this header that declares the template ``qualified`` (an entry point's ``#line``).

        Example::

            from numba_tiles import extending as ext

            print(ext.CUB.header("block_reduce.cuh").line("numba_tiles::block_reduce_storage"))   # 15
        """
        return self._declared(qualified)[1]

    def _declared(self, qualified):
        name = qualified.split("<", 1)[0].rsplit("::", 1)[-1]
        declared = _declarations(self.path()).get(name)
        if declared is None:
            raise AssertionError(f"{self.library.name}: {self.name} declares no template {name}")
        return declared


@functools.cache
def _find(header):
    """Where ``header`` is: the first of its library's include directories that has it."""
    for directory in header.library.include_dirs():
        if (directory / header.name).is_file():
            return directory / header.name
    raise FileNotFoundError(f"{header.library.name}: header {header.name} not found in {header.library.include_path()}")


def _cxx(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


# A template's parameter list, then what it declares: an alias, a struct (union, class), a variable, or a
# function (whose return type may hold <...> and whose name comes just before its parameter list).
_TEMPLATE = re.compile(
    r"template\s*<(?P<params>[^<>]*)>\s*"
    r"(?:using\s+(?P<alias>\w+)\s*=|(?:struct|union|class)\s+(?P<struct>\w+)\s*[{:]"
    r"|(?:inline\s+)?constexpr\s+\w+\s+(?P<variable>\w+)\s*="
    r"|[^;{}()]*?\b(?P<function>\w+)\s*\((?!&))"
)


@functools.cache
def _declarations(path):
    """{template name: (its parameters' names, the line of its first declaration)} of a header; every
    overload of a name declares the same parameters."""
    found, text = {}, path.read_text()
    for match in _TEMPLATE.finditer(text):
        name = match["alias"] or match["struct"] or match["variable"] or match["function"]
        params = [p.split()[-1] for p in match["params"].split(",") if p.strip()]
        line = text.count("\n", 0, match.start()) + 1
        if found.setdefault(name, (params, line))[0] != params:
            raise AssertionError(f"{path.name}: the overloads of {name} declare different template parameters")
    return found


def _cub_versions():
    cccl, cuda = _toolchain.cccl_include_dir(), _toolchain.cuda_include_dir()
    return {
        "cccl": f"{_toolchain.cccl_version()}:{_toolchain.directory_digest(cccl)}",
        "cuda_headers": f"{_toolchain.cuda_headers_version()}:{_toolchain.directory_digest(cuda)}",
        "lto_libs": _toolchain.directory_digest(_toolchain.lto_libs_dir()),
    }


# A block's static shared memory, the most any storage may take: said here, handed to C++.
STATIC_SHARED_BYTES = 48 * 1024
"""The most static shared memory a block may declare (CUDA's 48 KiB), which an intrinsic's own storage may take;
C++ sees it as ``NUMBA_TILES_STATIC_SHARED_BYTES``.

Example::

    from numba_tiles import extending as ext

    assert ext.STATIC_SHARED_BYTES == 48 * 1024
"""

# What every program over CCCL (all of numba_tiles': CUB's, and MathDx's, whose headers include CCCL's) is compiled
# with, for NVRTC's time:
# NDEBUG: CCCL's device assertions (__assertfail calls) are for debugging CCCL, not release code.
# _CCCL_META_UNROLL_LIMIT=10 is what CCCL picks under nvcc; under NVRTC it keeps 16, and its
# preprocessor unrolling then takes most of the front end (same LTO-IR either way).
# CCCL_DISABLE_NVFP8_SUPPORT: no intrinsic takes fp8; parsing its headers is wasted time.
# _CUDA_PTX_*_H_: CUB's block and warp headers (and CuTe's, through CCCL) include all of <cuda/ptx>, whose wrappers
# of the instructions below (plain ld/st, Blackwell's tcgen05, multimem, tensor maps) no intrinsic calls; defining a
# header's include guard skips it, which cuts a sixth of NVRTC's time (0.77 s to 0.63 s for a block_sum on the 2-core
# machine, the same LTO-IR). A use of one would fail to compile, not change code; tests/cpu/test_library.py checks
# that each guard still names a CCCL header.
# NUMBA_TILES_STATIC_SHARED_BYTES: the most static shared memory a block may declare (above).
# On the 2-core machine these took the wgmma block's program (Matmul.tile, sm_90a) from 2.8 to 1.3 s of NVRTC, and a
# cuBLASDx load of the register form from 10.9 to 8.5 s; the SASS of MathDx's and CuTe's kernels is the same.
UNUSED_PTX_HEADERS = (
    "ld",
    "st",
    "multimem_ld_reduce",
    "multimem_red",
    "multimem_st",
    "cp_reduce_async_bulk_tensor",
    "tensormap_replace",
    "tcgen05_alloc",
    "tcgen05_commit",
    "tcgen05_cp",
    "tcgen05_fence",
    "tcgen05_ld",
    "tcgen05_mma",
    "tcgen05_mma_ws",
    "tcgen05_shift",
    "tcgen05_st",
    "tcgen05_wait",
)
PROGRAM_MACROS = (
    "NDEBUG",
    ("_CCCL_META_UNROLL_LIMIT", "10"),
    "CCCL_DISABLE_NVFP8_SUPPORT",
    ("NUMBA_TILES_STATIC_SHARED_BYTES", str(STATIC_SHARED_BYTES)),
    *(f"_CUDA_PTX_{name.upper()}_H_" for name in UNUSED_PTX_HEADERS),
)

# numba_tiles' CUB families (lto_libs/*.cuh) over CCCL, which needs the CUDA headers.
CUB = Library(
    name="numba_tiles.cub",
    include_dirs=lambda: (_toolchain.lto_libs_dir(), _toolchain.cccl_include_dir(), _toolchain.cuda_include_dir()),
    versions=_cub_versions,
    blame="This is a numba_tiles bug; please report it with this message",
    macros=PROGRAM_MACROS,
    base="common.cuh",
)
"""numba_tiles' `Library` of CUB families (``lto_libs/*.cuh``, with ``common.cuh``) over CCCL and the CUDA headers:
what `library` builds on by default.

Example::

    from numba_tiles import extending as ext

    assert ext.CUB.header("common.cuh").path().is_file()
"""

# The entry points of the cuBLASDx pipeline that libmathdx generates (libmathdx.cuh): over common.cuh alone, the
# generated functions' LTO-IR keyed apart (by the pipeline and libmathdx's version, numba_tiles/_libmathdx.py).
LIBMATHDX = dataclasses.replace(CUB, name="numba_tiles.libmathdx")

# cuBLASDx (MathDx) over CuTe, CCCL and the CUDA headers; lto_libs first for numba_tiles' wrappers.
# Its headers are parsed only by programs of matmul instances, and its version is in their key.
# device_as_default_execution_space: CUTLASS and cuBLASDx call unannotated constexpr functions
# from device code, which NVRTC rejects otherwise. No precompiled base: a MathDx program's time is
# instantiating the GEMM (parsing its headers is ~1.3 s of ~9 s), and its PCH would be 300 MB.
MATHDX = Library(
    name="numba_tiles.mathdx",
    include_dirs=lambda: (
        _toolchain.lto_libs_dir(),
        *_toolchain.mathdx_include_dirs(),
        _toolchain.cccl_include_dir(),
        _toolchain.cuda_include_dir(),
    ),
    versions=lambda: {
        **_cub_versions(),
        "cublasdx": _toolchain.mathdx_version("cublasdx"),
        "mathdx": _toolchain.directory_digest(_toolchain.mathdx_include_dirs()[0].parent),
    },
    blame="This is a numba_tiles bug (or a size cuBLASDx does not support); please report it with this message",
    macros=PROGRAM_MACROS,
    nvrtc_flags=(("device_as_default_execution_space", True), ("gen_opt_lto", True)),
    per_entry=True,
)
"""The `Library` of cuBLASDx (MathDx) over CuTe, CCCL and the CUDA headers, with numba_tiles' ``matmul.cuh``:
``library(..., over=MATHDX)`` for headers that include cuBLASDx.

Example::

    from numba_tiles import extending as ext

    assert ext.MATHDX.header("matmul.cuh").path().is_file()
"""

# MathDx's CuTe without cuBLASDx: the MMA atoms of tiles.matmul's warps (mma.cuh). A library of its own, so that
# its key holds MathDx's headers but not cuBLASDx's version (whose long-compile notice its programs would earn: one
# takes about 2 s of NVRTC).
CUTE = dataclasses.replace(
    MATHDX,
    name="numba_tiles.cute",
    versions=lambda: {
        **_cub_versions(),
        "mathdx": _toolchain.directory_digest(_toolchain.mathdx_include_dirs()[0].parent),
    },
)

# The wgmma block of Matmul.tile and Matmul.batched (wgmma.cuh): CuTe's GMMA atoms, which need the arch-specific
# target (sm_90a), so that its programs alone are compiled for sm_90a.
CUTE_SM90A = dataclasses.replace(CUTE, name="numba_tiles.cute.sm90a", arch_specific=True)

# cuRANDDx (MathDx's generators and distributions, random.cuh) over cuRAND's device headers (which it includes for
# its generators' selection and its normal distribution), CCCL and the CUDA headers: its key holds cuRANDDx's version
# and cuRAND's headers, not cuBLASDx's.
CURANDDX = dataclasses.replace(
    MATHDX,
    name="numba_tiles.curanddx",
    include_dirs=lambda: (*MATHDX.include_dirs(), _toolchain.curand_include_dir()),
    versions=lambda: {
        **_cub_versions(),
        "curanddx": _toolchain.mathdx_version("curanddx"),
        "mathdx": _toolchain.directory_digest(_toolchain.mathdx_include_dirs()[0].parent),
        "curand": _toolchain.directory_digest(_toolchain.curand_include_dir()),
    },
    blame="This is a numba_tiles bug (or a generator cuRANDDx does not support); please report it with this message",
)

# cuFFTDx (MathDx's block FFTs, fft.cuh) over CCCL and the CUDA headers: a library of its own, so that its key holds
# cuFFTDx's version (and MathDx's headers, which hold its database) and not cuBLASDx's. One a precision: cuFFTDx
# parses the code of every size it has in every precision it is told of (tens of MB of PTX strings), and told of one
# (CUFFTDX_DETAIL_MANUAL_IMPL_FILTER) a 1024-point FFT took 5.7 s of NVRTC on the 2-core machine, not 10.3 s.
# CUFFTDX_DISABLE_CUTLASS_DEPENDENCY: else cufftdx.hpp has commondx take CUTLASS's types in, headers that no block
# FFT in registers uses.
CUFFTDX = {
    dtype: dataclasses.replace(
        MATHDX,
        name=f"numba_tiles.cufftdx.{precision}",
        versions=lambda: {
            **_cub_versions(),
            "cufftdx": _toolchain.mathdx_version("cufftdx"),
            "mathdx": _toolchain.directory_digest(_toolchain.mathdx_include_dirs()[0].parent),
        },
        blame="This is a numba_tiles bug (or an FFT cuFFTDx does not support); please report it with this message",
        macros=(
            *MATHDX.macros,
            "CUFFTDX_DISABLE_CUTLASS_DEPENDENCY",
            "CUFFTDX_DETAIL_MANUAL_IMPL_FILTER",
            f"CUFFTDX_DETAIL_INCLUDE_PRECISION_{precision.upper()}",
        ),
    )
    for dtype, precision in (("float32", "fp32"), ("float64", "fp64"))
}
