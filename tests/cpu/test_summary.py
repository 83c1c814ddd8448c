"""What `make test` prints of skipped tests: one line, counted by reason (tests/conftest.py), not a line a test;
and its exit status: 0 when tests were skipped (the GPU tests without a GPU), 5 when none ran."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SKIPPING = """
import pytest

pytestmark = pytest.mark.skipif(True, reason="no CUDA GPU")

@pytest.mark.parametrize("n", range(5))
def test_on_a_gpu(n):
    pass
"""

OTHER = """
import pytest

def test_runs():
    assert 1 + 1 == 2

@pytest.mark.skipif(True, reason="no Hopper (sm_90) GPU")
def test_on_hopper():
    pass
"""


def _pytest(folder, *options):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(folder), "-q", "-rfEX", "-p", "no:cacheprovider", *options],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_skipped_tests_are_one_line_and_exit_zero(tmp_path, workers):
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_terminal_summary  # noqa: F401\n")
    (tmp_path / "test_gpu.py").write_text(SKIPPING)
    (tmp_path / "test_other.py").write_text(OTHER)
    run = _pytest(tmp_path, *workers)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert [line for line in lines if "GPU" in line] == ["skipped 6: 5 no CUDA GPU; 1 no Hopper (sm_90) GPU"], (
        run.stdout
    )
    assert not any(line.startswith("SKIPPED") for line in lines), run.stdout


def test_no_test_at_all_still_fails(tmp_path):
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_terminal_summary  # noqa: F401\n")
    run = _pytest(tmp_path)
    assert run.returncode == 5, run.stdout + run.stderr
    assert "skipped" not in run.stdout
