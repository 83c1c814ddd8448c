"""What a user sees while numba_tiles compiles: one notice on stderr when a compile will be long (a cuBLASDx
program, or programs side by side), and a progress bar of those in a notebook or terminal; nothing for a
small program or a cache hit, and nothing at all under NUMBA_TILES_QUIET=1."""

import os
import subprocess
import sys
import types as pytypes
from pathlib import Path

from numba import cuda
from numba.cuda import types

import numba_tiles as tiles
from numba_tiles import _compile
from numba_tiles._library import Library
from numba_tiles._spec import Instance
from numba_tiles._target import Target

ROOT = Path(__file__).resolve().parents[2]

SMALL_GEMM = """
import sys
sys.path.insert(0, ".")
import numba_tiles as tiles
from examples import gemm
kernel = gemm.make_gemm((16, 16, 16), "float16", "float32", 32)
tiles.compile(kernel, "void(float16[:, :], float16[:, :], float32[:, :], float64, float64)", arch="sm_90",
              output="ltoir")
print(tiles.cache.stats()["nvrtc"])
"""


def _notices(text):
    return [line for line in text.splitlines() if line.startswith("numba_tiles: ")]


def test_a_cublasdx_compile_says_so_once_and_a_cached_one_says_nothing(tmp_path):
    env = {**os.environ, "NUMBA_TILES_CACHE_DIR": str(tmp_path)}
    env.pop("NUMBA_TILES_QUIET", None)
    runs = [subprocess.run([sys.executable, "-c", SMALL_GEMM], cwd=ROOT, env=env, capture_output=True, text=True,
                           check=True) for _ in range(2)]
    assert _notices(runs[0].stderr) == [
        "numba_tiles: compiling tiles.matmul 16x16x16 (float16, float32) with cuBLASDx for sm_90 "
        f"(NVRTC, {_compile.CUBLASDX_TIME})"], runs[0].stderr
    assert int(runs[0].stdout) == 2  # the matmul's program and the tile moves' (CUB: no notice)
    assert int(runs[1].stdout) == 0 and not _notices(runs[1].stderr), runs[1].stderr


def test_a_small_program_compiles_without_a_word(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_TILES_QUIET", raising=False)

    def block_max(x, out):  # (a dtype and block no other test compiles: this process's memo has no program for it)
        m = tiles.block_reduce(x[cuda.grid(1)], "max", block_dim=96)
        out[cuda.blockIdx.x] = m

    before = tiles.cache.stats()["nvrtc"]
    tiles.compile(block_max, "void(uint16[::1], uint16[::1])", arch="sm_80", output="ltoir")
    assert tiles.cache.stats()["nvrtc"] == before + 1
    out, err = capfd.readouterr()
    assert not _notices(out + err), out + err


def _per_entry_library(tmp_path):
    """A library with a program per entry point (as MathDx's), of tiny templates: its programs build side by side."""
    (tmp_path / "tiny.cuh").write_text("#pragma once\nnamespace mypkg {\ntemplate <int N>\n"
                                       "__device__ void wait() { __nanosleep(N); }\n}\n")
    library = Library("mypkg", include_dirs=lambda: (tmp_path,), versions=lambda: {"mypkg": "1"},
                      blame="This is a bug in mypkg", per_entry=True)
    header = library.header("tiny.cuh")

    class CodeLibrary:  # what Numba lowers into (only its identity matters here)
        pass

    def build(*ns):
        """Lower calls of wait<n> for each n into one code library, and read the first program (builds them all)."""
        kernel = CodeLibrary()
        instances = [Instance("mine", header, header.template("mypkg::wait", N=n), types.none, ()) for n in ns]
        objects = [_compile.for_call(i, Target("sm_90"), kernel) for i in instances]
        assert objects[0].data

    return build


def test_programs_side_by_side_say_so_once_with_a_bar_in_a_notebook(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NUMBA_TILES_COMPILE_JOBS", "2")
    monkeypatch.delenv("NUMBA_TILES_QUIET", raising=False)
    monkeypatch.setitem(sys.modules, "ipykernel", pytypes.ModuleType("ipykernel"))  # as in Jupyter: a bar
    build = _per_entry_library(tmp_path)
    build(1, 2)
    out, err = capfd.readouterr()
    assert _notices(err) == ["numba_tiles: compiling 2 programs side by side for sm_90: tiles.mine "
                             "(NVRTC in 2 worker processes, cached afterwards)"], err
    assert "numba_tiles NVRTC:" in err and "0/2 [" in err  # the bar (gone when done: leave=False)
    monkeypatch.setattr(_compile, "_memo", {})  # (a fresh process: the programs come from the disk cache)
    build(1, 2)
    out, err = capfd.readouterr()
    assert out + err == ""


def test_quiet_silences_every_notice(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NUMBA_TILES_COMPILE_JOBS", "2")
    monkeypatch.setenv("NUMBA_TILES_QUIET", "1")
    monkeypatch.setitem(sys.modules, "ipykernel", pytypes.ModuleType("ipykernel"))
    build = _per_entry_library(tmp_path)
    before = tiles.cache.stats()["nvrtc"]
    build(3, 4)
    assert tiles.cache.stats()["nvrtc"] == before + 2
    out, err = capfd.readouterr()
    assert out + err == ""
