"""The notebooks are stored with the outputs of a GPU run of their current code, so that a reader
sees results and the plot without running them.

notebooks/refresh.py runs them on a GPU and records in each one's metadata the device, the commit,
the date and a digest of its code cells and of the sources its outputs show. Here nothing runs:
every code cell ran, in order and without an error; the cells that print or show have outputs; the
plot is an image/png; the outputs are small; the device is a GPU; and the digest is the current
code's, so that a cell (or the helper) edited since the last GPU run fails.
"""

import importlib.util
import json
import re
import sys
from datetime import datetime
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REFRESH = "run `make gpu-notebooks` on a GPU machine (notebooks/refresh.py) and commit the notebooks it writes"
SHOWS = re.compile(r"(?<![\w.])(print|display|show|plot_bandwidth)\(")  # calls whose cell must have outputs
MAX_BYTES = 400_000  # a stored notebook, images included
MAX_TEXT = 20_000  # characters of one text output: no printed arrays or bytes, no long tracebacks


def _load_refresh():
    name = "numba_tiles_notebook_refresh"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "notebooks" / "refresh.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


refresh = _load_refresh()


def stored(path):
    """The notebook at ``path`` as stored, and its record of the GPU run (None if it has none)."""
    notebook = json.loads(path.read_text())
    return notebook, notebook["metadata"].get("numba_tiles")


def text(value):
    return "".join(value) if isinstance(value, list) else value


@pytest.mark.parametrize("path", refresh.NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_are_from_a_gpu(path):
    notebook, record = stored(path)
    assert record, f"{path.name} holds no outputs of a GPU run: {REFRESH}"
    device = record.get("device", "")
    assert device and "simulator" not in device.lower(), f"{path.name} was stored from {device!r}, not a GPU: {REFRESH}"
    assert device in refresh.text_outputs(notebook), f"{path.name}'s outputs do not name its device {device!r}"
    assert re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", record.get("commit", "")), f"commit: {record.get('commit')!r}"
    datetime.strptime(record.get("date", ""), "%Y-%m-%d %H:%M UTC")


@pytest.mark.parametrize("path", refresh.NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_are_from_the_current_code(path):
    notebook, record = stored(path)
    assert record, f"{path.name} holds no outputs of a GPU run: {REFRESH}"
    sources = ", ".join(str(p.relative_to(REPO)) for p in refresh.sources(notebook))
    assert record["digest"] == refresh.digest(notebook), (
        f"{path.name}'s code cells or {sources} changed since its outputs were stored "
        f"(on {record['device']} at {record['commit']}, {record['date']}): {REFRESH}"
    )


@pytest.mark.parametrize("path", refresh.NOTEBOOKS, ids=lambda p: p.name)
def test_every_cell_ran_and_shows_its_results(path):
    notebook, _ = stored(path)
    assert path.stat().st_size <= MAX_BYTES, f"{path.name} is {path.stat().st_size:,} bytes: keep its outputs small"
    cells = list(refresh.code_cells(notebook))
    for n, (cell, source) in enumerate(cells, 1):
        where = f"{path.name}, code cell {n} ({source.splitlines()[0] if source else ''!r})"
        assert cell.get("execution_count") == n, f"{where} did not run in order with the others: {REFRESH}"
        outputs = cell.get("outputs", [])
        assert not [o for o in outputs if o.get("output_type") == "error"], f"{where} stored an error"
        if SHOWS.search(source):
            assert outputs, f"{where} prints or shows results but stored no output: {REFRESH}"
        if "plot_bandwidth(" in source:
            assert any("image/png" in o.get("data", {}) for o in outputs), f"{where} stored no image/png plot"
        for output in outputs:
            for value in [output.get("text", "")] + [
                v for k, v in output.get("data", {}).items() if k.startswith("text/")
            ]:
                assert len(text(value)) <= MAX_TEXT, f"{where} stored {len(text(value)):,} characters of text"
