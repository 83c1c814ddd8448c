"""The on-disk cache of what NVRTC made for the intrinsics (LTO-IR, and the sizes of their shared
storages) and of the kernels nvJitLink linked with them: paid once per machine, not per process.

Where: ``NUMBA_TILES_CACHE_DIR`` if set, else the user cache directory (``~/.cache/numba_tiles``
on Linux). ``NUMBA_TILES_CACHE=0`` turns the disk cache off (the in-process memo stays).
``NUMBA_TILES_CACHE_MAX_BYTES`` caps its size (default 2 GiB); the least recently used
entries go first.

The key (`key`) digests everything that changes an entry's bytes: the C++ text, the target
(arch, checks, lineinfo), NVRTC's options, and the versions of the toolchain and of
every library the program includes (the content of their headers); a linked kernel's, its
modules' bytes, the link options and nvJitLink's version (`numba_tiles._link`). One file per key, ``<key>.ltoir``: a header (the key, the components it digests, the payload's
length and SHA-256) and the payload. Files are written to a temporary name in the same
directory and renamed into place, so readers see a whole entry or none, and any number of
processes may fill the cache at once. An entry that does not check out (truncated, corrupted,
another key's) is removed, reported once as a warning, and rebuilt; it never reaches a kernel.
If the directory cannot be created or written, compilation goes on with the memory cache alone.

Example::

    import numba_tiles as tiles
    print(tiles.cache.stats())      # {'hits': ..., 'misses': ..., 'nvrtc': ..., ...}
    print(tiles.cache.info()["directory"])
"""

import hashlib
import json
import os
import struct
import sys
import tempfile
import warnings
from pathlib import Path

_MAGIC = b"NTLTOIR1"
_SUFFIX = ".ltoir"
_DEFAULT_MAX_BYTES = 2 << 30

from . import _stats
from ._stats import count

_warned = set()

KEY_PARTS = ("source", "output", "target", "options", "versions")


def components(source, *, output, target, options, versions):
    """What the key of one compiled program digests (kept in its entry, shown by `entries`).

    ``target``: a `Target`'s fields; ``options``: NVRTC's; ``versions``: the toolchain's and each
    included library's (see `numba_tiles._library`).
    """
    return {"source": hashlib.sha256(source.encode()).hexdigest(), "output": output, "target": target,
            "options": options, "versions": versions}


def key(parts):
    """The hex digest naming the entry of ``parts`` (from `components`)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def stats():
    """Counters of this process: disk ``hits`` and ``misses``, ``nvrtc`` programs compiled and
    ``nvrtc_seconds`` spent, ``pch_used`` programs that took their base header precompiled
    (``pch_wait_seconds`` waiting for it to be made), ``memo`` reuses in memory, ``writes``, ``evictions``, ``rejected`` (bad entries removed),
    ``libmathdx`` pipelines generated (`PipelineMatmul`) and ``libmathdx_seconds`` spent on them, and
    ``links`` that nvJitLink ran (a linked kernel from the cache counts as a hit instead) and ``link_seconds``.

    Example::

        before = tiles.cache.stats()["nvrtc"]
    """
    return _stats.snapshot()


def enabled():
    return os.environ.get("NUMBA_TILES_CACHE", "1") != "0"


def directory():
    """The cache directory in use (it may not exist yet).

    Example::

        tiles.cache.directory()   # PosixPath('/home/me/.cache/numba_tiles')
    """
    if os.environ.get("NUMBA_TILES_CACHE_DIR"):
        return Path(os.environ["NUMBA_TILES_CACHE_DIR"]).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "numba_tiles"


def max_bytes():
    return int(os.environ.get("NUMBA_TILES_CACHE_MAX_BYTES", _DEFAULT_MAX_BYTES))


def _warn_once(topic, message):
    if topic not in _warned:
        _warned.add(topic)
        warnings.warn(f"numba_tiles cache: {message}", RuntimeWarning, stacklevel=3)


def _path(key):
    return directory() / f"{key}{_SUFFIX}"


def _encode(key, components, payload):
    header = json.dumps(
        {"key": key, "components": components, "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()},
        sort_keys=True,
    ).encode()
    return _MAGIC + struct.pack("<I", len(header)) + header + payload


def _decode(blob):
    """(header, payload) of a well-formed entry; ValueError says what is wrong with a bad one."""
    if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + 4:
        raise ValueError("not a numba_tiles cache entry")
    (length,) = struct.unpack_from("<I", blob, len(_MAGIC))
    start = len(_MAGIC) + 4
    try:
        header = json.loads(blob[start : start + length])
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError("unreadable header") from None
    payload = blob[start + length :]
    if len(payload) != header.get("size") or hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise ValueError("payload does not match its checksum (truncated or corrupted)")
    return header, payload


def load(key):
    """The payload stored under ``key`` (a digest from `key`), or None (a miss; a bad entry is removed and counts as one)."""
    if not enabled():
        return None
    path = _path(key)
    try:
        blob = path.read_bytes()
    except OSError:
        count("misses")
        return None
    try:
        header, payload = _decode(blob)
        if header["key"] != key:
            raise ValueError(f"it holds the entry of key {header['key'][:16]}")
    except ValueError as exc:
        count("rejected")
        count("misses")
        _warn_once(("rejected", key), f"removed bad entry {path.name} ({exc}); rebuilding it")
        try:
            path.unlink()
        except OSError:
            pass
        return None
    count("hits")
    try:
        os.utime(path)  # recency for least-recently-used eviction
    except OSError:
        pass
    return payload


def store(key, components, payload):
    """Write an entry atomically; on a directory that cannot be written, warn once and go on."""
    if not enabled():
        return
    folder = directory()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_encode(key, components, payload))
            os.replace(tmp, _path(key))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        _warn_once("unwritable", f"cannot write to {folder} ({exc}); keeping compiled code in memory only")
        return
    count("writes")
    prune(max_bytes())


def cached(components, make):
    """The payload stored under ``components``' key, else ``make()``'s (bytes), then stored.

    Example::

        from numba_tiles import cache

        parts = cache.components("one program", output="ltoir")
        assert cache.cached(parts, lambda: b"its bytes") == b"its bytes"
    """
    digest = key(components)
    payload = load(digest)
    if payload is None:
        payload = make()
        store(digest, components, payload)
    return payload


def entries():
    """The entries on disk, most recently used first: dicts of key, size, last use, components.

    Example::

        for e in tiles.cache.entries():
            print(e["key"][:16], e["bytes"], e["components"]["target"]["arch"])
    """
    found = []
    for path, size, last_used in _files():
        try:
            with path.open("rb") as f:
                head = f.read(len(_MAGIC) + 4)
                (length,) = struct.unpack_from("<I", head, len(_MAGIC))
                header = json.loads(f.read(length))
        except (OSError, ValueError, struct.error):
            continue
        found.append({"key": path.stem, "path": str(path), "bytes": size, "last_used": last_used,
                      "components": header.get("components", {})})
    return sorted(found, key=lambda e: -e["last_used"])


def _files():
    """(path, bytes, last use) of every entry file, cheaply (no header reads)."""
    found = []
    for path in directory().glob(f"*{_SUFFIX}"):
        try:
            stat = path.stat()
        except OSError:
            continue
        found.append((path, stat.st_size, stat.st_mtime))
    return found


def prune(limit):
    """Remove least recently used entries until the cache holds at most ``limit`` bytes.

    Example::

        tiles.cache.prune(100 << 20)   # keep at most 100 MiB
    """
    kept, removed = 0, 0
    for path, size, _ in sorted(_files(), key=lambda f: -f[2]):
        if kept + size <= limit:
            kept += size
            continue
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    count("evictions", removed)
    return removed


def clear():
    """Remove every entry (and stray temporary files); returns how many entries were removed.

    Example::

        tiles.cache.clear()
    """
    removed = 0
    for path in list(directory().glob(f"*{_SUFFIX}")) + list(directory().glob(".*.tmp")):
        try:
            path.unlink()
            removed += path.suffix == _SUFFIX
        except OSError:
            pass
    return removed


def info():
    """Location, size, entry count, settings, this process's counters, and the key's components.

    Example::

        tiles.cache.info()["entries"]
    """
    files = _files()
    return {
        "directory": str(directory()),
        "enabled": enabled(),
        "entries": len(files),
        "bytes": sum(size for _, size, _ in files),
        "max_bytes": max_bytes(),
        "key_components": list(KEY_PARTS),
        "stats": stats(),
    }
