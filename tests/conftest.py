"""Two sessions share this tree: the compiled one (cpu/, gpu/) and the simulator's (simulator/).

Numba decides at import whether ``numba.cuda`` is the simulator, so `make test` runs pytest
twice: plainly, then with NUMBA_ENABLE_CUDASIM=1; each run collects only its own tests.
"""

import collections
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


# The modules whose tests take longest (cuBLASDx, cuFFTDx and libmathdx programs) run first: under xdist's worksteal,
# a worker that is idle takes queued tests from the end of another's queue, so short tests last let the workers finish
# together, where a 40 s test started last keeps one busy alone.
LONG_FIRST = (
    "cpu/test_matmul.py",
    "cpu/test_pipeline.py",
    "cpu/test_mlir.py",
    "cpu/test_docs.py",
    "cpu/test_fft.py",
    "simulator/test_notebooks.py",  # (a notebook on the simulator: most of a minute)
)


def pytest_addoption(parser):
    parser.addoption(
        "--one-case-each",
        action="store_true",
        help="only the first case of each parametrized test: the other CUDA line's check of the compile path",
    )


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        return next((i for i, module in enumerate(LONG_FIRST) if path.endswith(module)), len(LONG_FIRST))

    items.sort(key=rank)  # (stable: each module's tests in their own order)
    if config.getoption("--one-case-each"):
        seen, kept, left = set(), [], []
        for item in items:
            function = (item.nodeid.split("::")[0], getattr(item, "originalname", item.name))
            (left if function in seen else kept).append(item)
            seen.add(function)
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def pytest_terminal_summary(terminalreporter):
    """The skipped tests as one line, counted by reason: `make test` leaves them out of pytest's short summary
    (``-rfEX``), where each had a line of its own (without a GPU, every GPU test: ninety lines of "no CUDA GPU")."""
    skipped = terminalreporter.stats.get("skipped", [])
    if skipped:
        reasons = collections.Counter(_skip_reason(report) for report in skipped)
        terminalreporter.write_line(
            f"skipped {len(skipped)}: " + "; ".join(f"{count} {reason}" for reason, count in reasons.most_common())
        )


def _skip_reason(report):
    """A skip's reason (its report's ``longrepr`` is (file, line, "Skipped: reason"), also from an xdist worker)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


@pytest.fixture
def rng(request):
    """Fresh random data every run; the seed is printed so a failure can be replayed."""
    seed = int(os.environ.get("NUMBA_TILES_TEST_SEED", secrets.randbits(32)))
    print(f"{request.node.nodeid}: NUMBA_TILES_TEST_SEED={seed}")
    return np.random.default_rng(seed)
