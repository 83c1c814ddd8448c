"""The notebooks run top to bottom in a Jupyter kernel on the simulator, as a reader runs them.

Their cells check their own results (against NumPy); here a cell that raises fails the test, and a
notebook that draws a figure must show it as an image/png output and save it to the PNG named by
NUMBA_TILES_PLOT. tests/gpu/test_notebooks_gpu.py runs them the same way on a GPU.
"""

import json
import os
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
PLOTS = {"segmented_reduction.ipynb"}  # notebooks that must show (and save) a figure
CELL_TIMEOUT = 300  # seconds per cell


def execute(path, env, scratch, *, timeout=CELL_TIMEOUT, save=None):
    """Run the notebook at ``path`` in a fresh IPython kernel of this interpreter and return it executed.

    The kernel gets the environment ``env`` and starts in the notebook's directory (the notebooks
    find examples/ from there). The first cell that raises fails the call, as does any error output.
    ``scratch``: a directory for the kernel spec. ``save``: where to write the executed notebook,
    also when a cell failed (its traceback is then in the file).
    """
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # Our own "python3" kernel spec, found first through JUPYTER_PATH: one installed for the user may
    # start another interpreter, without numba_tiles.
    spec = Path(scratch) / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))

    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(spec.parents[1])
    try:
        client.execute(env=env)
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_PATH")
        else:
            os.environ["JUPYTER_PATH"] = saved
        if save is not None:
            nbformat.write(notebook, save)
    errors = [(i, output) for i, cell in enumerate(notebook.cells) for output in cell.get("outputs", [])
              if output.get("output_type") == "error"]
    assert not errors, f"{path.name}: cell {errors[0][0]} raised {errors[0][1].get('ename')}: {errors[0][1].get('evalue')}"
    return notebook


def images(notebook):
    """The notebook's image/png outputs (base64 text)."""
    return [output["data"]["image/png"] for cell in notebook.cells for output in cell.get("outputs", [])
            if "image/png" in output.get("data", {})]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path):
    plot = tmp_path / f"{path.stem}.png"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "NUMBA_TILES_PLOT": str(plot)}
    notebook = execute(path, env, tmp_path)
    if path.name in PLOTS:
        assert images(notebook), f"{path.name} showed no image/png output"
        assert plot.is_file() and plot.read_bytes().startswith(b"\x89PNG"), f"{path.name} did not save {plot}"
