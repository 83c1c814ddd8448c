"""What a user sees while numba_tiles compiles: one notice on stderr when a compile will be long (a cuBLASDx
program, or programs side by side), quoting the measured time of a first kernel of its form, then, in a
notebook or terminal, the time it has taken so far (or a progress bar of the programs side by side), redrawn
each second; nothing for a small program or a cache hit, nothing but the notice in a log, and nothing at all
under NUMBA_TILES_QUIET=1."""

import importlib.util
import os
import pty
import re
import subprocess
import sys
import threading
import time
import types as pytypes
from pathlib import Path

import pytest
from numba import cuda
from numba.cuda import types

import numba_tiles as tiles
from numba_tiles import _notices, _programs
from numba_tiles._library import Library
from numba_tiles._target import Target
from numba_tiles.extending import Instance

ROOT = Path(__file__).resolve().parents[2]

SMALL_GEMM = """
import sys
sys.path.insert(0, ".")
import numba_tiles as tiles
from examples import gemm
kernel = gemm.make_gemm((16, 16, 16), "float32", "float32", 32)
tiles.compile(kernel, "void(float32[:, :], float32[:, :], float32[:, :], float64, float64)", arch="sm_90",
              output="ltoir")
print(tiles.cache.stats()["nvrtc"])
"""


def notice_lines(text):
    return [line for line in text.splitlines() if line.startswith("numba_tiles: ")]


def _in_a_terminal(env):
    """SMALL_GEMM run with its stderr a terminal (a pseudo-terminal): (its stdout, all it wrote to stderr)."""
    main, side = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", SMALL_GEMM], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=side, text=True
    )
    os.close(side)
    written = []

    def read():  # (as it comes: a terminal's buffer is small)
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # (EIO: the child closed its side)
                return
            if not chunk:
                return
            written.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    out, _ = child.communicate(timeout=900)
    reader.join()
    os.close(main)
    assert child.returncode == 0, b"".join(written).decode()
    return out, b"".join(written).decode().replace("\r\n", "\n")  # (a terminal writes a newline as \r\n)


def test_a_cublasdx_compile_says_so_once_shows_its_time_on_a_terminal_and_a_cached_one_says_nothing(tmp_path):
    """The real path: a first tiles.matmul kernel in a fresh process, its stderr a terminal: the notice (as the
    caching guide shows it), then NVRTC's time so far, rewritten each second and cleared at the end; then the
    same kernel again, cached, its stderr a pipe: nothing."""
    env = {**os.environ, "NUMBA_TILES_CACHE_DIR": str(tmp_path)}
    env.pop("NUMBA_TILES_QUIET", None)
    out, err = _in_a_terminal(env)
    notice = (
        "numba_tiles: compiling tiles.matmul 16x16x16 (float32) with cuBLASDx for sm_90 "
        f"(NVRTC; {_notices.cold_time([pytypes.SimpleNamespace(intrinsic='matmul')])}; cached afterwards)"
    )
    assert err.startswith(notice + "\n"), err
    assert notice in (ROOT / "docs" / "guide" / "caching.md").read_text().splitlines()
    ticks = re.findall(r"\rnumba_tiles: NVRTC has been compiling for (\d+) s", err)
    assert len(ticks) >= 2 and [int(t) for t in ticks] == sorted(int(t) for t in ticks) and int(ticks[-1]) >= 1, err
    assert err.endswith("\r"), repr(err[-200:])  # (the line cleared: blanks between two carriage returns)
    assert err.rsplit("\r", 2)[1].strip() == "", repr(err[-200:])
    assert int(out) == 2  # the matmul's program and the tile moves' (CUB: no notice, no time)
    cached = subprocess.run(
        [sys.executable, "-c", SMALL_GEMM], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert int(cached.stdout) == 0 and cached.stderr == "", cached.stderr


def _load_report():
    spec = importlib.util.spec_from_file_location("report", ROOT / "benchmarks" / "report.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    return report


def test_a_notice_quotes_the_benchmark_figure_of_its_form_and_the_matmul_guide_the_same():
    """The figure a cuBLASDx notice gives for each form is the benchmark's (the newest compile_latency result that
    timed a first kernel of the form with an empty cache, its median in whole seconds, and the machine's cores), and
    the matmul guide gives the same; a form no benchmark times gets no figure."""
    results = _load_report().results()  # (the result files, oldest first)
    guide = (ROOT / "docs" / "guide" / "matmul.md").read_text()
    guide = guide[guide.index("<!-- perf:begin compile_cold -->") :]
    guide = guide[: guide.index("<!-- perf:end -->")]
    for intrinsic, case, kernel in (
        ("matmul", "matmul by cuBLASDx", "its complex and float32 path"),
        ("Matmul.multiply", "register matmul by cuBLASDx", "its float16-accumulator and float32 path"),
    ):
        newest = [r for r in results if f"{case}, cold cache" in r.data.get("results", {})][-1]
        seconds = round(newest.data["results"][f"{case}, cold cache"]["compile_s"])
        cores = int(re.search(r"(\d+) cores", newest.data["device"])[1])
        figure = f"about {seconds} s on {cores} CPU cores"
        assert f"took {figure}" in _notices.cold_time([pytypes.SimpleNamespace(intrinsic=intrinsic)])
        (line,) = [line for line in guide.splitlines() if kernel in line]
        assert figure in line and newest.name in guide, guide
    for untimed in ("Matmul.tile", "Matmul.batched"):  # (the register form's loop in one program)
        assert _notices.cold_time([pytypes.SimpleNamespace(intrinsic=untimed)]) == _notices.UNTIMED
    mixed = [pytypes.SimpleNamespace(intrinsic=i) for i in ("matmul", "Matmul.store")]
    assert _notices.cold_time(mixed) == _notices.UNTIMED


@pytest.fixture
def fast_ticks(monkeypatch):
    """A tick every 20 ms instead of every second, and stderr read as a person would: in Jupyter."""
    monkeypatch.setattr(_notices, "TICK_S", 0.02)
    monkeypatch.delenv("NUMBA_TILES_QUIET", raising=False)
    monkeypatch.setitem(sys.modules, "ipykernel", pytypes.ModuleType("ipykernel"))


def test_a_long_wait_shows_its_time_each_tick_then_clears_it(fast_ticks, capfd):
    with _notices.elapsed("NVRTC has been compiling", since=time.perf_counter() - 5):
        time.sleep(0.2)
    out, err = capfd.readouterr()
    ticks = re.findall(r"\rnumba_tiles: NVRTC has been compiling for (\d+) s", err)
    assert len(ticks) >= 3 and set(ticks) == {"5"}, repr(err)
    assert err.endswith("\r" + " " * len("numba_tiles: NVRTC has been compiling for 5 s") + "\r") and out == ""


def test_a_long_wait_shows_nothing_in_a_log_quietly_or_before_it_is_known_to_be_long(fast_ticks, monkeypatch, capfd):
    with _notices.elapsed("libmathdx has been generating it", when=lambda: False):  # (a cache hit, so far)
        time.sleep(0.1)
    known = []
    with _notices.elapsed("libmathdx has been generating it", when=lambda: bool(known)):
        time.sleep(0.1)
        known.append(True)  # (announced: it is generating)
        time.sleep(0.1)
    out, err = capfd.readouterr()
    assert err.startswith("\rnumba_tiles: libmathdx has been generating it for 0 s") and out == "", repr(err)
    assert err.count("\rnumba_tiles:") < 0.2 / 0.02, repr(err)  # (none in the first 0.1 s)
    monkeypatch.delitem(sys.modules, "ipykernel")  # stderr is capfd's file, not a terminal: a log
    with _notices.elapsed("NVRTC has been compiling"):
        time.sleep(0.1)
    monkeypatch.setitem(sys.modules, "ipykernel", pytypes.ModuleType("ipykernel"))
    monkeypatch.setenv("NUMBA_TILES_QUIET", "1")
    with _notices.elapsed("NVRTC has been compiling"):
        time.sleep(0.1)
    assert capfd.readouterr() == ("", "")


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
    assert not notice_lines(out + err), out + err


def test_a_cufftdx_compile_says_so_with_its_figure(tmp_path, monkeypatch, capfd):
    """cuFFTDx's programs are long too: their notice names cuFFTDx and the first FFT result's figure."""
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_TILES_QUIET", raising=False)
    fft = tiles.FFT(16, "complex64", arch="sm_80")

    def spectra(x):
        items = cuda.local.array(fft.storage_size, types.complex64)
        fft.load(x, items)
        fft.execute(items)
        fft.store(items, x)

    tiles.compile(spectra, "void(complex64[::1])", arch="sm_80", output="ltoir")
    out, err = capfd.readouterr()
    said = " ".join(notice_lines(out + err))
    assert "cuFFTDx" in said and "cuBLASDx" not in said, said
    assert _notices.cold_time([pytypes.SimpleNamespace(intrinsic="FFT.execute")]) in said, said
    assert _notices.long_library(tiles.extending.CUB) is None


def _per_entry_library(tmp_path):
    """A library with a program per entry point (as MathDx's), of tiny templates: its programs build side by side."""
    (tmp_path / "tiny.cuh").write_text(
        "#pragma once\nnamespace mypkg {\ntemplate <int N>\n__device__ void wait() { __nanosleep(N); }\n}\n"
    )
    library = Library(
        "mypkg",
        include_dirs=lambda: (tmp_path,),
        versions=lambda: {"mypkg": "1"},
        blame="This is a bug in mypkg",
        per_entry=True,
    )
    header = library.header("tiny.cuh")

    class CodeLibrary:  # what Numba lowers into (only its identity matters here)
        pass

    def build(*ns):
        """Lower calls of wait<n> for each n into one code library, and read the first program (builds them all)."""
        kernel = CodeLibrary()
        instances = [
            Instance(
                intrinsic="mine",
                header=header,
                template=header.template("mypkg::wait", N=n),
                result=types.none,
                params=(),
            )
            for n in ns
        ]
        objects = [_programs.for_call(i, Target("sm_90"), kernel) for i in instances]
        assert objects[0].data

    return build


def test_programs_side_by_side_say_so_once_with_a_bar_in_a_notebook(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(_notices, "TICK_S", 0.02)
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NUMBA_TILES_COMPILE_JOBS", "2")
    monkeypatch.delenv("NUMBA_TILES_QUIET", raising=False)
    monkeypatch.setitem(sys.modules, "ipykernel", pytypes.ModuleType("ipykernel"))  # as in Jupyter: a bar
    build = _per_entry_library(tmp_path)
    build(1, 2)
    out, err = capfd.readouterr()
    assert notice_lines(err) == [
        "numba_tiles: compiling 2 programs side by side for sm_90: tiles.mine "
        "(NVRTC in 2 worker processes, cached afterwards)"
    ], err
    assert "numba_tiles NVRTC:" in err and "0/2 [" in err  # the bar (gone when done: leave=False)
    # redrawn each tick while the first program compiles (a worker process's start and NVRTC: over 20 ms)
    assert err.count("0/2 [") >= 2, err
    monkeypatch.setattr(_programs, "_memo", {})  # (a fresh process: the programs come from the disk cache)
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
