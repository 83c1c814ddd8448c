"""The versions a benchmark's JSON records: installed distributions, and numba_tiles' own.

    from _versions import versions
    versions("numba", "torch")   # {"numba": "0.68.0", "numba-tiles": "0.1.0"}: absent ones are left out
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
