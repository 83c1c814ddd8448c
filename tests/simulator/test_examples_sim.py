"""The examples of the block primitives, the FFTs, random numbers and solvers run on Numba's simulator (small sizes)
and check themselves against NumPy."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "example",
    ["byte_histogram", "segmented_scan", "segmented_sort", "fft_convolution", "monte_carlo", "batched_cholesky"],
)
def test_example_matches_numpy_on_the_simulator(example):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{example}.py")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0 and "match" in run.stdout, run.stdout + run.stderr[-3000:]
