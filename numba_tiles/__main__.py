"""The command line: ``python -m numba_tiles`` (or ``numba-tiles``) cache | precompile | doctor.

Example::

    python -m numba_tiles cache info
    python -m numba_tiles precompile examples.segmented_sum --arch sm_90 --arch sm_80
    python -m numba_tiles doctor
"""

import argparse
import datetime
import os
import sys


def _cache(args):
    from . import _toolchain, cache

    if args.action == "info":
        info = cache.info()
        print(f"directory   {info['directory']}")
        print(f"enabled     {info['enabled']}  (NUMBA_TILES_CACHE=0 turns it off)")
        print(f"entries     {info['entries']}, {info['bytes'] / 2**20:.1f} MiB of {info['max_bytes'] / 2**20:.0f} MiB"
              "  (NUMBA_TILES_CACHE_MAX_BYTES)")
        print("key         digest of: " + ", ".join(info["key_components"]))
        print("now         " + ", ".join(f"{k}={v}" for k, v in _toolchain.versions().items()))
        print("this process " + ", ".join(f"{k}={v:g}" for k, v in info["stats"].items()))
    elif args.action == "list":
        rows = cache.entries()
        print(f"{'key':<18}{'bytes':>10}  {'last used':<20}{'arch':<8}{'nvrtc':<7}{'cccl':<9}numba_tiles")
        for e in rows:
            c = e["components"]
            used = datetime.datetime.fromtimestamp(e["last_used"]).strftime("%Y-%m-%d %H:%M:%S")
            print(f"{e['key'][:16]:<18}{e['bytes']:>10}  {used:<20}{c.get('arch', '?'):<8}{c.get('nvrtc', '?'):<7}"
                  f"{c.get('cccl', '?')!s:<9}{c.get('numba_tiles', '?')}")
        print(f"{len(rows)} entries")
    elif args.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.directory()}")
    elif args.action == "prune":
        print(f"removed {cache.prune(args.max_bytes)} entries; {cache.info()['bytes']} bytes left")


def _precompile(args):
    from . import _compile

    sys.path.insert(0, os.getcwd())
    _compile.precompile(args.module, arch=args.arch or ["sm_90"])


def _doctor(args):
    from . import _toolchain

    rows, problems = _toolchain.report()
    width = max(len(what) for what, _ in rows)
    for what, value in rows:
        print(f"{what:<{width}}  {value}")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="numba-tiles", description="numba_tiles: cache, precompilation, toolchain")
    sub = parser.add_subparsers(dest="command", required=True)
    cache = sub.add_parser("cache", help="inspect or empty the on-disk LTO-IR cache")
    cache.add_argument("action", choices=["info", "list", "clear", "prune"])
    cache.add_argument("--max-bytes", type=int, default=None, help="with prune: the size to prune to")
    pre = sub.add_parser("precompile", help="compile a module's kernels (NUMBA_TILES_PRECOMPILE) into the cache")
    pre.add_argument("module", help="dotted module name, importable from the current directory")
    pre.add_argument("--arch", action="append", help="target, e.g. sm_90 (repeatable; default sm_90)")
    sub.add_parser("doctor", help="report the toolchain, driver, GPU and cache, and flag problems")
    args = parser.parse_args(argv)
    if args.command == "cache" and args.action == "prune" and args.max_bytes is None:
        parser.error("cache prune needs --max-bytes N")
    return {"cache": _cache, "precompile": _precompile, "doctor": _doctor}[args.command](args) or 0


if __name__ == "__main__":
    sys.exit(main())
