"""The versions a benchmark's JSON records: installed distributions, and numba_tiles' own; and the device's name.

    from _versions import commit, device_name, versions
    versions("numba", "torch")   # {"numba": "0.68.0", "numba-tiles": "0.1.0"}: absent ones are left out
    device_name(cuda.get_current_device())   # "NVIDIA H200"
    commit()   # "5e2b222", or "5e2b222-dirty" when the tree measured has uncommitted changes
"""

import os
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
