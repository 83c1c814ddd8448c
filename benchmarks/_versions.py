"""The versions a benchmark's JSON records: installed distributions, and numba_tiles' own; the device's name
and short label; the commit measured; and the record written.

    from _versions import add_output_arguments, commit, device_name, measured_commit, versions, write_result
    versions("numba", "torch")   # {"numba": "0.68.0", "numba-tiles": "0.1.0"}: absent ones are left out
    device_name(cuda.get_current_device())   # "NVIDIA H200"
    device_label("NVIDIA H100 80GB HBM3")   # "h100"; a CPU-only machine: "cpu2" (its cores)
    commit()   # "5e2b222", or "5e2b222-dirty" when the tree measured has uncommitted changes
    add_output_arguments(parser)   # --out DIR, --draft
    measured = measured_commit(args)   # before measuring: refuses a tree with uncommitted changes
    write_result("matmul", {"device": ..., "date": ..., "commit": measured, "rows": rows, ...}, args)

A benchmark's current result on a device is one file, benchmarks/results/BENCHMARK-DEVICE.json. A new run
replaces the entries (rows, cases, shapes) it measured and keeps those it did not, each entry with the date,
commit and device of its own run; so a run of a few cases updates those. A result of a tree with uncommitted
changes is a draft: it is written only with ``--draft``, and only to another folder (``--out``).
"""

import json
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
# The collections of a record whose entries a later run of a few of them replaces one by one (a list of rows
# keyed by "case", or a dict keyed by case or shape); a record's other fields are its latest run's.
ENTRIES = ("rows", "results", "shapes")


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


def cpu_device():
    """A CPU-only machine as a record's device: "CPU only: <model>, <N> cores"."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"CPU only: {model}, {os.cpu_count()} cores"


def device_label(device):
    """The short name of a record's device in its file's name: a GPU's model in lower case ("NVIDIA H200":
    "h200", "NVIDIA H100 80GB HBM3": "h100", "NVIDIA GeForce RTX 4090": "rtx4090"; its memory and form factor
    left out), a CPU-only machine's cores ("CPU only: AMD EPYC, 2 cores": "cpu2"), since a compile's time
    depends on how many programs run side by side more than on the model."""
    if device.startswith("CPU only"):
        cores = re.search(r"(\d+) cores", device)
        return f"cpu{cores[1]}" if cores else "cpu"
    words = re.sub(r"^(NVIDIA|Tesla|GeForce|Quadro)\s+", "", device.strip(), count=2)
    words = re.sub(r"^(Tesla|GeForce|Quadro)\s+", "", words)
    kept = []
    for word in re.split(r"[\s_-]+", words):
        if re.fullmatch(r"\d+GB|PCIe|SXM\d*|HBM\d*e?|NVL\d*", word, re.I):
            break
        kept.append(word)
    return re.sub(r"[^a-z0-9]", "", "".join(kept).lower()) or "gpu"


def result_path(benchmark, device, out=RESULTS):
    return Path(out) / f"{benchmark}-{device_label(device)}.json"


def commit(tree=None):
    """The commit of the checkout measured (``tree``, default this one), short, with "-dirty" when its files
    differ from it: a benchmark run from a working tree says so. ``NUMBA_TILES_COMMIT`` names it instead, for
    a copy of the tree without its git history (as on a GPU machine the tree is sent to)."""
    if os.environ.get("NUMBA_TILES_COMMIT"):
        return os.environ["NUMBA_TILES_COMMIT"]
    tree = tree or str(Path(__file__).resolve().parents[1])
    return subprocess.run(
        ["git", "-C", tree, "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()


def add_output_arguments(parser):
    """``--out`` and ``--draft``, which every benchmark that writes a result takes."""
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS,
        help="the folder the result goes to (default benchmarks/results/, whose files the docs' "
        "tables show: one a benchmark and device, BENCHMARK-DEVICE.json)",
    )
    parser.add_argument(
        "--draft",
        action="store_true",
        help="measure a tree with uncommitted changes; the result is marked a draft and needs an "
        "--out other than benchmarks/results/",
    )


def draft_refused(measured, out, draft):
    """Why a result of commit ``measured`` may not be written to ``out`` (None when it may): the docs' tables
    show only results of committed trees, so a draft goes to another folder."""
    into_results = Path(out).resolve() == RESULTS.resolve()
    if draft and into_results:
        return "a draft goes to another folder: give --out a scratch folder, not benchmarks/results/"
    if not draft and (not measured or measured.endswith("-dirty")):
        return (
            f"the tree measured has uncommitted changes (commit {measured or 'unknown'}): commit them and run "
            "again, or pass --draft with --out a scratch folder"
        )
    return None


def measured_commit(args, tree=None):
    """The commit a run measures (``commit(tree)``), checked before the run: exits where its result could not
    be written (`draft_refused`), so that no GPU time is spent on a result that would be refused."""
    measured = commit(tree)
    why = draft_refused(measured, args.out, args.draft)
    if why:
        raise SystemExit(why)
    return measured


def _merge(old, new, stamp):
    """``new``'s entries, each stamped with its run's date, commit and device, after ``old``'s of the keys that
    ``new`` does not measure (in ``old``'s order); both a list of rows or a dict of entries."""
    if isinstance(new, list):
        fresh = [{**row, **stamp} for row in new]
        if not all("case" in row for row in fresh + old):  # (rows that are one measurement together)
            return fresh
        measured = {row["case"] for row in fresh}
        return [row for row in old if row["case"] not in measured] + fresh
    fresh = {key: {**value, **stamp} for key, value in new.items()}
    return {**{k: v for k, v in old.items() if k not in fresh}, **fresh}


def write_result(benchmark, record, args):
    """Write ``record`` (its ``device``, ``date`` and ``commit``, its entries and the run's other fields) as
    ``args.out``/BENCHMARK-DEVICE.json, refusing a draft in benchmarks/results/ (`draft_refused`); returns the
    path. Entries of the file there already that this run did not measure are kept, each with its own run's
    date, commit and device; the top-level fields are this run's, and ``entries_from`` says when not every
    entry is this run's."""
    why = draft_refused(record.get("commit"), args.out, args.draft)
    if why:
        raise SystemExit(why)
    path = result_path(benchmark, record["device"], args.out)
    record = {"benchmark": benchmark, **record, "python": platform.python_version()}
    if args.draft:
        record["draft"] = True
    stamp = {k: record[k] for k in ("date", "commit", "device")}
    old = json.loads(path.read_text()) if path.exists() else {}
    for name in ENTRIES:
        if name in record:
            previous = old.get(name, [] if isinstance(record[name], list) else {})
            before = {k: old[k] for k in ("date", "commit", "device") if k in old}
            previous = (
                [{**before, **row} for row in previous]
                if isinstance(previous, list)
                else {k: {**before, **v} for k, v in previous.items()}
            )
            record[name] = _merge(previous, record[name], stamp)
            runs = {
                (e["date"], e["commit"])
                for e in (record[name] if isinstance(record[name], list) else record[name].values())
            }
            if len(runs) > 1:
                record["entries_from"] = (
                    f"{len(runs)} runs: each entry's date, commit and device are its own "
                    "run's; the top-level fields are the latest run's"
                )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return path
