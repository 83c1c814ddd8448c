"""The notebooks run top to bottom in a Jupyter kernel on the GPU: full size, timed with CUDA events.

As on the simulator (tests/simulator/test_notebooks.py), a cell that raises fails the test and a
figure must be shown and saved. With NUMBA_TILES_NOTEBOOK_OUT set, the executed notebooks (also a
failed one, as far as it ran) and their plots (``<notebook>.png``) are written to that directory;
the stored notebooks are left as they are (notebooks/refresh.py rewrites them). The bandwidths are
only meaningful when nothing else runs on the GPU: run this file on its own, not beside the other
GPU tests on pytest-xdist workers.
"""

import os
from pathlib import Path

import pytest
from numba import cuda

from ..simulator.test_notebooks import NOTEBOOKS, PLOTS, images, refresh

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_gpu(path, tmp_path):
    for module in ("nbformat", "nbclient", "ipykernel"):
        pytest.importorskip(module)
    import nbformat

    out = Path(os.environ.get("NUMBA_TILES_NOTEBOOK_OUT") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    plot = out / f"{path.stem}.png"
    stored = path.read_bytes()
    env = refresh.kernel_env(simulator=False, NUMBA_TILES_PLOT=str(plot))
    try:
        notebook = refresh.execute(path, env, tmp_path)
    except refresh.CellFailed as e:
        nbformat.write(e.notebook, out / path.name)
        pytest.fail(str(e), pytrace=False)
    nbformat.write(notebook, out / path.name)
    assert "Numba's CUDA simulator" not in refresh.text_outputs(notebook), f"{path.name} ran on the simulator"
    if path.name in PLOTS:
        assert images(notebook), f"{path.name} showed no image/png output"
        assert plot.is_file() and plot.read_bytes().startswith(b"\x89PNG"), f"{path.name} did not save {plot}"
    assert path.read_bytes() == stored, f"running {path.name} rewrote the stored notebook"
