"""The notebooks run top to bottom on the simulator (their cells check their own results)."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path):
    cells = json.loads(path.read_text())["cells"]
    code = [("".join(c["source"]), i) for i, c in enumerate(cells) if c["cell_type"] == "code"]
    assert code, f"{path.name} has no code"
    namespace = {"__name__": "__main__"}
    for source, index in code:
        exec(compile(source, f"{path.name}[cell {index}]", "exec"), namespace)
