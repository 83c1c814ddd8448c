"""The versions a benchmark's JSON records: installed distributions, and numba_tiles' own; and the device's name.

    from _versions import device_name, versions
    versions("numba", "torch")   # {"numba": "0.68.0", "numba-tiles": "0.1.0"}: absent ones are left out
    device_name(cuda.get_current_device())   # "NVIDIA H200"
"""

import re
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
