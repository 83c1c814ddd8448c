"""python -m numba_tiles: precompile a module into the cache, inspect and trim the cache, doctor; mistakes said in
one line on stderr; a closed output pipe ends it quietly; troubleshooting's doctor sample is what doctor prints."""

import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import numba_tiles

ROOT = Path(__file__).resolve().parents[2]


def cli(cache_dir, *args, check=True, cwd=ROOT):
    env = {**os.environ, "NUMBA_TILES_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, "-m", "numba_tiles", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check
    )


RUN_EXAMPLE_KERNEL = r"""
import json, sys
sys.path.insert(0, ".")
import numba_tiles as tiles
from examples import segmented_sum as ex
tiles.compile(ex.segment_sums, ex.NUMBA_TILES_PRECOMPILE[ex.segment_sums][0], arch=sys.argv[1])
print(json.dumps(tiles.cache.stats()))
"""


def test_precompile_then_zero_nvrtc_calls(tmp_path):
    out = cli(tmp_path, "precompile", "examples.segmented_sum", "--arch", "sm_90", "--arch", "sm_80")
    assert "precompiled 2 kernel signature(s)" in out.stdout
    assert len(list(tmp_path.glob("*.ltoir"))) == 2
    for arch in ("sm_90", "sm_80"):
        env = {**os.environ, "NUMBA_TILES_CACHE_DIR": str(tmp_path)}
        run = subprocess.run(
            [sys.executable, "-c", RUN_EXAMPLE_KERNEL, arch],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        stats = json.loads(run.stdout.strip().splitlines()[-1])
        assert stats["nvrtc"] == 0 and stats["hits"] == 1


def test_cache_commands(tmp_path):
    cli(tmp_path, "precompile", "examples.segmented_sum", "--arch", "sm_90")
    info = cli(tmp_path, "cache", "info").stdout
    assert str(tmp_path) in info and "entries     1," in info
    assert "digest of: source, output, target, options, versions" in info
    listing = cli(tmp_path, "cache", "list").stdout
    assert "sm_90" in listing and "1 entries" in listing
    assert "removed 1 entries" in cli(tmp_path, "cache", "prune", "--max-bytes", "10").stdout
    cli(tmp_path, "precompile", "examples.segmented_sum", "--arch", "sm_80")
    assert "removed 1 entries" in cli(tmp_path, "cache", "clear").stdout
    assert not list(tmp_path.glob("*.ltoir"))
    assert cli(tmp_path, "cache", "prune", check=False).returncode == 2  # --max-bytes is required


def test_doctor_reports_the_toolchain(tmp_path):
    out = cli(tmp_path, "doctor")
    for what in ("NVRTC", "nvJitLink", "NVVM", "CCCL", "MathDx", "driver", "cache", "sm_90"):
        assert what in out.stdout
    assert "PROBLEM" not in out.stdout and out.returncode == 0
    # Versions as people write them (CCCL_VERSION 3000001 is CCCL 3.0.1; CUDART_VERSION 13000 is CUDA 13.0)
    assert re.search(r"^CCCL +\d+\.\d+\.\d+  /", out.stdout, re.M), out.stdout
    assert re.search(r"^CUDA headers +\d+\.\d+  /", out.stdout, re.M), out.stdout
    assert re.search(r"^NVRTC +\d+\.\d+  ", out.stdout, re.M) and re.search(r"^nvJitLink +\d+\.\d+  ", out.stdout, re.M)
    # numba-cuda-mlir, next to numba-cuda: its version where it is installed
    mlir = importlib.util.find_spec("numba_cuda_mlir") and importlib.metadata.version("numba-cuda-mlir")
    assert re.search(rf"^numba-cuda\s.*\nnumba-cuda-mlir +{re.escape(mlir or 'not installed')}\n", out.stdout, re.M)


def test_version_and_help(tmp_path):
    version = cli(tmp_path, "--version")
    assert version.stdout == numba_tiles.__version__ + "\n" and version.returncode == 0
    bare = cli(tmp_path)
    assert bare.stdout.startswith("usage: numba-tiles") and "doctor" in bare.stdout and bare.returncode == 0
    helps = " ".join(cli(tmp_path, "precompile", "--help").stdout.split())
    assert "with the current directory first on sys.path: the current directory, then PYTHONPATH" in helps
    assert "--signature [KERNEL=]SIGNATURE" in helps


def test_doctor_flags_a_cache_directory_anyone_may_rewrite(tmp_path):
    shared = tmp_path / "scratch"
    shared.mkdir()
    shared.chmod(0o777)  # world-writable, no sticky bit
    out = cli(shared, "doctor", check=False)
    assert out.returncode == 1
    assert re.search(r"^cache trust +user: .*world-writable without the sticky bit", out.stdout, re.M), out.stdout
    assert "PROBLEM: the cache directory is not used" in out.stdout
    shared.chmod(0o1777)  # as /tmp: the sticky bit keeps others from replacing your entries
    out = cli(shared, "doctor", check=False)
    assert "PROBLEM: the cache directory" not in out.stdout and re.search(r"^cache trust +user: ", out.stdout, re.M)


KERNELS = """
from numba import cuda
import numba_tiles as tiles

@cuda.jit(device=True)
def twice(v):
    return v + v

@cuda.jit
def block_sums(x, out):
    s = tiles.block_sum(twice(x[cuda.grid(1)]), block_dim=128)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = s
"""
TWO_KERNELS = (
    KERNELS
    + """
@cuda.jit
def block_maxima(x, out):
    m = tiles.block_reduce(x[cuda.grid(1)], "max", block_dim=128)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = m
"""
)
SIG = "void(float32[::1], float32[::1])"


def one_line_error(run):
    """The one line a mistake prints: exit status 2, no stack."""
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert "Traceback" not in run.stderr and len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith("numba-tiles: ") and run.stdout == "", run.stderr
    return run.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["no.such.module"], "no module named 'no' (for no.such.module) in the current directory ("),
        (["examples.segmented_sum", "--arch", "sm_91"], "--arch sm_91 is not a target NVRTC"),
        (
            ["examples/segmented_sum.py"],
            "not a module name: give the module's dotted name (for the file "
            "examples/segmented_sum.py: examples.segmented_sum)",
        ),
        (
            ["kernels"],
            "no signatures to compile block_sums of kernels for: the module has no NUMBA_TILES_PRECOMPILE = "
            "{kernel: [signature, ...]} for it; give the argument types with --signature block_sums='void(...)' "
            "(a Numba type for each of x, out; repeatable)",
        ),
        (
            ["kernels", "--signature", "void(float32[::1], floot32[::1])"],
            "is not a Numba signature (NameError: name 'floot32' is not defined)",
        ),
        (["kernels", "--signature", "void(float32[::1])"], "gives 1 argument type(s), but block_sums takes 2 (x, out)"),
        (["kernels", "--signature", f"twice={SIG}"], "twice is a device function"),
        (
            ["two", "--signature", SIG],
            f"names no kernel, and two has 2 (block_sums, block_maxima): say which, as --signature block_sums='{SIG}'",
        ),
        (["two", "--signature", "block_maxima=void(float32[::1])"], "but block_maxima takes 2"),
    ],
)
def test_a_mistake_is_one_line_on_stderr(tmp_path, args, says):
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "two.py").write_text(TWO_KERNELS)
    cwd = ROOT if args[0].startswith(("examples", "no.")) else tmp_path
    assert says in one_line_error(cli(tmp_path / "cache", "precompile", *args, check=False, cwd=cwd))
    assert not (tmp_path / "cache").exists()  # (refused before anything compiled)


def test_traceback_flag_shows_the_stack(tmp_path):
    for args in (["--traceback", "precompile", "no.such.module"], ["precompile", "no.such.module", "--traceback"]):
        run = cli(tmp_path, *args, check=False)
        assert run.returncode == 2 and run.stderr.startswith("Traceback (most recent call last):"), run.stderr
        assert "ModuleNotFoundError: No module named 'no'" in run.stderr
        assert run.stderr.splitlines()[-1].startswith("numba-tiles: no module named 'no'")


@pytest.mark.parametrize("pipe", ["cache info | head -1", "cache list | head -1", "cache info | true"])
def test_a_closed_pipe_ends_quietly(tmp_path, pipe):
    """The reader stops early (`true` reads nothing): no BrokenPipeError, nothing on stderr, status 0."""
    env = {**os.environ, "NUMBA_TILES_CACHE_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}  # (each line written)
    run = subprocess.run(
        ["bash", "-c", f"'{sys.executable}' -m numba_tiles {pipe}; exit ${{PIPESTATUS[0]}}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert (run.returncode, run.stderr) == (0, "")
    first = {
        "cache info | head -1": f"directory   {tmp_path}\n",
        "cache list | head -1": "key ",
        "cache info | true": "",
    }[pipe]
    assert run.stdout.startswith(first) and len(run.stdout.splitlines()) == (1 if "head" in pipe else 0)


def test_precompile_a_module_with_signatures_given(tmp_path):
    """A module without NUMBA_TILES_PRECOMPILE, from the current directory, compiled for --signature's types."""
    (tmp_path / "kernels.py").write_text(KERNELS)
    cache = tmp_path / "cache"
    out = cli(cache, "precompile", "kernels", "--signature", SIG, "--arch", "sm_90", cwd=tmp_path)
    assert "precompiled 1 kernel signature(s)" in out.stdout and out.stderr == ""
    assert len(list(cache.glob("*.ltoir"))) == 1
    listing = cli(cache, "cache", "list").stdout.splitlines()
    assert listing[-1] == "1 entries" and listing[1].split()[4:6] == ["sm_90", "ltoir"]


def doctor_sample():
    """troubleshooting.md's sample of doctor's output, as (row, value) pairs."""
    page = (ROOT / "docs" / "guide" / "troubleshooting.md").read_text()
    block = re.search(r"^```text\n(.*?)^```", page.split("## `python -m numba_tiles doctor`", 1)[1], re.S | re.M)
    return [re.fullmatch(r"(\S+(?: \S+)*)  +(.*)", line).groups() for line in block[1].splitlines()]


def shape(value):
    """A doctor value's format: paths (whole, or shortened to .../), user names, hashes and numbers made generic."""
    value = re.sub(r"(?<!\S)(?:/|\.\.\./)\S*", "PATH", value)
    value = re.sub(r"owned by \S+ \(uid \d+\)(?: or root)?", "owned by USER", value)
    value = re.sub(r"\b[0-9a-f]{16}\b", "HASH", value)
    value = re.sub(r"\d+", "N", value)
    return re.sub(r"sm_N(?:, sm_N)+", "sm_N, ...", value)  # (each CUDA line has its own list of targets)


def test_the_documented_doctor_output_is_what_doctor_prints():
    """Troubleshooting's sample has doctor's rows, in its order, with values of its format (CCCL 3.0.1, CUDA
    headers 13.0, not CCCL_VERSION's 3000001): it cannot fall behind a change of doctor's."""
    from numba_tiles.__main__ import report

    rows = [(what, value) for what, value in report()[0] if not what.startswith("GPU ")]  # (a GPU machine's)
    sample = doctor_sample()
    assert [what for what, _ in sample] == [what for what, _ in rows]
    for (what, value), (_, documented) in zip(rows, sample, strict=True):
        if value.startswith(("not installed", "not found")) or (what == "driver" and not value.startswith("none")):
            continue  # what this machine lacks, or has (a driver): the sample is of one with all but a GPU
        assert shape(documented) == shape(value), (what, documented, value)
    documented = dict(sample)
    assert documented["CCCL"].startswith("3.0.1  ") and documented["CUDA headers"].startswith("13.0  ")
