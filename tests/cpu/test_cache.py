"""The disk cache: cross-process hits, concurrency, bad entries, unwritable directories, eviction."""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import numba_tiles as tiles
from numba_tiles import cache

# A fresh process compiles one kernel (block_dim given on the command line) and reports its counters.
CHILD = r"""
import json, sys, warnings
warnings.simplefilter("always")
from numba import cuda
import numba_tiles as tiles
BLOCK = int(sys.argv[1])

def kernel(x, out):
    s = tiles.block_reduce(x[cuda.grid(1)], "max", block_dim=BLOCK)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = s

with warnings.catch_warnings(record=True) as caught:
    cubin = tiles.compile(kernel, "void(float32[:], float32[:])", arch="sm_80")
print(json.dumps({"stats": tiles.cache.stats(), "cubin": len(cubin), "warnings": [str(w.message) for w in caught]}))
"""


def run_child(cache_dir, block=96, **env):
    environment = {**os.environ, "NUMBA_TILES_CACHE_DIR": str(cache_dir), **env}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(block)], env=environment, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def entry_files(cache_dir, kind="program"):
    """The entries of NVRTC programs (``kind="program"``) or of linked kernels (``"link"``)."""
    found = []
    for path in sorted(cache_dir.glob("*.ltoir")):
        components = cache._decode(path.read_bytes())[0]["components"]
        if ("modules" in components) == (kind == "link"):
            found.append(path)
    return found


def test_cold_then_warm_process(tmp_path):
    cold = run_child(tmp_path)
    assert cold["stats"]["nvrtc"] == 1 and cold["stats"]["links"] == 1 and cold["stats"]["hits"] == 0
    assert cold["stats"]["writes"] == 2  # the program's LTO-IR and the linked kernel
    assert len(entry_files(tmp_path)) == len(entry_files(tmp_path, "link")) == 1
    warm = run_child(tmp_path)
    assert warm["stats"]["nvrtc"] == 0 and warm["stats"]["links"] == 0 and warm["stats"]["hits"] == 2
    assert warm["cubin"] == cold["cubin"]


def test_disabled_cache_writes_nothing(tmp_path):
    first = run_child(tmp_path, NUMBA_TILES_CACHE="0")
    second = run_child(tmp_path, NUMBA_TILES_CACHE="0")
    assert first["stats"]["nvrtc"] == second["stats"]["nvrtc"] == 1
    assert not entry_files(tmp_path)


def test_eight_processes_on_one_cold_key(tmp_path, monkeypatch):
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: run_child(tmp_path, block=160), range(8)))
    assert all(r["cubin"] == results[0]["cubin"] for r in results)
    # one process compiled and linked; the others waited for its entries and read them
    assert sum(r["stats"]["nvrtc"] for r in results) == sum(r["stats"]["links"] for r in results) == 1, results
    files = entry_files(tmp_path) + entry_files(tmp_path, "link")
    assert len(files) == 2 and not list(tmp_path.glob(".*.tmp")) and not list(tmp_path.glob(".*.lock"))
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    assert all(cache.load(f.stem) is not None for f in files)  # each entry left is whole and checks out


@pytest.mark.parametrize("damage", ["truncate", "garbage", "other key"])
def test_bad_entry_is_removed_rebuilt_and_reported(tmp_path, monkeypatch, damage):
    run_child(tmp_path, block=224)
    (path,) = entry_files(tmp_path)
    blob = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(blob[: len(blob) // 2])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(blob)))
    else:  # a whole, valid entry of another key under this name
        run_child(tmp_path, block=192)
        other = next(p for p in entry_files(tmp_path) if p != path)
        path.write_bytes(other.read_bytes())
    again = run_child(tmp_path, block=224)
    assert again["stats"]["rejected"] == 1 and again["stats"]["nvrtc"] == 1
    assert any("removed bad entry" in w for w in again["warnings"])
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    assert cache.load(path.stem) is not None  # rebuilt in place


def test_unwritable_directory_still_compiles(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = run_child(blocker / "cache")
    assert result["stats"]["nvrtc"] == 1 and result["cubin"] > 0
    assert [w for w in result["warnings"] if "cannot write to" in w and "memory only" in w]


def test_size_cap_evicts_least_recently_used(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    payload = os.urandom(1000)
    for i, key in enumerate(["a" * 64, "b" * 64, "c" * 64]):
        cache.store(key, {"arch": "sm_90", "n": i}, payload)
        os.utime(tmp_path / f"{key}.ltoir", (time.time() - 100 + i, time.time() - 100 + i))
    assert cache.load("a" * 64) == payload  # "a" is now the most recently used
    size = (tmp_path / f"{'a' * 64}.ltoir").stat().st_size
    monkeypatch.setenv("NUMBA_TILES_CACHE_MAX_BYTES", str(2 * size))
    cache.store("d" * 64, {"arch": "sm_90"}, payload)
    left = {p.stem[0] for p in entry_files(tmp_path)}
    assert left == {"a", "d"}


def test_info_and_entries_name_the_key_components(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    run_child(tmp_path)
    info = tiles.cache.info()
    assert info["directory"] == str(tmp_path) and info["entries"] == 2 and info["bytes"] > 0
    assert info["key_components"] == ["source", "output", "target", "options", "versions"]
    (entry,) = [e for e in tiles.cache.entries() if "source" in e["components"]]
    (linked,) = [e["components"] for e in tiles.cache.entries() if "modules" in e["components"]]
    assert len(linked["modules"]) == 2 and linked["output"] == "cubin"  # Numba's LTO-IR and the program's
    assert "'sm_80'" in linked["options"]["arch"] and set(linked["versions"]) == {"nvjitlink", "numba_tiles"}
    parts = entry["components"]
    assert parts["target"] == {"arch": "sm_80", "checks": False, "lineinfo": False}
    assert {"nvrtc", "numba_tiles"} <= set(parts["versions"])  # the toolchain's, and the library's:
    assert {"cccl", "cuda_headers", "lto_libs"} == set(parts["versions"]["numba_tiles.cub"])
    assert tiles.cache.clear() == 2 and not list(tmp_path.glob("*.ltoir"))


PCH_CHILD = r"""
import json, sys
from cuda.bindings import driver
if sys.argv[1] == "gpu":  # as on a machine with an sm_90 GPU (device 0's compute capability is all it asks)
    driver.cuInit = lambda flags: (driver.CUresult.CUDA_SUCCESS,)
    major = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    driver.cuDeviceGetAttribute = lambda a, d: (driver.CUresult.CUDA_SUCCESS, 9 if a == major else 0)
from numba import cuda
import numba_tiles as tiles
from numba_tiles import _pch, _programs

def kernel_for(block, op):
    def kernel(x, out):
        out[0] = op(x[cuda.grid(1)], block_dim=block)
    return kernel

if sys.argv[1] == "gpu":
    _pch.wait_for_precompiled_headers()  # (a user's first kernel comes a second after the import)
used, codes = [], []
for block, op in ((32, tiles.block_sum), (64, tiles.block_scan), (96, tiles.block_sum)):
    with _programs.recording() as lowered:
        codes.append(tiles.compile(kernel_for(block, op), "void(int32[:], int32[:])", arch="sm_90", output="ltoir")[1])
    used.append(tiles.cache.stats()["pch_used"])
    _pch.wait_for_precompiled_headers()
    if block == 32:
        (first, target), = lowered
again = _programs.build([first], target)  # the first program once more, now with the PCH
used.append(tiles.cache.stats()["pch_used"])
print(json.dumps({"used": used, "same": codes[0] == again}))
"""


@pytest.mark.parametrize("machine,prepare", [("cpu", "1"), ("gpu", "1"), ("gpu", "0")])
def test_every_program_after_the_first_takes_the_precompiled_base(tmp_path, machine, prepare):
    """The CUB base header is precompiled once per process, behind the first program (on a machine
    with a GPU, from the import on, for its arch) and every later program uses it, whatever its other
    headers: a scan after a reduction too. The LTO-IR is the same with it as without.
    NUMBA_TILES_PREPARE=0 leaves the import alone (no driver, no PCH) even with a GPU."""
    env = {**os.environ, "NUMBA_TILES_CACHE": "0", "NUMBA_TILES_PREPARE": prepare}
    out = subprocess.run(
        [sys.executable, "-c", PCH_CHILD, machine], env=env, capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    eager = machine == "gpu" and prepare == "1"
    assert result == {"used": [1, 2, 3, 4] if eager else [0, 1, 2, 3], "same": True}


def test_cache_true_kernels_are_invalidated_by_toolchain_libraries_and_options(monkeypatch, tmp_path):
    """The stamp in a cache=True kernel's numba-cuda index key moves with what its cubin depends on."""
    from numba_tiles import _programs, _toolchain, extending

    stamp = _programs.kernel_cache_stamp()
    assert _programs.kernel_cache_stamp() == stamp
    (tmp_path / "new.cuh").write_text("#pragma once\n")
    extending.library("another_library", tmp_path, blame="test")  # a library declared: its headers count
    with_library = _programs.kernel_cache_stamp()
    assert with_library != stamp
    monkeypatch.setattr(_toolchain, "versions", lambda: {"numba_tiles": "0.0.0", "nvrtc": "12.9"})
    _programs._libraries_stamp.cache_clear()
    assert _programs.kernel_cache_stamp() not in (stamp, with_library)
    monkeypatch.undo()
    _programs._libraries_stamp.cache_clear()
    assert _programs.kernel_cache_stamp() == with_library
    monkeypatch.setenv("NUMBA_TILES_DEBUG", "1")
    assert _programs.kernel_cache_stamp() != with_library


# Trust: cache entries become GPU code in the process that loads them, so whose files they are matters.
# Giving files to another user takes root; one test also sees the rules as a user other than root (4242).
AS_ROOT = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving files to another user (os.chown) needs root"
)
STRANGER = 12345  # a uid that is neither ours nor root


def give(paths, uid=STRANGER, gid=-1):
    for path in paths:
        os.chown(path, uid, gid)


@AS_ROOT
def test_another_users_entries_are_compiled_again_and_never_linked(tmp_path):
    cold = run_child(tmp_path, block=64)
    (program,) = entry_files(tmp_path)
    header, _ = cache._decode(program.read_bytes())
    # A whole, valid entry under the right key, with someone else's bytes: linked, it would break the link.
    program.write_bytes(cache._encode(header["key"], header["components"], b"planted, not LTO-IR"))
    give(entry_files(tmp_path) + entry_files(tmp_path, "link"))
    again = run_child(tmp_path, block=64)
    assert again["stats"]["hits"] == 0 and again["stats"]["nvrtc"] == 1 and again["stats"]["links"] == 1
    assert again["cubin"] == cold["cubin"]
    (warning,) = [w for w in again["warnings"] if "not trusted" in w]
    assert str(tmp_path) in warning and f"uid {STRANGER}" in warning and "NUMBA_TILES_CACHE_TRUST=group" in warning
    assert os.stat(program).st_uid == os.geteuid()  # replaced by this user's own entry


@AS_ROOT
def test_own_and_roots_entries_are_used_others_not(tmp_path, monkeypatch):
    """As user 4242 sees them: its own and root's entries are used; another user's, or its own that its
    group or anyone may write, are misses, reported once for the directory."""
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    keys = {}
    for name, uid, mode in [
        ("own", 4242, 0o600),
        ("root's", 0, 0o644),
        ("another's", STRANGER, 0o600),
        ("group-writable", 4242, 0o620),
        ("world-writable", 4242, 0o602),
    ]:
        keys[name] = cache.key({"entry": name})
        cache.store(keys[name], {"entry": name}, name.encode())
        give([tmp_path / f"{keys[name]}.ltoir"], uid)
        os.chmod(tmp_path / f"{keys[name]}.ltoir", mode)
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    with pytest.warns(RuntimeWarning, match="not trusted") as caught:
        loaded = {name: cache.load(key) for name, key in keys.items()}
    assert len(caught) == 1  # once per directory, not once per entry
    assert loaded == {
        "own": b"own",
        "root's": b"root's",
        "another's": None,
        "group-writable": None,
        "world-writable": None,
    }


@pytest.mark.parametrize("case", ["world-writable", "world-writable parent", "sticky"])
def test_a_directory_anyone_may_rewrite_is_not_used(tmp_path, monkeypatch, case):
    """A world-writable directory on the cache's path lets anyone replace its entries (or the whole cache
    directory) unless its sticky bit is set: the disk cache is then off, with a warning and `cache info`
    saying why. With the sticky bit, others cannot touch this user's entries: it is used."""
    if not hasattr(os, "geteuid"):
        pytest.skip("directories are not checked without POSIX owners")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777 if case == "sticky" else 0o777)
    cache_dir = shared / "cache" if case == "world-writable parent" else shared
    first = run_child(cache_dir, block=32)
    second = run_child(cache_dir, block=32)
    info = subprocess.run(
        [sys.executable, "-m", "numba_tiles", "cache", "info"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NUMBA_TILES_CACHE_DIR": str(cache_dir)},
    ).stdout
    if case == "sticky":
        assert second["stats"]["hits"] == 2 and second["stats"]["nvrtc"] == 0
        assert "trusted     yes" in info
        return
    assert first["stats"]["nvrtc"] == second["stats"]["nvrtc"] == 1 and second["stats"]["hits"] == 0
    assert not list(shared.rglob("*.ltoir")) and not (shared / "cache").exists()
    (warning,) = [w for w in first["warnings"] if "sticky bit" in w]
    assert f"{shared} is world-writable" in warning and f"chmod +t {shared}" in warning
    assert f"trusted     no: {shared} is world-writable without the sticky bit" in info
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(cache_dir))
    assert tiles.cache.info()["trusted"] is False


@AS_ROOT
def test_group_mode_uses_the_teams_entries(tmp_path):
    """A team's cache: a directory of a group of ours, setgid, NUMBA_TILES_CACHE_TRUST=group. Entries
    another member wrote (another uid, the directory's group) are used in group mode, not without it."""
    team = tmp_path / "team"
    team.mkdir()
    os.chown(team, -1, os.getegid())
    team.chmod(0o2770)
    cold = run_child(team, block=128, NUMBA_TILES_CACHE_TRUST="group")
    entries = entry_files(team) + entry_files(team, "link")
    assert cold["stats"]["writes"] == 2 and not cold["warnings"]
    assert {(oct(p.stat().st_mode & 0o777), p.stat().st_gid) for p in entries} == {("0o640", os.getegid())}
    give(entries, STRANGER)
    warm = run_child(team, block=128, NUMBA_TILES_CACHE_TRUST="group")
    assert warm["stats"]["hits"] == 2 and warm["stats"]["nvrtc"] == 0 and not warm["warnings"]
    alone = run_child(team, block=128)
    assert alone["stats"]["hits"] == 0 and alone["stats"]["nvrtc"] == 1
    assert [w for w in alone["warnings"] if "not trusted" in w and f"uid {STRANGER}" in w]


@AS_ROOT
@pytest.mark.parametrize("flaw", ["not our group", "world-writable", "owner outside the group"])
def test_group_mode_needs_a_directory_of_our_group(tmp_path, monkeypatch, flaw):
    """Group mode trusts the directory's group only if whoever may put files of that group in it is
    trusted: its group is one of ours, it is not world-writable, its owner is us, root or a member.
    Else only our own entries are used, with a warning saying why."""
    foreign = 54321  # a gid that is not ours
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NUMBA_TILES_CACHE_TRUST", "group")
    key = cache.key({"entry": flaw})
    cache.store(key, {"entry": flaw}, b"a member's")
    entry = tmp_path / f"{key}.ltoir"
    give([entry], STRANGER, os.getegid())
    tmp_path.chmod(0o2770)
    assert cache.load(key) == b"a member's"  # (the directory is fine so far)
    if flaw == "not our group":
        give([entry, tmp_path], -1, foreign)
    elif flaw == "world-writable":
        tmp_path.chmod(0o3777)
    else:
        give([tmp_path], STRANGER)  # (not a member of our group: no such user)
    with pytest.warns(RuntimeWarning) as caught:
        assert cache.load(key) is None
    directory_warning, entry_warning = sorted((str(w.message) for w in caught), key=lambda m: "not trusted" in m)
    assert f"NUMBA_TILES_CACHE_TRUST=group, but {tmp_path}" in directory_warning and "Fix: " in directory_warning
    assert "not its group's" in entry_warning
    assert "not its group's" in tiles.cache.info()["trust_detail"]


@pytest.mark.parametrize("mode", ["user", "group"])
def test_new_directories_and_entries_are_private(tmp_path, monkeypatch, mode):
    """Made by the cache, whatever the umask: directories 0700 and entries 0600; in group mode 2770
    (setgid: entries take the directory's group) and 0640 (the team reads; entries are replaced, never
    written in place)."""
    if not hasattr(os, "geteuid"):
        pytest.skip("modes are not set without POSIX owners")
    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path / "a" / "b"))
    monkeypatch.setenv("NUMBA_TILES_CACHE_TRUST", mode)
    old = os.umask(0)
    try:
        cache.store("e" * 64, {"arch": "sm_90"}, b"bytes")
    finally:
        os.umask(old)
    folder, entry = 0o2770 if mode == "group" else 0o700, 0o640 if mode == "group" else 0o600
    for path in (tmp_path / "a", tmp_path / "a" / "b"):
        assert oct(path.stat().st_mode & 0o7777) == oct(folder)
    assert oct((tmp_path / "a" / "b" / f"{'e' * 64}.ltoir").stat().st_mode & 0o7777) == oct(entry)
    assert cache.load("e" * 64) == b"bytes"
