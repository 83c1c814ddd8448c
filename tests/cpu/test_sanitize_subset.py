"""`make gpu-sanitize`'s subset (tests/gpu/conftest.py): every GPU test function but those that stop a
kernel on purpose, every shape value (here: every load/store algorithm), and far fewer cases."""

import re
import subprocess
import sys
from pathlib import Path

from ..gpu.conftest import ON_PURPOSE
from ..support.collectives import MOVE_ALGORITHMS

ROOT = Path(__file__).resolve().parents[2]


def collected(*flags):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/gpu",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--ignore=tests/gpu/test_notebooks_gpu.py",
            *flags,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in out.splitlines() if "::" in line]


def test_the_subset_keeps_every_test_and_every_algorithm_in_a_tenth_of_the_cases():
    everything, subset = collected(), collected("--sanitize-subset")
    functions = {re.sub(r"\[.*", "", t) for t in everything}
    kept = {re.sub(r"\[.*", "", t) for t in subset}
    on_purpose = {f for f in functions if any(mark in f for mark in ON_PURPOSE)}
    assert on_purpose and kept == functions - on_purpose
    load_store = [t for t in subset if "::test_load_store[" in t]
    assert all(any(f"[{a}-" in t for t in load_store) for a in MOVE_ALGORITHMS)
    assert len(subset) < len(everything) / 5
