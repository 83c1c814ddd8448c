"""Two sessions share this tree: the compiled one (cpu/, gpu/) and the simulator's (simulator/).

Numba decides at import whether ``numba.cuda`` is the simulator, so `make test` runs pytest
twice: plainly, then with NUMBA_ENABLE_CUDASIM=1; each run collects only its own tests.
"""

import os
import secrets

import numpy as np
import pytest

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

collect_ignore = ["cpu", "gpu"] if SIMULATOR else ["simulator"]


def pytest_configure(config):
    # A fresh disk cache per session: counters then see cold compiles, and the user's cache is untouched.
    if "NUMBA_TILES_CACHE_DIR" not in os.environ:
        import tempfile

        os.environ["NUMBA_TILES_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba_tiles_test_cache_")
    # The tests make hundreds of Matmul descriptions: none compiles ahead (tests/cpu/test_pipeline.py's own does).
    os.environ.setdefault("NUMBA_TILES_BACKGROUND", "0")


@pytest.fixture
def rng(request):
    """Fresh random data every run; the seed is printed so a failure can be replayed."""
    seed = int(os.environ.get("NUMBA_TILES_TEST_SEED", secrets.randbits(32)))
    print(f"{request.node.nodeid}: NUMBA_TILES_TEST_SEED={seed}")
    return np.random.default_rng(seed)
