"""The versions a benchmark's JSON records: installed distributions, and numba_tiles' own; the device's name;
and the record written.

    from _versions import commit, device_name, versions, write_result
    versions("numba", "torch")   # {"numba": "0.68.0", "numba-tiles": "0.1.0"}: absent ones are left out
    device_name(cuda.get_current_device())   # "NVIDIA H200"
    commit()   # "5e2b222", or "5e2b222-dirty" when the tree measured has uncommitted changes
    write_result("matmul", "2026-11-28", "h100", rows, device=..., commit=..., repeats=20, versions=...)
"""

import json
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path


def versions(*dists):
    """``{distribution: version}`` of those installed, and numba-tiles' (read from the tree where it
    runs uninstalled, as on the GPU machines)."""
    found = {}
    for dist in (*dists, "numba-tiles"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    if "numba-tiles" not in found:
        text = (Path(__file__).resolve().parents[1] / "numba_tiles" / "_version.py").read_text()
        found["numba-tiles"] = re.search(r'__version__ = "([^"]+)"', text).group(1)
    return found


def device_name(device):
    """A numba-cuda ``Device``'s name as text (numba-cuda versions give it as bytes or as str)."""
    return device.name.decode() if isinstance(device.name, bytes) else str(device.name)


def commit(tree=None):
    """The commit of the checkout measured (``tree``, default this one), short, with "-dirty" when its files
    differ from it: a benchmark run from a working tree says so. ``NUMBA_TILES_COMMIT`` names it instead, for
    a copy of the tree without its git history (as on a GPU machine the tree is sent to)."""
    if os.environ.get("NUMBA_TILES_COMMIT"):
        return os.environ["NUMBA_TILES_COMMIT"]
    tree = tree or str(Path(__file__).resolve().parents[1])
    return subprocess.run(["git", "-C", tree, "describe", "--always", "--dirty"], capture_output=True,
                          text=True).stdout.strip()


def write_result(name, date, label, rows, **fields):
    """Write a benchmark's record, ``{"benchmark": name, "date": date, **fields, "label": label, "python": ...,
    "rows": rows}`` (``fields``: the device and commit its table printed, its repeats, versions and its own), to
    benchmarks/results/NAME-DATE[-LABEL].json; returns the path."""
    record = {"benchmark": name, "date": date, **fields, "label": label, "python": platform.python_version(),
              "rows": rows}
    path = Path(__file__).resolve().parent / "results" / (f"{name}-{date}" + (f"-{label}" if label else "") + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path
