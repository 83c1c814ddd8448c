"""The notebooks run top to bottom in a Jupyter kernel on the simulator, as a reader runs them.

Their cells check their own results (against NumPy); here a cell that raises fails the test, and a
notebook that draws a figure must show it as an image/png output and save it to the PNG named by
NUMBA_TILES_PLOT. The run is kept in memory: the stored notebooks, which hold a GPU run's outputs,
are left as they are. tests/gpu/test_notebooks_gpu.py runs them the same way on a GPU.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

REFRESH_PATH = Path(__file__).resolve().parents[2] / "notebooks" / "refresh.py"


def _load_refresh():
    """notebooks/refresh.py, which runs the notebooks (and, on a GPU, stores them)."""
    name = "numba_tiles_notebook_refresh"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REFRESH_PATH)
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


refresh = _load_refresh()
NOTEBOOKS = refresh.NOTEBOOKS
PLOTS = {"segmented_reduction.ipynb"}  # notebooks that must show (and save) a figure
CELL_TIMEOUT = 300  # seconds per cell


def execute(path, env, scratch, *, timeout=CELL_TIMEOUT):
    """The notebook at ``path`` executed in a kernel with ``env`` (see refresh.execute); a cell that raises fails."""
    for module in ("nbformat", "nbclient", "ipykernel"):
        pytest.importorskip(module)
    try:
        return refresh.execute(path, env, scratch, timeout=timeout)
    except refresh.CellFailed as e:
        pytest.fail(str(e), pytrace=False)


def images(notebook):
    """The notebook's image/png outputs (base64 text)."""
    return [
        output["data"]["image/png"]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path):
    stored = path.read_bytes()
    plot = tmp_path / f"{path.stem}.png"
    notebook = execute(path, refresh.kernel_env(simulator=True, NUMBA_TILES_PLOT=str(plot)), tmp_path)
    assert "Numba's CUDA simulator" in refresh.text_outputs(notebook), f"{path.name} did not run on the simulator"
    if path.name in PLOTS:
        assert images(notebook), f"{path.name} showed no image/png output"
        assert plot.is_file() and plot.read_bytes().startswith(b"\x89PNG"), f"{path.name} did not save {plot}"
    assert path.read_bytes() == stored, f"running {path.name} rewrote the stored notebook"
