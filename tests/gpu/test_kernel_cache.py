"""A kernel that calls intrinsics, over two fresh processes: with ``@cuda.jit(cache=True)`` the second loads
it, with no Numba compile and no NVRTC; without, it compiles its own part and takes the link from
numba_tiles' cache. Its results are right either way."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from numba import cuda

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]

ROOT = Path(__file__).resolve().parents[2]


def launch(seed, env, *flags):
    done = subprocess.run(
        [sys.executable, "-m", "tests.downstream.cached", str(seed), *flags],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_loads_the_kernel_without_compiling(tmp_path, rng):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "NUMBA_TILES_CACHE_DIR": str(tmp_path / "tiles")}
    first = launch(int(rng.integers(1 << 30)), env)
    assert first["correct"] and first["numba_compiles"] == 1 and first["nvrtc"] >= 1, first
    second = launch(int(rng.integers(1 << 30)), env)
    assert second["correct"], second
    assert second["numba_cache_hits"] == 1 and second["numba_compiles"] == 0 and second["nvrtc"] == 0, second
    print(
        f"first launch: {first['seconds_to_first_launch']:.2f} s compiled, "
        f"{second['seconds_to_first_launch']:.2f} s from the cache"
    )


def test_second_process_takes_the_linked_kernel_from_the_cache(tmp_path, rng):
    """A plain @cuda.jit kernel: numba-cuda's link at the first launch goes through numba_tiles' disk cache."""
    env = {**os.environ, "NUMBA_TILES_CACHE_DIR": str(tmp_path / "tiles")}
    first = launch(int(rng.integers(1 << 30)), env, "--uncached")
    assert first["correct"] and first["links"] == 1 and first["nvrtc"] >= 1, first
    second = launch(int(rng.integers(1 << 30)), env, "--uncached")
    assert second["correct"] and second["numba_compiles"] == 1, second
    assert second["links"] == 0 and second["nvrtc"] == 0, second
    print(
        f"first launch: {first['seconds_to_first_launch']:.2f} s linked, "
        f"{second['seconds_to_first_launch']:.2f} s with the link from the cache"
    )
