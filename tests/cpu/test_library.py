"""The libraries' NVRTC options (the CCCL headers they skip are still CCCL's, and skipping them changes no code),
and where their headers come from."""

import dataclasses
import re

import pytest
from numba import cuda

import numba_tiles as tiles
from numba_tiles import _programs, _toolchain
from numba_tiles._library import CUB, DECLARED, PROGRAM_MACROS, UNUSED_PTX_HEADERS


def test_every_library_compiles_with_cccls_macros():
    """MathDx's and CuTe's headers include CCCL's as CUB's do: every library of numba_tiles' (cuBLASDx, CuTe's
    atoms, cuFFTDx, cuRANDDx, libmathdx's wrappers) is compiled with the macros that shorten CCCL's parse."""
    ours = [library for library in DECLARED if library.name.startswith("numba_tiles.")]
    assert {"numba_tiles.cub", "numba_tiles.mathdx", "numba_tiles.cute.sm90a", "numba_tiles.cufftdx.fp32"} <= {
        library.name for library in ours
    }
    for library in ours:
        assert set(PROGRAM_MACROS) <= set(library.macros), library.name


def test_each_skipped_ptx_header_is_guarded_by_the_macro_we_define():
    """A CCCL upgrade that renames a header or its guard would silently parse it again: say so here."""
    defined = {m for m in CUB.macros if isinstance(m, str)}
    for name in UNUSED_PTX_HEADERS:
        path = _toolchain.cccl_include_dir() / "cuda" / "__ptx" / "instructions" / f"{name}.h"
        assert path.is_file(), f"CCCL has no {path}: drop {name!r} from UNUSED_PTX_HEADERS"
        guard = re.search(r"^#ifndef (\w+)", path.read_text(), re.M)[1]
        assert guard in defined, f"{path.name} is guarded by {guard}, which CUB's options do not define"


def test_skipping_unused_ptx_headers_leaves_the_ltoir_unchanged():
    """The same block_sum compiled with and without the skipped headers: byte-identical LTO-IR."""
    from cuda.core import Program, ProgramOptions

    def kernel(x, out):
        out[0] = tiles.block_sum(x[cuda.grid(1)], block_dim=64)

    with _programs.recording() as lowered:
        tiles.compile(kernel, "void(float32[:], float32[:])", arch="sm_90", output="ltoir")
    ((instance, target),) = lowered
    source = _programs.translation_unit([instance])

    def ltoir(library):
        flags = library.program_options(target)
        program = Program(source, "c++", options=ProgramOptions(include_path=library.include_path(), **flags))
        return program.compile("ltoir").code

    skipped = [m for m in CUB.macros if isinstance(m, str) and m.startswith("_CUDA_PTX_")]
    assert len(skipped) == len(UNUSED_PTX_HEADERS)
    parsing_all = dataclasses.replace(CUB, macros=tuple(m for m in CUB.macros if m not in skipped))
    assert ltoir(CUB) == ltoir(parsing_all)


@pytest.mark.parametrize("nvrtc,expected", [((13, 0), "cu13/include"), ((12, 9), "cuda_runtime/include")])
def test_cuda_headers_are_those_of_nvrtcs_line(nvrtc, expected, tmp_path, monkeypatch):
    """With both lines' runtime headers on the path (the CUDA 13 wheels' nvidia/cu13/include, the CUDA 12
    ones' nvidia/cuda_runtime/include), the ones of NVRTC's major version are taken."""
    for folder, version in (("cu13/include", 13000), ("cuda_runtime/include", 12090)):
        include = tmp_path / "nvidia" / folder
        include.mkdir(parents=True)
        (include / "cuda_fp16.h").write_text("")
        (include / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION {version}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_toolchain, "nvrtc_version", lambda: nvrtc)
    _toolchain.cuda_include_dir.cache_clear()
    try:
        assert _toolchain.cuda_include_dir() == tmp_path / "nvidia" / expected
        assert _toolchain.cuda_line() == f"cu{nvrtc[0]}"
    finally:
        _toolchain.cuda_include_dir.cache_clear()
