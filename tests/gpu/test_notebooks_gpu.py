"""The notebooks run top to bottom in a Jupyter kernel on the GPU: full size, timed with CUDA events.

As on the simulator (tests/simulator/test_notebooks.py), a cell that raises fails the test and a
figure must be shown and saved. With NUMBA_TILES_NOTEBOOK_OUT set, the executed notebooks (also a
failed one, with its traceback) and their plots (``<notebook>.png``) are written to that directory.
The bandwidths are only meaningful when nothing else runs on the GPU: run this file on its own, not
beside the other GPU tests on pytest-xdist workers.
"""

import os
from pathlib import Path

import pytest
from numba import cuda

from ..simulator.test_notebooks import NOTEBOOKS, PLOTS, execute, images

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]

CELL_TIMEOUT = 600  # seconds per cell: 1 GiB arrays, checks against NumPy, first compiles


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_gpu(path, tmp_path):
    out = Path(os.environ.get("NUMBA_TILES_NOTEBOOK_OUT") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    plot = out / f"{path.stem}.png"
    env = {name: value for name, value in os.environ.items() if name != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_TILES_PLOT"] = str(plot)
    notebook = execute(path, env, tmp_path, timeout=CELL_TIMEOUT, save=out / path.name)
    if path.name in PLOTS:
        assert images(notebook), f"{path.name} showed no image/png output"
        assert plot.is_file() and plot.read_bytes().startswith(b"\x89PNG"), f"{path.name} did not save {plot}"
