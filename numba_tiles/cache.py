"""The on-disk cache of what NVRTC made for the intrinsics (LTO-IR, and the sizes of their shared
storages) and of the kernels nvJitLink linked with them: paid once per machine, not per process.

Where: ``NUMBA_TILES_CACHE_DIR`` if set, else the user cache directory (``~/.cache/numba_tiles``
on Linux). ``NUMBA_TILES_CACHE=0`` turns the disk cache off (the in-process memo stays).
``NUMBA_TILES_CACHE_MAX_BYTES`` caps its size (default 2 GiB); the least recently used
entries go first.

The key (`key`) digests everything that changes an entry's bytes: the C++ text, the target
(arch, checks, lineinfo), NVRTC's options, and the versions of the toolchain and of
every library the program includes (the content of their headers); a linked kernel's, its
modules' bytes, the link options and nvJitLink's version (`numba_tiles._link`). One file per
key, ``<key>.ltoir``: a header (the key, the components it digests, the payload's
length and SHA-256) and the payload. Files are written to a temporary name in the same
directory and renamed into place, so readers see a whole entry or none, and any number of
processes may fill the cache at once; a process about to make an entry that another is making waits for
that one's (a lock file beside it while it is made), so that ranks or test workers starting together
compile each program once. An entry that does not check out (truncated, corrupted,
another key's) is removed, reported once as a warning, and rebuilt; it never reaches a kernel.
If the directory cannot be created or written, compilation goes on with the memory cache alone.

Entries become GPU code in this process, so an entry is used only if its file is trusted: owned by
you or root and writable by no one else. ``NUMBA_TILES_CACHE_TRUST=group`` declares the directory a
team's: then files of the directory's group are trusted too, if the directory is not world-writable,
its group is one of yours and its owner is you, root or a member. A file that is not trusted is a
miss (compiled again, reported once); a directory on the path that anyone may write without the
sticky bit turns the disk cache off (reported once). Directories the cache creates are 0700 (2770 in
group mode: setgid, so entries take the directory's group) and entries are 0600 (0640). On Windows
(no POSIX owners) entries are not checked.

Example::

    import numba_tiles as tiles
    print(tiles.cache.stats())      # {'hits': ..., 'misses': ..., 'nvrtc': ..., ...}
    print(tiles.cache.info()["directory"])
"""

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import stat
import struct
import sys
import tempfile
import warnings
from pathlib import Path

try:
    import fcntl
except ImportError:  # (Windows: entries are made without the lock below)
    fcntl = None  # type: ignore[assignment]

from . import _stats
from ._stats import count

_MAGIC = b"NTLTOIR1"
_SUFFIX = ".ltoir"
_DEFAULT_MAX_BYTES = 2 << 30
_CHECKED = hasattr(os, "getuid")  # POSIX owners and modes; Windows has neither, its entries go unchecked
# an entry is opened as it is, not through a link, and opening a FIFO planted under its name does not block
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)

_warned = set()

KEY_PARTS = ("source", "output", "target", "options", "versions")


def components(source, *, output, target, options, versions):
    """What the key of one compiled program digests (kept in its entry, shown by `entries`).

    ``target``: a `Target`'s fields; ``options``: NVRTC's; ``versions``: the toolchain's and each
    included library's (see `numba_tiles._library`).

    Example::

        from numba_tiles import cache

        parts = cache.components("// C++", output="ltoir", target={"arch": "sm_90"}, options={}, versions={})
        assert list(parts) == list(cache.KEY_PARTS)
    """
    return {
        "source": hashlib.sha256(source.encode()).hexdigest(),
        "output": output,
        "target": target,
        "options": options,
        "versions": versions,
    }


def key(parts):
    """The hex digest naming the entry of ``parts`` (from `components`).

    Example::

        from numba_tiles import cache

        parts = cache.components("// C++", output="ltoir", target={"arch": "sm_90"}, options={}, versions={})
        assert len(cache.key(parts)) == 64
    """
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def stats():
    """Counters of this process: disk ``hits`` and ``misses``, ``nvrtc`` programs compiled and
    ``nvrtc_seconds`` spent, ``pch_used`` programs that took their base header precompiled
    (``pch_wait_seconds`` waiting for it to be made), ``memo`` reuses in memory, ``writes``,
    ``evictions``, ``rejected`` (bad entries removed), ``libmathdx`` pipelines generated
    (`Matmul.tile` on Hopper) and ``libmathdx_seconds`` spent on them, and ``links`` that
    nvJitLink ran (a linked kernel from the cache counts as a hit instead) and ``link_seconds``.

    Example::

        import numba_tiles as tiles

        before = tiles.cache.stats()["nvrtc"]
    """
    return _stats.snapshot()


def enabled():
    """Whether the disk cache is on (``NUMBA_TILES_CACHE`` is not ``0``).

    Example::

        import numba_tiles as tiles

        print(tiles.cache.enabled())   # True
    """
    return os.environ.get("NUMBA_TILES_CACHE", "1") != "0"


def directory():
    """The cache directory in use (it may not exist yet).

    Example::

        import numba_tiles as tiles

        print(tiles.cache.directory())   # /home/me/.cache/numba_tiles
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
    """The size the cache is pruned to after each write: ``NUMBA_TILES_CACHE_MAX_BYTES``, by default 2 GiB.

    Example::

        import numba_tiles as tiles

        print(tiles.cache.max_bytes() >> 20, "MiB")   # 2048 MiB
    """
    return int(os.environ.get("NUMBA_TILES_CACHE_MAX_BYTES", _DEFAULT_MAX_BYTES))


def _warn_once(topic, message):
    if topic not in _warned:
        _warned.add(topic)
        warnings.warn(f"numba_tiles cache: {message}", RuntimeWarning, stacklevel=3)


def _trust_mode():
    """'user' (the default) or 'group' (``NUMBA_TILES_CACHE_TRUST``); any other value warns and means 'user'."""
    mode = os.environ.get("NUMBA_TILES_CACHE_TRUST", "user").strip().lower() or "user"
    if mode not in ("user", "group"):
        _warn_once(
            ("trust mode", mode),
            f"NUMBA_TILES_CACHE_TRUST={mode!r} is neither 'user' nor 'group'; "
            "trusting only your own and root's entries",
        )
        return "user"
    return mode


@dataclasses.dataclass(frozen=True)
class _Trust:
    """What one cache directory may be used for."""

    usable: bool  # False: anyone may rewrite it, so the disk cache is off
    group: int | None  # the gid whose entries are trusted besides yours and root's (group mode)
    why: str  # which entries are used, or why none are
    problem: str | None  # a warning for the user, with its fix


@functools.cache  # (a name look-up may ask a directory service)
def _user(uid):
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


@functools.cache
def _group_name(gid):
    import grp

    try:
        return f"{grp.getgrgid(gid).gr_name} (gid {gid})"
    except KeyError:
        return f"gid {gid}"


@functools.cache
def _member(uid, gid):
    """Whether user ``uid`` belongs to group ``gid`` (its primary group or a listed member)."""
    import grp
    import pwd

    try:
        user = pwd.getpwuid(uid)
        return user.pw_gid == gid or user.pw_name in grp.getgrgid(gid).gr_mem
    except KeyError:
        return False


def _check(folder):
    """The `_Trust` of ``folder`` as it is now (it may not exist yet)."""
    if not _CHECKED:
        return _Trust(True, None, "entries are not checked on this platform (no POSIX owners)", None)
    real = Path(os.path.realpath(folder))
    for path in (real, *real.parents):
        # Anyone may replace what a world-writable directory holds unless its sticky bit is set:
        # the cache directory's entries, or an ancestor's whole subtree.
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue  # not made yet
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            why = f"{path} is world-writable without the sticky bit, so anyone may replace what is in it"
            return _Trust(
                False,
                None,
                why + "; the disk cache is off",
                f"{why}: not using the disk cache {folder}. Fix: chmod +t {path} (or o-w), or point "
                "NUMBA_TILES_CACHE_DIR elsewhere",
            )
    yours = f"entries owned by {_user(os.geteuid())}" + (" or root" if os.geteuid() else "")
    if _trust_mode() == "user":
        return _Trust(True, None, f"{yours} are used", None)
    try:
        st = os.stat(real)
    except OSError:
        return _Trust(True, None, f"{yours} are used (the directory is not made yet)", None)
    group = _group_name(st.st_gid)
    # Who can put a file of the directory's group in it: whoever may write the directory (setgid
    # gives new files its group). So: not everyone, and its owner and group are people you trust.
    if st.st_mode & stat.S_IWOTH:
        problem, fix = "it is world-writable", f"chmod o-w {real}"
    elif st.st_gid != os.getegid() and st.st_gid not in os.getgroups():
        problem, fix = f"its group {group} is not one of yours", f"chgrp TEAM {real} (a group of yours)"
    elif st.st_uid not in (os.geteuid(), 0) and not _member(st.st_uid, st.st_gid):
        problem, fix = f"its owner {_user(st.st_uid)} is not in its group {group}", f"chown MEMBER {real}"
    else:
        return _Trust(True, st.st_gid, f"{yours}, or by its group {group}, are used", None)
    return _Trust(
        True,
        None,
        f"{yours} are used, not its group's: NUMBA_TILES_CACHE_TRUST=group, but {problem}",
        f"NUMBA_TILES_CACHE_TRUST=group, but {real}: {problem}; using only {yours}. Fix: {fix}",
    )


def _verdict(folder):
    """`_check`, warning once per directory about a problem."""
    trust = _check(folder)
    if trust.problem:
        _warn_once(("trust", str(folder)), trust.problem)
    return trust


def _distrust(st, trust):
    """Why the entry file of stat ``st`` is not to be linked into a kernel, or None to use it."""
    if not _CHECKED:
        return None
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    mode = f"mode {stat.S_IMODE(st.st_mode):o}"
    if st.st_mode & stat.S_IWOTH:
        return f"anyone may write it ({mode})"
    teams = trust.group is not None and st.st_gid == trust.group
    if st.st_mode & stat.S_IWGRP and not teams:
        return f"its group {_group_name(st.st_gid)} may write it ({mode})"
    if st.st_uid not in (os.geteuid(), 0) and not teams:
        return f"it belongs to {_user(st.st_uid)}, not to you or root"
    return None


def _make(folder):
    """Create ``folder`` and its missing parents: 0700, or 2770 in group mode (setgid: entries take its
    group), whatever the umask. A directory that another process made first keeps its mode."""
    missing = []
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    mode = 0o2770 if _trust_mode() == "group" else 0o700
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        os.chmod(path, mode)


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
    """The payload stored under ``key`` (a digest from `key`), or None (a miss; a bad entry is removed and
    counts as one, and so does an entry that is not trusted, which is left alone).

    Example::

        from numba_tiles import cache

        assert cache.load("0" * 64) is None   # no such entry
    """
    if not enabled():
        return None
    folder = directory()
    trust = _verdict(folder)
    path = _path(key)
    if not trust.usable:
        count("misses")
        return None
    try:
        with open(os.open(path, _OPEN_FLAGS), "rb") as f:
            why = _distrust(os.fstat(f.fileno()), trust)  # the file read, whatever the name points to later
            blob = None if why else f.read()
    except OSError:
        count("misses")
        return None
    if why:
        count("misses")
        if trust.group is not None:
            fix = " Remove entries that are not the team's, or give them the directory's group."
        elif _trust_mode() == "user":
            fix = (
                f" To share this cache with a team, make the directory group-owned (chgrp TEAM {folder}; "
                f"chmod 2770 {folder}) and set NUMBA_TILES_CACHE_TRUST=group."
            )
        else:
            fix = ""  # (the directory's own warning says what to fix)
        _warn_once(
            ("untrusted", str(folder)),
            f"not using entries of {folder} that are not trusted, such as {path.name}: {why}. They are "
            f"compiled again: cache entries become GPU code in this process, so only {trust.why}.{fix}",
        )
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
    """Write an entry atomically; on a directory that cannot be written, warn once and go on.

    Example::

        from numba_tiles import cache

        parts = cache.components("// C++", output="ltoir", target={"arch": "sm_90"}, options={}, versions={})
        cache.store(cache.key(parts), parts, b"its bytes")
        assert cache.load(cache.key(parts)) == b"its bytes" or not cache.enabled()
    """
    if not enabled():
        return
    folder = directory()
    try:
        if not _verdict(folder).usable:
            return
        _make(folder)
        trust = _verdict(folder)  # (group mode: the group of the directory just made)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key[:16]}.", suffix=".tmp")  # 0600
        try:
            with os.fdopen(fd, "wb") as f:
                if trust.group is not None:  # readable by the team, and of its group even without setgid
                    if os.fstat(fd).st_gid != trust.group:
                        os.fchown(fd, -1, trust.group)
                    os.fchmod(fd, 0o640)
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

        parts = cache.components("// C++", output="ltoir", target={"arch": "sm_90"}, options={}, versions={})
        assert cache.cached(parts, lambda: b"its bytes") == b"its bytes"   # made, then stored
        assert cache.cached(parts, lambda: b"not made again") == b"its bytes" or not cache.enabled()
    """
    digest = key(components)
    payload = load(digest)
    if payload is None:
        with _making(digest):
            payload = load(digest)  # (another process may have made it while this one waited)
            if payload is None:
                payload = make()
                store(digest, components, payload)
    return payload


@contextlib.contextmanager
def _making(digest):
    """Hold the lock of ``digest``'s entry while it is made: another process that asks for it meanwhile waits,
    then reads the entry instead of making it too. Without a usable directory (or fcntl) nothing is held."""
    folder = directory()
    fd = None
    with contextlib.suppress(OSError):
        if fcntl is not None and enabled() and _verdict(folder).usable:
            _make(folder)
            flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            fd = os.open(folder / f".{digest}.lock", flags, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        if fd is not None:  # (the file goes first: a process that opened it already re-reads the entry made)
            with contextlib.suppress(OSError):
                os.unlink(folder / f".{digest}.lock")
            os.close(fd)


def entries():
    """The entries on disk, most recently used first: dicts of key, size, last use, components.

    Example::

        import numba_tiles as tiles

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
        found.append(
            {
                "key": path.stem,
                "path": str(path),
                "bytes": size,
                "last_used": last_used,
                "components": header.get("components", {}),
            }
        )
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

        import numba_tiles as tiles

        tiles.cache.prune(100 << 20)   # keep at most 100 MiB
    """
    kept, removed = 0, 0
    for path, size, _ in sorted(_files(), key=lambda f: -f[2]):
        if kept + size <= limit:
            kept += size
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    count("evictions", removed)
    return removed


def clear():
    """Remove every entry (and stray temporary and lock files); returns how many entries were removed.

    Example::

        import numba_tiles as tiles

        tiles.cache.clear()
    """
    removed = 0
    for path in [*directory().glob(f"*{_SUFFIX}"), *directory().glob(".*.tmp"), *directory().glob(".*.lock")]:
        with contextlib.suppress(OSError):
            path.unlink()
            removed += path.suffix == _SUFFIX
    return removed


def info():
    """Location, size, entry count, settings, trust, this process's counters, and the key's components.

    ``trust`` is the mode ('user' or 'group'; None on Windows, where entries are not checked),
    ``trusted`` whether the directory is used at all, and ``trust_detail`` which entries are used, or why
    none are.

    Example::

        import numba_tiles as tiles

        print(tiles.cache.info()["entries"])
        print(tiles.cache.info()["trusted"])   # False for a world-writable directory without the sticky bit
    """
    files = _files()
    trust = _check(directory())
    return {
        "directory": str(directory()),
        "enabled": enabled(),
        "trust": _trust_mode() if _CHECKED else None,
        "trusted": trust.usable,
        "trust_detail": trust.why,
        "entries": len(files),
        "bytes": sum(size for _, size, _ in files),
        "max_bytes": max_bytes(),
        "key_components": list(KEY_PARTS),
        "stats": stats(),
    }
