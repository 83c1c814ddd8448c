"""This process's counters (`numba_tiles.cache.stats` shows them): what the cache and the compiler did."""

import collections
import threading

NAMES = (
    "hits",
    "misses",
    "nvrtc",
    "nvrtc_seconds",
    "pch_used",
    "pch_wait_seconds",
    "memo",
    "writes",
    "evictions",
    "rejected",
    "libmathdx",
    "libmathdx_seconds",
    "links",
    "link_seconds",
)
_counts = collections.Counter()
_lock = threading.Lock()


def count(name, amount=1):
    """Add ``amount`` to the counter ``name`` (one of `NAMES`)."""
    assert name in NAMES, name
    with _lock:
        _counts[name] += amount


def snapshot():
    with _lock:
        return {name: _counts[name] for name in NAMES}
