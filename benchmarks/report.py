"""The performance tables of README.md and docs/performance.md, the compile-time figures of the matmul and
caching guides and of numba_tiles' own notices (numba_tiles/_compile_times.py), generated from
benchmarks/results/*.json.

    python benchmarks/report.py           # rewrite the generated blocks and file in place
    python benchmarks/report.py --check   # exit 1, naming the files, where one differs from the JSONs

A generated block lies between ``<!-- perf:begin NAME -->`` and ``<!-- perf:end -->``; everything between
the two is this script's, so edit the JSONs (by running a benchmark) or this script, never the block (nor
numba_tiles/_compile_times.py, which is this script's whole). tests/cpu/test_docs.py fails when a block or
that file differs from what the JSONs give now.

benchmarks/results/ holds one file a benchmark and device, BENCHMARK-DEVICE.json (benchmarks/_versions.py
writes it): the GPU tables show the H200's files, the compile-time figures the 2-core CPU machine's. Each
entry of a file (row, case, shape) has the date, commit and device of the run that measured it: its own
fields where the file holds several runs, else the file's. Every table names the files, devices, dates and
commits it drew on. A file that is a draft or has no commit, or a commit with uncommitted changes, is
refused: nothing here shows a result no commit holds.
"""

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TARGETS = [
    ROOT / "README.md",
    ROOT / "docs" / "performance.md",
    ROOT / "docs" / "guide" / "matmul.md",
    ROOT / "docs" / "guide" / "caching.md",
]
COMPILE_TIMES = ROOT / "numba_tiles" / "_compile_times.py"  # (generated whole: `compile_times_module`)
GPU, CPU = "h200", "cpu2"  # the devices whose files the tables show (a file's name ends in its device's label)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _versions import ENTRIES, device_label  # noqa: E402

BEGIN = re.compile(r"<!-- perf:begin (\S+) -->\n")
END = "<!-- perf:end -->"


class Result:
    """One result file: its name, benchmark, device label, and its data; `run` gives an entry's run."""

    def __init__(self, path):
        self.name = path.name
        self.data = json.loads(path.read_text())
        self.benchmark = self.data["benchmark"]
        self.device = self.data["device"]
        self.label = device_label(self.device)
        self.date = self.data["date"]
        self.commit = self.data.get("commit")

    def run(self, entry=None):
        """(device, date, commit, attributed) of ``entry``'s run (the file's where it has no fields of its own);
        ``attributed``: the commit was attributed afterwards (the file's ``commit_note`` says how)."""
        entry = entry or {}
        return (
            entry.get("device", self.device),
            entry.get("date", self.date),
            entry.get("commit", self.commit),
            "commit_note" in entry or "commit_note" in self.data,
        )

    def entries(self):
        return [
            e
            for name in ENTRIES
            if name in self.data
            for e in (self.data[name] if isinstance(self.data[name], list) else self.data[name].values())
        ]

    def refused(self):
        """Why this file may not be shown (None when it may)."""
        if self.name != f"{self.benchmark}-{self.label}.json":
            return f"named other than {self.benchmark}-{self.label}.json (one file a benchmark and device)"
        if self.data.get("draft"):
            return "a draft"
        for _, _, commit, _ in {self.run()} | {self.run(e) for e in self.entries() if isinstance(e, dict)}:
            if not commit or not re.fullmatch(r"[0-9a-f]{7,40}", commit):
                return f"a result of no commit (commit {commit!r}: uncommitted changes, or none recorded)"
        return None


def results():
    found = [Result(p) for p in sorted(RESULTS.glob("*.json"))]
    refused = [f"{r.name}: {r.refused()}" for r in found if r.refused()]
    if refused:
        raise SystemExit("benchmarks/results/ holds files the docs may not show:\n" + "\n".join(refused))
    return found


def result(found, benchmark, device=GPU):
    """The result of ``benchmark`` on ``device`` (a label), or None."""
    return next((r for r in found if r.benchmark == benchmark and r.label == device), None)


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def measured(r, entry=None):
    """An entry's run in a table's cell: "2026-11-28, 5223dd2"."""
    _, date, commit, _ = r.run(entry)
    return f"{date}, {commit}"


def cite(r, entries):
    """ "`FILE` (DEVICE, DATE, commit C)", with each run that ``entries`` of ``r`` came from."""
    by_device = {}
    for device, date, commit, attributed in dict.fromkeys(r.run(e) for e in entries):
        by_device.setdefault(device, []).append(
            f"{date}, commit {commit}" + (" (attributed afterwards: see the file's commit_note)" if attributed else "")
        )
    return f"`{r.name}` (" + "; ".join(f"{device}, " + "; ".join(runs) for device, runs in by_device.items()) + ")"


def cases_table(r, header, cells):
    """The rows of ``r`` (a result of cases: its ``rows``) as a table under ``header``, a row's cells ``cells(row)``,
    then the sentence of where they come from."""
    return (
        table(header, [cells(row) for row in r.data["rows"]]) + "\n\n" + sources([(r, row) for row in r.data["rows"]])
    )


def verdict(row):
    """A case's target and whether it was met ("—" for a case without one)."""
    return "—" if row["met"] is None else f"{row['target']}: {'met' if row['met'] else 'not met'}"


def sources(cited):
    """'From X.' or 'From X and Y.' for the (result, entry) pairs a table drew on, files in the order first used
    (an entry None: the file as a whole)."""
    files = {}
    for r, entry in cited:
        files.setdefault(r.name, (r, []))[1].append(entry)
    said = [cite(r, entries) for r, entries in files.values()]
    return "From " + ", ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1] + "."


def ratio(x):
    return f"{x:.2f}×"


# ---- matmul ---------------------------------------------------------------------------------------------

BATCHED = ["fp16 64^3 x 16384, fp16 C", "fp16 64^3 x 16384, fp32 C", "bf16 128^3 x 4096, bf16 C", "fp32 64^3 x 16384"]
LARGE = [
    "bf16 8192^3, bf16 C (Matmul.tile, Hopper pipeline)",
    "tf32 8192^3, fp32 C (Matmul.tile, Hopper pipeline)",
    "bf16 8192^3, bf16 C (tile loop)",
    "bf16 8192^3, bf16 C (Matmul.gemm)",
    "bf16 8192x8192x1024, bf16 C (Matmul.gemm)",
]


def row_of(r, case, *fields):
    """``r``'s row for ``case`` if it has ``fields``, else None."""
    rows = r.data["rows"] if r else []
    return next((row for row in rows if row["case"] == case and all(row.get(f) for f in fields)), None)


def matmul_row(found, case, *fields):
    """The H200's matmul row for ``case`` if it has ``fields``: (result, row), or (None, None)."""
    r = result(found, "matmul")
    row = row_of(r, case, *fields)
    return (r, row) if row else (None, None)


def case_name(case):
    return case.replace("^3", "³").replace(" x ", " × ")


def matmul_batched(found):
    rows, cited = [], []
    for case in BATCHED:
        r, row = matmul_row(found, case)
        if not r:
            continue
        cited.append((r, row))
        bound = f"{row['memory_bound_ms'] / row['ms']:.2f}" if row.get("memory_bound_ms") else "—"
        gaps = "—"
        if row.get("kernel_ms"):
            gaps = (
                f"{row['kernel_ms'] * 1e3:.1f} / {row['gap_ms'] * 1e3:.1f} against "
                f"{row['peer_kernel_ms'] * 1e3:.1f} / {row['peer_gap_ms'] * 1e3:.1f}"
            )
        rows.append(
            [
                case_name(case),
                row["block_dim"],
                f"{row['tflops']:.1f}",
                f"{row['peer']} {row['peer_tflops']:.1f}",
                ratio(row["peer_ms"] / row["ms"]),
                bound,
                gaps,
                measured(r, row),
            ]
        )
    header = [
        "case",
        "kernel",
        "numba_tiles TFLOP/s",
        "cuBLAS (PyTorch) TFLOP/s",
        "ratio",
        "of the memory bound",
        "kernel / gap µs, ours against cuBLAS's",
        "measured",
    ]
    return table(header, rows) + "\n\n" + sources(cited)


def matmul_sustained(found):
    rows, cited = [], []
    for case in BATCHED + LARGE:
        r, row = matmul_row(found, case, "sustained_ms")
        if not r:
            continue
        cited.append((r, row))
        flops = row["tflops"] * row["ms"]
        rows.append(
            [
                case_name(case),
                f"{flops / row['sustained_ms']:.1f} ({row['sustained_mhz']:.0f}, {row['sustained_watts']:.0f})",
                f"{flops / row['peer_sustained_ms']:.1f} ({row['peer_sustained_mhz']:.0f}, "
                f"{row['peer_sustained_watts']:.0f})",
                ratio(row["peer_sustained_ms"] / row["sustained_ms"]),
                ratio(row["peer_ms"] / row["ms"]),
                measured(r, row),
            ]
        )
    header = [
        "case",
        "numba_tiles sustained TFLOP/s (SM MHz, W)",
        "cuBLAS sustained TFLOP/s (SM MHz, W)",
        "sustained ratio",
        "burst ratio, same run",
        "measured",
    ]
    return table(header, rows) + "\n\n" + sources(cited)


def large_table(found_rows):
    """The large GEMMs' table of ``found_rows``, (result, row) pairs, with the sentence of where they come from."""
    rows = [
        [
            case_name(row["case"]),
            row["block_dim"],
            f"{row['tflops']:.1f}",
            f"{row['peer']} {row['peer_tflops']:.1f}",
            ratio(row["peer_ms"] / row["ms"]),
            measured(r, row),
        ]
        for r, row in found_rows
    ]
    header = ["case", "kernel", "numba_tiles TFLOP/s", "cuBLAS (PyTorch) TFLOP/s", "ratio", "measured"]
    return table(header, rows) + "\n\n" + sources(found_rows)


def matmul_large(found):
    return large_table([(r, row) for r, row in (matmul_row(found, case) for case in LARGE) if r])


def matmul_whole(found):
    """Matmul.gemm beside Matmul.tile, from one run: the H200's matmul result if it has a Matmul.gemm row, else the
    H100's."""
    whole = [case for case in LARGE if "(Matmul.gemm)" in case]
    r = next(
        (r for r in (result(found, "matmul"), result(found, "matmul", "h100")) if any(row_of(r, c) for c in whole)),
        None,
    )
    if not r:
        return "No result yet."
    return large_table([(r, row) for row in (row_of(r, case) for case in LARGE) if row and "bf16" in row["case"]])


def matmul_shared(found):
    """examples/gemm.py's shared-tile GEMM by the warps' MMA atoms and by cuBLASDx (benchmarks/matmul_shared.py)."""
    r = any_gpu(found, "matmul_shared")
    if not r:
        return "No result yet."

    def cells(row):
        flops = row["tflops"] * row["ms"] * 1e9
        return [
            row["case"].replace("^3", "³"),
            f"{row['tflops']:.1f}",
            f"{flops / row['cublasdx_ms'] / 1e9:.1f}",
            ratio(row["ratio"]),
            f"{flops / row['peer_ms'] / 1e9:.1f}",
            measured(r, row),
        ]

    header = ["tiles (M×N×K) × threads, size", "MMA atoms TFLOP/s", "cuBLASDx TFLOP/s", "atoms vs cuBLASDx"]
    return cases_table(r, header + ["torch.matmul TFLOP/s", "measured"], cells) + (
        f" Median of {r.data['repeats']} trials."
    )


EPILOGUE = [
    "batched bf16 128^3 x 4096 relu(bias)",
    "batched fp16 64^3 x 16384 relu(bias)",
    "bf16 8192^3 gelu(bias)",
    "bf16 8192x8192x1024 gelu(bias)",
]


def matmul_epilogue(found):
    """Each case's row of the newer matmul_epilogue result, the H200's or the H100's; with the batches' bytes at a
    copy's speed where the run measured them."""
    rows, cited = [], []
    r = newest_gpu(found, "matmul_epilogue")
    bounded = r is not None and any("limit_ms" in row for row in r.data["rows"])
    for case in EPILOGUE:
        row = row_of(r, case)
        if not row:
            continue
        cited.append((r, row))
        fused = row.get("cublaslt_fused_ms")
        bound = [f"{row['limit_ms']:.3f}", ratio(row["eager_bound"])] if "limit_ms" in row else ["—", "—"]
        rows.append(
            [
                case_name(row["case"]),
                row["kernel"],
                f"{row['ms']:.3f}",
                f"{row['eager_ms']:.3f}",
                f"{fused:.3f}" if fused else "—",
                f"{row['bare_ms']:.3f}",
                *(bound if bounded else []),
                ratio(row["speedup_vs_eager"]),
                ratio(fused / row["ms"]) if fused else "—",
                ratio(row["bare_ms"] / row["ms"]),
            ]
        )
    if not rows:
        return "No result yet."
    header = [
        "case",
        "kernel",
        "numba_tiles ms",
        "eager PyTorch ms",
        "cuBLASLt fused ms",
        "bare product ms",
        *(["bytes at a copy's speed ms", "eager over the bytes' time"] if bounded else []),
        "vs eager",
        "vs cuBLASLt fused",
        "vs bare product",
    ]
    return table(header, rows) + "\n\n" + sources(cited)


# ---- segmented reductions -------------------------------------------------------------------------------

PEERS = {
    "cupy": "CuPy",
    "torch": "PyTorch",
    "cuda.compute": "cuda.compute",
    "cuda.compute-counting": "cuda.compute (counting)",
}


def shape_name(shape):
    length = shape["seg_len"]
    if isinstance(length, str):
        return f"{shape['dtype']}, CSR lengths {length.split()[-1]}"
    power = length.bit_length() - 1
    return f"{shape['dtype']}, segments of " + (f"2^{power}" if length == 1 << power and power > 12 else str(length))


def segmented_reduce(found):
    r = result(found, "segmented_reduce")
    if not r:
        return "No result yet."
    rows = []
    # (the kernels compiled by numba-cuda-mlir, where the run had it: a column of their own)
    mlir = [k for k in ("numba_tiles-mlir",) if any(k in shape["rows"] for shape in r.data["shapes"].values())]
    for shape in r.data["shapes"].values():
        got = shape["rows"]
        best = shape["best_peer"]

        def gbps(peer):
            return f"{got[peer]['gbps']:.0f}" if peer in got else "–"

        rows.append(
            [
                shape_name(shape),
                f"{got['numba_tiles']['gbps']:.0f}",
                f"{got['numba_tiles']['of_read']:.1%}",
                f"{PEERS[best]} {got[best]['gbps']:.0f}",
                ratio(got["numba_tiles"]["vs_best_peer"]),
            ]
            + [gbps(k) for k in mlir]
            + [gbps(p) for p in PEERS]
        )
    gib = r.data["scale_gib"]
    header = (
        [
            "shape (" + (f"{gib:g} GiB" if gib != 1 else "1 GiB") + ")",
            "numba_tiles GB/s",
            "of a full read",
            "best peer GB/s",
            "vs best peer",
        ]
        + ["numba-cuda-mlir GB/s"] * len(mlir)
        + list(PEERS.values())
    )
    return (
        table(header, rows)
        + "\n\n"
        + sources([(r, s) for s in r.data["shapes"].values()])
        + f" Median of {r.data['repeats']} runs after {r.data['warmup']} warm-ups."
    )


# ---- the block primitives, as the guides teach them -----------------------------------------------------


def primitives(found):
    r = result(found, "primitives")
    if not r:
        return "No result yet."

    def cells(row):
        best = max(row["peers"], key=row["peers"].get) if row["peers"] else None
        return [
            row["case"],
            f"{row['gbs']:.0f}",
            f"{row['limit_gbs']:.0f} ({row['limit'].split()[2]})",
            f"{row['of_limit']:.0%}",
            ", ".join(f"{k} {v:.0f}" for k, v in row["peers"].items()) or "—",
            ratio(row["gbs"] / row["peers"][best]) if best else "—",
            verdict(row),
        ]

    header = [
        f"case ({r.data['scale_gib']:g} GiB)",
        "numba_tiles GB/s",
        "limit GB/s",
        "of the limit",
        "peers GB/s",
        "vs best peer",
        "target",
    ]
    return cases_table(r, header, cells) + f" Median of {r.data['repeats']} trials."


# ---- block FFTs -----------------------------------------------------------------------------------------

FFT_SUMMARY = ["c2c f32 1024", "r2c f32 4096", "conv f32 4096"]  # the README's rows: one case of each kind


def fft(found):
    """The fft rows of each Hopper GPU with a result (the H200's first: their memories differ, and these kernels
    sit nearer the H100's), and the first result of an FFT kernel where there is one."""
    tables = [fft_table(r) for r in (result(found, "fft"), result(found, "fft", "h100")) if r]
    if not tables:
        return "No result yet."
    first = result(found, "first_result_fft")
    return "\n\n".join(tables) + first_result_sentence(first, "1024-point FFT kernel (load, execute, store)")


def fft_table(r):
    """The fft rows of one device's result ``r``."""

    def cells(row):
        return [
            row["case"],
            f"{row['ms']:.3f}",
            f"{row['gbs']:.0f}",
            f"{row['peer']} {row['peer_gbs']:.0f}",
            ratio(row["ratio"]),
            f"{row['copy_gbs']:.0f}",
            f"{row['gbs'] / row['copy_gbs']:.0%}",
            verdict(row),
            measured(r, row),
        ]

    header = [
        f"case ({r.data['scale_gib']:g} GiB)",
        "numba_tiles ms",
        "numba_tiles GB/s",
        "peer GB/s",
        "vs peer",
        "copy GB/s",
        "of the copy",
        "target",
        "measured",
    ]
    return cases_table(r, header, cells) + f" Median of {r.data['repeats']} trials after {r.data['warmup']} warm-ups."


def first_result_sentence(first, kernel):
    """A paragraph on the first result of ``kernel`` in a fresh process (a result of first_result_mathdx.py), or
    nothing when ``first`` is None."""
    if not first:
        return ""
    cold, warm = first.data["median_cold"], [row for row in first.data["rows"] if row["mode"] == "warm"]
    return (
        f"\n\nA first {kernel} in a fresh process: "
        f"{cold['from_spawn_s']:.1f} s from the process's start to the checked result with an empty cache, "
        f"{cold['launch_to_result_s']:.1f} s of it from the launch (median of {first.data['runs']})"
        + (f"; {warm[0]['from_spawn_s']:.1f} s with the cache a first run filled" if warm else "")
        + ". "
        + sources([(first, None)])
    )


# ---- random numbers -------------------------------------------------------------------------------------


def random_numbers(found):
    """The random rows of the newer run, the H200's or the H100's (benchmarks/random_numbers.py)."""
    r = newest_gpu(found, "random")
    if not r:
        return "No result yet."

    def cells(row):
        return [
            row["case"],
            f"{row['ms']:.3f}",
            f"{row['gbs']:.0f} (fill {row['limit_gbs']:.0f})" if "gbs" in row else "—",
            f"{row['peer']} {row['peer_ms']:.3f}",
            ratio(row["ratio"]),
            verdict(row),
            measured(r, row),
        ]

    header = ["case", "numba_tiles ms", "GB/s", "peer ms", "vs peer", "target", "measured"]
    return (
        cases_table(r, header, cells)
        + f" Median of {r.data['repeats']} trials."
        + first_result_sentence(any_gpu(found, "first_result_random"), "`Random` kernel (Philox, uniform float32)")
    )


# ---- small dense solves -----------------------------------------------------------------------------------


def any_gpu(found, benchmark):
    """The H200's result of ``benchmark``, else the H100's (both Hopper GPUs of the same SMs; the file names which)."""
    return result(found, benchmark) or result(found, benchmark, "h100")


def newest_gpu(found, benchmark):
    """The later of the H200's and the H100's results of ``benchmark`` by date (the newer code), or None."""
    have = [r for r in (result(found, benchmark), result(found, benchmark, "h100")) if r]
    return max(have, key=lambda r: r.data["date"], default=None)


def solvers(found):
    """The solver rows (benchmarks/solvers.py)."""
    r = any_gpu(found, "solvers")
    if not r:
        return "No result yet."

    def layout(row):  # (the shared-memory layout, where the run recorded it)
        if "leading_dimension" not in row:
            return ""
        arrangement = row["arrangement"].replace("_", "-")
        return f", {arrangement}, lda {row['leading_dimension'][0]}"

    def cells(row):
        return [
            row["case"],
            f"{row['ms']:.3f} ({row['threads']} threads, {row['batches_per_block']} a block{layout(row)})",
            f"{row['limit_ms']:.3f}",
            f"{row['peer']} {row['peer_ms']:.3f}",
            f"{row['ratio']:.1f}×",
            verdict(row),
            measured(r, row),
        ]

    header = ["case", "numba_tiles ms", "copy ms", "peer ms", "vs peer", "target", "measured"]
    return (
        cases_table(r, header, cells)
        + f" Median of {r.data['repeats']} trials."
        + first_result_sentence(any_gpu(found, "first_result_solver"), "`Solver` kernel (posv, 32×32 float32)")
    )


# ---- compile time, first result, start-up ---------------------------------------------------------------

KERNELS = [  # (row, the case measured, the plain kernel of the same arguments)
    ("one `block_reduce`", "block_reduce", "without"),
    ("`tiles.matmul` (shared C), 64×64×64 fp16", "matmul", "without matmul"),
    ("`tiles.matmul` by cuBLASDx (shared C), 64×64×64 fp16", "matmul by cuBLASDx", "without matmul"),
    ("`tiles.Matmul` (register form, staged C), 64×64×32 fp16", "register matmul", "without matmul"),
    ("`Matmul.batched` (wgmma), bf16 128×128×32 (sm_90a)", "hopper batched", "without batched"),
]


def compile_cases(found, *cases):
    """(result, its entries for ``cases``) of the 2-core machine's compile_latency file; (None, None) unless it
    has them all."""
    r = result(found, "compile_latency", CPU)
    if not r or not all(case in r.data["results"] for case in cases):
        return None, None
    return r, [r.data["results"][case] for case in cases]


def compile_latency(found):
    rows, cited = [], []
    for label, case, plain in KERNELS:
        r, got = compile_cases(found, f"{case}, cold cache", f"{case}, warm cache", plain)
        if not r:
            continue
        cold, warm, base = got
        cited += [(r, entry) for entry in got]
        rows.append(
            [
                label,
                f"{cold['compile_s']:.2f}",
                f"{cold['nvrtc_s']:.2f} ({cold['nvrtc_runs']})",
                f"{warm['compile_s']:.2f}",
                f"{base['compile_s']:.2f}",
                f"{warm['compile_s'] - base['compile_s']:+.2f}",
                f"{cold.get('runs', r.data['runs'])}",
                measured(r, cold),
            ]
        )
    header = [
        "first kernel of a process",
        "empty cache s",
        "of which NVRTC s (programs)",
        "warm cache s",
        "plain kernel s",
        "warm over plain s",
        "runs (median)",
        "measured",
    ]
    return table(header, rows) + "\n\n" + sources(cited)


def compile_later(found):
    r = result(found, "compile_latency", CPU)
    kept = {case: v for case, v in r.data["results"].items() if case == "without" or case.startswith("block_reduce")}
    rows = [[case, f"{v['compile_s']:.2f}", f"{v['nvrtc_s']:.2f}", v["pch_used"]] for case, v in kept.items()]
    runs = sorted({v.get("runs", r.data["runs"]) for v in kept.values()})
    return (
        table(["kernel", "compile s", "of which NVRTC s", "base header precompiled"], rows)
        + "\n\n"
        + sources([(r, v) for v in kept.values()])
        + f" Median of {' or '.join(map(str, runs))}."
    )


# ---- the first compile of each long form: numba_tiles' notices and the guides --------------------------

# The forms whose compile a notice calls long (numba_tiles/_compile.py), each with the compile_latency case that
# measures its first kernel and what that kernel is, as the notice says it. A form no result measures has no
# figure: its notice then gives none.
COLD_FORMS = [
    ("tiles.matmul", "matmul by cuBLASDx", "a first tiles.matmul kernel by cuBLASDx"),
    ("tiles.Matmul", "register matmul by cuBLASDx", "a first tiles.Matmul own loop by cuBLASDx"),
]
# What the matmul guide lists, in order: (the case, the kernel as the guide names it); the forms above and a
# Hopper kernel with no cuBLASDx GEMM (no notice: it is short).
COLD_KERNELS = [
    ("matmul", "a first `tiles.matmul` kernel (shared C, 64×64×64 fp16; the warps' MMA atoms, no cuBLASDx GEMM)"),
    ("matmul by cuBLASDx", "the same kernel by cuBLASDx (`NUMBA_TILES_MATMUL_ATOMS=0`; its complex and float32 path)"),
    (
        "register matmul",
        "a first kernel of `tiles.Matmul`'s own loop (loads, product and staged store, 64×64×32 fp16; the warps' MMA "
        "atoms, no cuBLASDx GEMM)",
    ),
    (
        "register matmul by cuBLASDx",
        "the same kernel by cuBLASDx (`NUMBA_TILES_MATMUL_ATOMS=0`; its float16-accumulator and float32 path)",
    ),
    ("hopper batched", 'a first `Matmul.batched` kernel by `"wgmma"` (bf16 128×128×32, sm_90a; no cuBLASDx GEMM)'),
]


def cores(r, entry):
    """The CPU cores of the machine ``entry`` of ``r`` was measured on (its device says "..., 2 cores")."""
    found = re.search(r"(\d+) cores", r.run(entry)[0])
    return int(found[1]) if found else None


def cold_compile(found, case):
    """(seconds, cores, result, entry): the median time to a first linked kernel of ``case`` with an empty cache on
    the 2-core machine, rounded to a second (what both a notice and the guides say); or None."""
    r, got = compile_cases(found, f"{case}, cold cache")
    return (round(got[0]["compile_s"]), cores(r, got[0]), r, got[0]) if r else None


def cold_phrase(kernel, seconds, cpus, side_by_side):
    """How a notice says a first compile took: "<kernel> took about 24 s on 2 CPU cores[, less on more]" (programs
    compiled side by side take less on more cores; a lone program, only on faster ones)."""
    return f"{kernel} took about {seconds} s on {cpus} CPU cores" + (", less on more" if side_by_side else "")


def side_by_side(r, case):
    """Whether ``case``'s programs compiled side by side in ``r``: their NVRTC seconds add up to more than the wall
    time."""
    cold = r.data["results"][f"{case}, cold cache"]
    return cold["nvrtc_s"] > cold["compile_s"]


def compile_times_module(found):
    """The text of numba_tiles/_compile_times.py: each form's phrase, for the notices."""
    lines = []
    for form, case, kernel in COLD_FORMS:
        figure = cold_compile(found, case)
        if figure:
            seconds, cpus, r, entry = figure
            phrase = cold_phrase(kernel, seconds, cpus, side_by_side(r, case))
            lines += [
                f"    # {r.name}: {measured(r, entry)}",
                f"    {json.dumps(form)}: {json.dumps(phrase, ensure_ascii=False)},",
            ]
    first = result(found, "first_result_fft")
    if first:  # (measured on the GPU machine: a whole fresh process, to its checked result)
        seconds, cpus = round(first.data["median_cold"]["from_spawn_s"]), first.data["cpu_count"]
        phrase = (
            f"a first tiles.FFT kernel took about {seconds} s to its result from a fresh process on {cpus} CPU cores"
        )
        lines += [f"    # {first.name}: {measured(first)}", f"    {json.dumps('tiles.FFT')}: {json.dumps(phrase)},"]
    return (
        '"""How long the first compile of each long form took, as the notices of `_compile` say it as such a '
        "compile\nstarts. Generated by benchmarks/report.py from benchmarks/results/ (the 2-core machine's "
        "compile_latency\nresult, the GPU machine's first FFT result); do not edit: run "
        '``python benchmarks/report.py`` after a benchmark run."""\n\n'
        "# form → what a notice says of its first kernel with an empty cache (a form not here: no figure)\n"
        "COLD = {\n" + "\n".join(lines) + "\n}\n"
    )


def compile_cold(found):
    """The matmul guide's list: each kernel's first compile, with an empty cache."""
    rows, cited = [], []
    for case, kernel in COLD_KERNELS:
        figure = cold_compile(found, case)
        if figure:
            seconds, cpus, r, entry = figure
            cited.append((r, entry))
            more = (
                (
                    f" (its {r.data['results'][f'{case}, cold cache']['nvrtc_runs']} NVRTC programs side by side), "
                    "less on more"
                )
                if side_by_side(r, case)
                else ""
            )
            rows.append(f"- {kernel}: about {seconds} s on {cpus} CPU cores{more};")
    rows[-1] = rows[-1][:-1] + "."
    return "\n".join(rows) + "\n\n" + sources(cited)


def compile_notice(found):
    """The caching guide's sample notice: a first tiles.matmul kernel's (tests/cpu/test_progress.py compiles it and
    compares)."""
    seconds, cpus, r, _ = cold_compile(found, COLD_FORMS[0][1])
    phrase = cold_phrase(COLD_FORMS[0][2], seconds, cpus, side_by_side(r, COLD_FORMS[0][1]))
    return (
        "```text\nnumba_tiles: compiling tiles.matmul 16x16x16 (float32) with cuBLASDx for sm_90 (NVRTC; "
        f"{phrase}; cached afterwards)\n```"
    )


FIRST = [  # (row, the medians' keys it adds up)
    ("interpreter + `import numpy`", ["interpreter", "import_numpy"]),
    ("`from numba import cuda`", ["import_numba_cuda"]),
    ("`import numba_tiles` / `cuda.coop`", ["import_lib"]),
    ("CUDA context + data", ["context", "data"]),
    ("first launch: typing + lowering", ["phase.typing_lowering"]),
    ("first launch: NVRTC", ["phase.nvrtc"]),
    (
        "first launch: NVVM, nvJitLink, load, launch, the rest; copy back",
        ["phase.nvvm", "phase.nvjitlink", "phase.module_load", "phase.launch", "phase.other", "check"],
    ),
    ("**first result**", ["first_result"]),
]
MODES = {
    "plain": "plain Numba (no intrinsics)",
    "tiles-cold": "numba_tiles, empty cache",
    "tiles-warm": "numba_tiles, warm cache",
    "coop": "cuda.coop",
}


def first_result(found):
    r = result(found, "first_result")
    if not r:
        return "No result yet."
    medians, modes = r.data["medians"], [m for m in MODES if m in r.data["medians"]]
    rows = []
    for label, keys in FIRST:
        cells = []
        for m in modes:
            if keys == ["import_lib"] and m == "plain" or keys == ["phase.nvrtc"] and not medians[m].get("nvrtc_runs"):
                cells.append("–" if m == "plain" or keys == ["import_lib"] else "0")
                continue
            value = f"{sum(medians[m][k] for k in keys):.2f}"
            cells.append(f"**{value}**" if label.startswith("**") else value)
        rows.append([label] + cells)
    spread = ["define + first launch, fastest–slowest"]
    for m in modes:
        times = [run["steps"]["compile_launch"] for run in r.data["all_runs"][m]]
        spread.append(f"{min(times):.2f}–{max(times):.2f}")
    rows.append(spread)
    coop = r.data["versions"].get("cuda-cccl")
    header = ["seconds"] + [MODES[m] + (f" {coop}" if m == "coop" and coop else "") for m in modes]
    return (
        table(header, rows)
        + "\n\n"
        + sources([(r, None)])
        + f" Median of {r.data['runs']} fresh processes a column; each row is its own median, so the rows do not "
        "add up exactly."
    )


def startup(found):
    picked = [r for r in (result(found, "startup", GPU), result(found, "startup", CPU)) if r]
    if not picked:
        return "No result yet."
    keys = list(dict.fromkeys(k for r in picked for k in r.data["seconds"]))
    rows = [[k] + [f"{r.data['seconds'][k]:.3f}" if k in r.data["seconds"] else "–" for r in picked] for k in keys]
    header = ["seconds"] + [
        (r.device if r.device.startswith("CPU only") else f"{r.device}, {r.data['cpus']} CPUs")
        + f" (median of {r.data['repeat']})"
        for r in picked
    ]
    return table(header, rows) + "\n\n" + sources([(r, None) for r in picked])


def files(found):
    def holds(r):
        d = r.data
        if "rows" in d and r.benchmark in (
            "matmul",
            "matmul_epilogue",
            "matmul_shared",
            "primitives",
            "fft",
            "random",
            "solvers",
        ):
            return "; ".join(case_name(row["case"]) for row in d["rows"])
        if "shapes" in d:
            return ", ".join(d["shapes"])
        if "results" in d:
            return ", ".join(d["results"])
        if "medians" in d:
            return ", ".join(d["medians"])
        if "seconds" in d:
            return ", ".join(d["seconds"])
        if "rows" in d:
            return f"{len(d['rows'])} launches"
        return ""

    def runs(r):
        return "; ".join(
            f"{date}, {commit}" + (" (attributed afterwards)" if attributed else "")
            for _, date, commit, attributed in dict.fromkeys(r.run(e) for e in r.entries() or [None])
        )

    rows = [[f"`{r.name}`", r.benchmark, r.device, runs(r), holds(r)] for r in found]
    return table(["file", "benchmark", "device", "runs (date, commit)", "what it holds"], rows)


# ---- the README's summary -------------------------------------------------------------------------------


def summary(found):
    rows, cited = [], []
    seg = result(found, "segmented_reduce")
    if seg:
        for key in ("f32-128", "f32-4096", "f32-csr"):
            shape = seg.data["shapes"].get(key)
            if shape:
                cited.append((seg, shape))
                got, best = shape["rows"], shape["best_peer"]
                rows.append(
                    [
                        f"segmented sum, {shape_name(shape)} (1 GiB)",
                        f"{got['numba_tiles']['gbps']:.0f} GB/s",
                        f"{PEERS[best]} {got[best]['gbps']:.0f} GB/s",
                        ratio(got["numba_tiles"]["vs_best_peer"]),
                    ]
                )
    prim = result(found, "primitives")
    if prim:
        for row in prim.data["rows"]:
            if row["case"] == "segmented sum f32 4096":
                continue  # (the segmented_reduce rows above)
            cited.append((prim, row))
            best = max(row["peers"], key=row["peers"].get)
            rows.append(
                [
                    f"{row['case']} (1 GiB)",
                    f"{row['gbs']:.0f} GB/s",
                    f"{best} {row['peers'][best]:.0f} GB/s",
                    ratio(row["gbs"] / row["peers"][best]),
                ]
            )
    r = newest_gpu(found, "fft")
    for case in FFT_SUMMARY:
        row = row_of(r, case)
        if row:
            cited.append((r, row))
            rows.append(
                [
                    f"FFT {row['case']} ({r.data['scale_gib']:g} GiB)",
                    f"{row['gbs']:.0f} GB/s",
                    f"{row['peer']} {row['peer_gbs']:.0f} GB/s",
                    ratio(row["ratio"]),
                ]
            )
    r = newest_gpu(found, "random")
    row = row_of(r, "monte carlo pi 2^32")
    if row:
        cited.append((r, row))
        rows.append(
            [
                "Monte Carlo pi, 2^32 points (one kernel)",
                f"{row['ms']:.2f} ms",
                f"{row['peer']} {row['peer_ms']:.1f} ms",
                ratio(row["ratio"]),
            ]
        )
    r = any_gpu(found, "solvers")
    row = row_of(r, "posv f32 32 x 65536")
    if row:
        cited.append((r, row))
        rows.append(
            [
                "Cholesky solves, 65,536 of 32×32 f32 (one kernel)",
                f"{row['ms']:.3f} ms",
                f"torch.cholesky_solve + cholesky {row['peer_ms']:.2f} ms",
                ratio(row["ratio"]),
            ]
        )
    for case in BATCHED[:1] + BATCHED[2:] + LARGE[:2]:
        r, row = matmul_row(found, case)
        if r:
            cited.append((r, row))
            kind = "batched matmul" if case in BATCHED else "GEMM"
            rows.append(
                [
                    f"{kind}, {case_name(case)}",
                    f"{row['tflops']:.1f} TFLOP/s",
                    f"{row['peer']} {row['peer_tflops']:.1f} TFLOP/s",
                    ratio(row["peer_ms"] / row["ms"]),
                ]
            )
    return table(["workload", "numba_tiles", "fastest peer", "ratio"], rows) + "\n\n" + sources(cited)


BLOCKS = {
    "summary": summary,
    "segmented_reduce": segmented_reduce,
    "primitives": primitives,
    "fft": fft,
    "random": random_numbers,
    "solvers": solvers,
    "matmul_batched": matmul_batched,
    "matmul_sustained": matmul_sustained,
    "matmul_large": matmul_large,
    "matmul_whole": matmul_whole,
    "matmul_shared": matmul_shared,
    "matmul_epilogue": matmul_epilogue,
    "compile_latency": compile_latency,
    "compile_later": compile_later,
    "first_result": first_result,
    "startup": startup,
    "files": files,
    "compile_cold": compile_cold,
    "compile_notice": compile_notice,
}


def render(text, found):
    """``text`` with each generated block replaced by what the JSONs give now."""
    out, pos = [], 0
    for m in BEGIN.finditer(text):
        if m.start() < pos:
            continue
        end = text.index(END, m.end())
        name = m.group(1)
        if name not in BLOCKS:
            raise KeyError(f"no generated block named {name!r} (known: {', '.join(BLOCKS)})")
        out += [text[pos : m.end()], BLOCKS[name](found), "\n"]
        pos = end
    return "".join(out) + text[pos:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 where a file is out of date")
    args = parser.parse_args(argv)
    found, stale = results(), []
    for path in [*TARGETS, COMPILE_TIMES]:
        text = path.read_text() if path.exists() else ""
        new = compile_times_module(found) if path == COMPILE_TIMES else render(text, found)
        if new != text:
            stale.append(path.relative_to(ROOT).as_posix())
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print("out of date (run python benchmarks/report.py): " + ", ".join(stale))
        return 1
    print(("rewrote " + ", ".join(stale)) if stale else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
