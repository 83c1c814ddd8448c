"""Tile matmul on the GPU: batched small GEMMs and one large GEMM written with the tile API, against cuBLAS (PyTorch).

Batched: `Matmul.batched` (examples/gemm.py's `make_batched`: the whole persistent loop in one call) of
several descriptions (tiles, blocks and stages), each by every implementation that computes it on this GPU
(`Matmul.operands(..., implementation=)`, the label's first word: "wgmma", Hopper's warp-specialized loop of
TMA loads and wgmma, products in a dynamic order; "tma", the register form's loop with A and B loaded by TMA;
"cp.async", A and B copied by the threads), launched on its default grid (`Matmul.launch`) and, but for
wgmma, on grids of 1, 2, 3 or 4 products a block (``--per-block``); a kernel-written loop
of the register form (load/multiply/store, several products a block); the shared-C form (`tile_load`,
`tiles.matmul`, `tile_store`). Cases: fp16 64^3 x 16384 with an fp16 or an fp32 C, bf16 128^3 x 4096
with a bf16 C, fp32 64^3 x 16384; against ``torch.bmm`` on the same device memory. Large, 8192^3 bf16
against ``torch.matmul``: examples/gemm.py's `make_own_loop` (the register form in a loop over K-tiles,
"tile loop") and `Matmul.tile` in a persistent loop (benchmarks/gemm_variants.py's `make_grouped`; on
Hopper our wgmma block and libmathdx's pipeline, each tile by both, the case named "Matmul.tile, Hopper
pipeline"; libmathdx's one-thread ``prepare`` kernel in `Matmul.operands` is not timed); `Matmul.gemm` (all of
C in one call on the resident grid) at 8192^3 and 8192 x 8192 x 1024; and 8192^3 float32
multiplied as tf32 by `Matmul.tile` (B column-major) against ``torch.matmul`` with TF32 allowed
(``--large-cases`` picks among the four). Each output is checked against PyTorch's (relative Frobenius error)
before timing; then ``--repeats`` samples are timed by CUDA events (`median_ms`: after WARMUP_S of launches, each
sample's launches queued while the GPU is held), median.
For each case's fastest variant and its peer, the profiler (CUPTI) also gives the kernels' own durations
and the gaps between them over 20 back-to-back launches: the events' time per launch is about their sum.
Both are also timed sustained (``--sustained`` seconds of back-to-back launches after one second of
the same, with nvidia-smi's SM clock and power): the timings above are short bursts at full clock,
where a long run holds the GPU's power limit by lowering its clock.
``--jobs N`` first compiles every kernel in N processes (NVRTC takes 20-35 s a cuBLASDx kernel).
Batched products of 16-bit operands are bound by DRAM bandwidth: each batched row also gives the least time
in which A and B can be read and C written at the bandwidth of ``torch.add`` (two reads to one write) on
tensors like A (``memory_bound_ms``; the table's ``bound`` is that over the kernel's time, 1.0 at the bound).
Prints a table (TFLOP/s, ratio to PyTorch; each case's fastest variant) and writes
benchmarks/results/matmul-DEVICE.json (the cases it ran, each row listing every variant's TFLOP/s; ``--out``
another folder).

    PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/matmul.py [--repeats 20] [--large 8192] [--jobs 15] [--out DIR]
"""

import argparse
import datetime
import functools
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gemm_variants
from _versions import add_output_arguments, device_name, measured_commit, versions, write_result
from numba import cuda
from numba.cuda import types

import numba_tiles as tiles

os.environ.setdefault("NUMBA_TILES_BACKGROUND", "0")  # (its kernels are precompiled or timed: none compiles ahead)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from examples import gemm  # noqa: E402


def batched_kernel(tile, dtype, accumulator, block_dim, precision, stages):
    """`Matmul.batched` of one description (examples/gemm.py's `make_batched`), the description as ``kernel.mm``."""
    mm = tiles.Matmul(tile, dtype, accumulator=accumulator, block_dim=block_dim, precision=precision, stages=stages)
    kernel = gemm.make_batched(mm)
    kernel.mm = mm
    return kernel


def own_loop_kernel(tile, dtype, accumulator, block_dim, precision, stages):
    """examples/gemm.py's `make_own_loop` of one description: the register form, ``stages`` K-tiles in flight."""
    mm = tiles.Matmul(tile, dtype, accumulator=accumulator, block_dim=block_dim, precision=precision)
    return gemm.make_own_loop(mm, stages=stages)


KERNELS = {
    "register": gemm_variants.register_kernel,
    "batched": batched_kernel,
    "shared": gemm_variants.shared_kernel,
    "own_loop": own_loop_kernel,
}


@functools.cache
def kernel_of(kind, args):
    """The kernel ``KERNELS[kind](*args)``, made once: a variant launched on several grids compiles once."""
    return KERNELS[kind](*args)


def _compile_one(job):
    """Compile one benchmark kernel into the disk cache (a worker process). ``signature``: a string (for sm_90), or
    a described kernel's (C's dtype, whether batched, the implementation, the types after its `Operands`), for
    sm_90a, where Hopper's implementations are."""
    kind, args, signature = job
    kernel = KERNELS[kind](*args)
    arch = "sm_90"
    if not isinstance(signature, str):
        out, batched, implementation, *rest = signature
        signature = (kernel.mm.operands_type(out, batched=batched, implementation=implementation), *rest)
        arch = "sm_90a"
    start = time.perf_counter()
    try:
        tiles.compile(kernel, signature, arch=arch)
    except Exception as exc:  # noqa: BLE001 (reported again when the variant runs)
        print(f"precompiling {kind}{args}: {str(exc)[:200]}", flush=True)
    return time.perf_counter() - start


def precompile(jobs, processes):
    """Fill the disk cache with the kernels' LTO-IR in parallel (NVRTC takes ~10-25 s per cuBLASDx kernel)."""
    import multiprocessing
    import os

    os.environ["NUMBA_TILES_PREPARE"] = "0"
    os.environ["NUMBA_TILES_COMPILE_JOBS"] = "1"  # the pool is the parallelism: one NVRTC a process (~2 GB each)
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        seconds = pool.map(_compile_one, jobs, chunksize=1)
    print(f"precompiled {len(jobs)} kernels with {processes} processes: {sum(seconds):.0f} s of compiling")


WARMUP_S = 0.2  # seconds of launches before a timing
SLEEP_HZ = 2.0e9  # torch.cuda._sleep's cycles a second: an H100's or H200's top SM clock (a hold lasts as long or more)


def median_ms(launch, repeats, inner=10):
    """The median over ``repeats`` samples of one launch's GPU time, each sample ``inner`` launches back to
    back, queued while a kernel holds the GPU (``torch.cuda._sleep``, as nvbench's blocking kernel) for
    twice the host's time to queue them: the host's launch overhead (tens of microseconds to a tenth of a
    millisecond for a Numba kernel's arguments, against kernels of about 100) is then spent while the GPU
    waits, as in an application's stream or a CUDA graph, instead of counting as kernel time. Launches run for
    WARMUP_S first (the GPU's clock rises from idle over tens of milliseconds), which also times the host's
    launches. Where queueing a sample outlasted the hold, it says so: that time may be the host's."""
    import torch

    began, queueing = time.perf_counter(), []
    while time.perf_counter() - began < WARMUP_S:
        queueing.append(queued_s(launch, inner))
    hold_s = 2 * statistics.median(queueing) + 20e-6
    times, short = [], 0
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(int(hold_s * SLEEP_HZ))
        start.record()
        began = time.perf_counter()
        for _ in range(inner):
            launch()
        short += time.perf_counter() - began > hold_s
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    median = statistics.median(times)
    if short:
        print(
            f"  (host-bound: queueing {inner} launches outlasted the GPU's hold in {short} of {repeats} samples; "
            f"{median:.3f} ms of GPU time a launch)",
            flush=True,
        )
    return median


def queued_s(launch, inner):
    """The host's seconds to queue ``inner`` launches; then waits for the GPU to run them (so that the queue never
    fills and stalls the host)."""
    import torch

    began = time.perf_counter()
    for _ in range(inner):
        launch()
    took = time.perf_counter() - began
    torch.cuda.synchronize()
    return took


def host_ms(launch, samples=20, inner=10):
    """The host's time to queue one launch: the median over ``samples`` of `queued_s` of ``inner`` launches."""
    return statistics.median(queued_s(launch, inner) for _ in range(samples)) * 1e3 / inner


def sustained_ms(launch, seconds):
    """One launch's GPU time when launches run back to back for ``seconds``, after a second of the same: the rate
    of a long-running application, at which the GPU holds its power limit by lowering its clock (the H200
    reaches its 700 W within that second). `median_ms`'s short bursts leave it idle in between, at full clock.
    Also the SM clock (MHz) and board power (W) nvidia-smi reports meanwhile, medians (None without it)."""
    import shutil
    import subprocess

    import torch

    def run(duration):
        launches, start = 0, time.perf_counter()
        while time.perf_counter() - start < duration:
            for _ in range(50):  # (a sync now and then keeps the host's queue of launches short)
                launch()
            launches += 50
            torch.cuda.synchronize()
        return launches

    run(1.0)
    device = cuda.get_current_device()  # (by its PCI address: CUDA's device numbers need not be nvidia-smi's)
    query = [
        "nvidia-smi",
        "--query-gpu=clocks.sm,power.draw",
        "--format=csv,noheader,nounits",
        "-lms",
        "100",
        f"--id={device.PCI_DOMAIN_ID:08x}:{device.PCI_BUS_ID:02x}:{device.PCI_DEVICE_ID:02x}.0",
    ]
    sampler = subprocess.Popen(query, stdout=subprocess.PIPE, text=True) if shutil.which("nvidia-smi") else None
    try:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        launches = run(seconds)
        end.record()
        end.synchronize()
    finally:
        if sampler:
            sampler.terminate()
    ms = begin.elapsed_time(end) / launches
    lines = sampler.communicate()[0].splitlines() if sampler else []
    samples = [line.split(", ") for line in lines if line.count(",") == 1]
    if not samples:
        return ms, None, None
    return (
        ms,
        statistics.median(float(mhz) for mhz, _ in samples),
        statistics.median(float(watts) for _, watts in samples),
    )


def kernel_ms(launch, launches=20):
    """The median duration of ``launch``'s kernels and the median gap between one kernel's end and the next
    one's start, in ms, over ``launches`` back-to-back launches, from the profiler (CUPTI)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    launch()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(launches):
            launch()
        torch.cuda.synchronize()
    kernels = sorted(
        (
            e.time_range
            for e in prof.events()
            if e.device_type.name == "CUDA" and not any(word in e.name for word in ("emcpy", "emset"))
        ),
        key=lambda r: r.start,
    )[-launches:]
    gaps = [b.start - a.end for a, b in zip(kernels, kernels[1:])]
    return statistics.median(r.end - r.start for r in kernels) / 1e3, statistics.median(gaps) / 1e3


def error(result, expected):
    result, expected = result.double(), expected.double()
    return float((result - expected).norm() / expected.norm())


def started(kernel, launch, *args):
    """Launch ``kernel`` as ``launch`` = (grid, block) with its ``shared_bytes`` of dynamic shared memory (if any)
    on ``args``; returns a function that launches it again."""
    shared = getattr(kernel, "shared_bytes", 0)
    tiles.allow_dynamic_shared_memory(kernel, shared, *args)

    def again():
        kernel[launch[0], launch[1], 0, shared](*args)

    again()
    return again


def measure(case, label, start, output, reference, bound, flops, repeats):
    """One variant: ``start()`` launches it and returns its relaunch; ``output`` is checked against
    ``reference`` (relative error within ``bound``), then timed. (label, ms, error, relaunch), or None when
    the variant does not build or launch (reported)."""
    import torch

    output.fill_(float("nan"))  # the variant must write every item
    try:
        launch = start()
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 (a variant that does not build or launch is reported)
        print(f"  {case}: {label}: failed: {str(exc)[:200]}", flush=True)
        return None
    err = error(output.float(), reference)
    assert err < bound, f"{case}, {label}: relative error {err:.2e}"
    ms = median_ms(launch, repeats)
    print(f"  {case}: {label}: {flops / ms / 1e9:.1f} TFLOP/s (error {err:.1e})", flush=True)
    return label, ms, err, launch


def measure_tiles(descriptions, da, db, dc, c, reference, bound, flops, repeats, only="", call="tile"):
    """`measure` ``call`` of each of ``descriptions`` on the device arrays ``da``, ``db``, ``dc`` (``c``: the torch
    tensor of ``dc``), by each implementation that computes it on this GPU but the threads' copies (cp.async: not
    a large GEMM's loop); ``only``: the implementations whose name holds one of these |-separated texts. "tile":
    `Matmul.tile` in benchmarks/gemm_variants.py's `make_grouped` kernels (persistent, and one tile a block);
    "gemm": `Matmul.gemm` (examples/gemm.py's `make_whole_gemm`) on the resident grid."""
    cc = tuple(cuda.get_current_device().compute_capability)
    variants = [
        (mm, i, form)
        for mm in descriptions
        for i in mm._implementations(cc, str(dc.dtype), 2)
        if i != "cp.async" and any(part in i for part in only.split("|"))
        for form in ((True, False) if call == "tile" else ("gemm",))
    ]
    with ThreadPoolExecutor(len(variants)) as pool:  # (libmathdx makes their pipelines side by side)
        plans = list(pool.map(lambda v: gemm_variants.plan(v[0], str(dc.dtype), 2, v[1]), variants))
    results = []
    for (mm, implementation, form), plan in zip(variants, plans):
        if form == "gemm":
            kernel = gemm.make_whole_gemm(mm)
            start = lambda: gemm_variants.launcher(  # noqa: E731
                mm, kernel, mm.operands(da, db, dc, implementation=implementation), 1.0, 0.0, grid="resident"
            )
        else:
            kernel = gemm_variants.make_grouped(mm, persistent=form)
            start = lambda: gemm_variants.launch_grouped(  # noqa: E731
                mm, kernel, mm.operands(da, db, dc, implementation=implementation), 1.0, 0.0
            )
        label = f"{plan.implementation} {mm.shape} x {plan.threads}, {plan.stages} stages" + (
            ", a tile a block" if form is False else ""
        )
        results.append(measure("large", label, start, c, reference, bound, flops, repeats))
    return results


def best_row(case, results, flops, peer, peer_ms, peer_launch, sustained):
    """The JSON row of a case: its fastest variant against the peer (``peer_launch`` launches it), with both
    kernels' own durations and the gaps between back-to-back launches, both rates sustained for ``sustained``
    seconds (0: not measured) with the SM clock and power meanwhile, and every variant's TFLOP/s."""
    measured = [r for r in results if r]
    label, ms, err, launch = min(measured, key=lambda r: r[1])
    (kernel, gap), (peer_kernel, peer_gap) = kernel_ms(launch), kernel_ms(peer_launch)
    row = {
        "case": case,
        "block_dim": label,
        "ms": ms,
        "tflops": flops / ms / 1e9,
        "error": err,
        "peer": peer,
        "peer_ms": peer_ms,
        "peer_tflops": flops / peer_ms / 1e9,
        "kernel_ms": kernel,
        "gap_ms": gap,
        "peer_kernel_ms": peer_kernel,
        "peer_gap_ms": peer_gap,
        "variants": {r[0]: flops / r[1] / 1e9 for r in measured},
    }
    if sustained:
        for prefix, run in (("", launch), ("peer_", peer_launch)):
            row[f"{prefix}sustained_ms"], row[f"{prefix}sustained_mhz"], row[f"{prefix}sustained_watts"] = sustained_ms(
                run, sustained
            )
        row["sustained_ratio"] = row["peer_sustained_ms"] / row["sustained_ms"]
    return row


def main():
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--large", type=int, default=8192, help="M = N = K of the large GEMM (0: skip it)")
    parser.add_argument(
        "--large-cases",
        default="tile loop,Matmul.tile,Matmul.gemm,tf32",
        help="which large GEMMs: bf16 by the own loop of the register form, bf16 by Matmul.tile (on "
        "Hopper the wgmma block and libmathdx's pipeline), bf16 by Matmul.gemm (N^3 and N x N x N/8), tf32 by "
        "Matmul.tile",
    )
    parser.add_argument("--jobs", type=int, default=0, help="precompile the kernels first in this many processes")
    parser.add_argument("--batched-only", action="store_true", help="only Matmul.batched against torch.bmm")
    parser.add_argument(
        "--only",
        default="",
        help="only the variants whose label (batched) or implementation (large) holds this text "
        "(e.g. tma), or one of these |-separated",
    )
    parser.add_argument(
        "--sustained",
        type=float,
        default=2.0,
        help="seconds of back-to-back launches timing each case's fastest variant and its peer at "
        "the GPU's power limit (0: skip)",
    )
    parser.add_argument(
        "--per-block",
        default="1,2,3,4",
        type=lambda v: [int(x) for x in v.split(",") if x],
        help="batched launches of this many products a block, besides the default grid",
    )
    parser.add_argument(
        "--case", default="", help="only the batched cases whose name holds this text, or one of these comma-separated"
    )
    add_output_arguments(parser)
    args = parser.parse_args()
    commit = measured_commit(args)
    torch.manual_seed(int(time.time()))
    rows, skipped = [], {}
    # (case, A and B's dtype, precision, accumulator, C's dtype, size, batch, torch dtype)
    cases = [
        ("fp16 64^3 x 16384, fp16 C", "float16", None, "float32", "float16", 64, 16384, "float16"),
        ("fp16 64^3 x 16384, fp32 C", "float16", None, "float32", "float32", 64, 16384, "float16"),
        ("bf16 128^3 x 4096, bf16 C", "int16", "bf16", "float32", "int16", 128, 4096, "bfloat16"),
        ("fp32 64^3 x 16384", "float32", None, "float32", "float32", 64, 16384, "float32"),
    ]
    # Matmul.batched descriptions (tile, block_dim, stages) per size: the 64^3 cases are bound by memory, so the
    # stages are what keeps loads in flight; at 128^3 a K-tile of 32 leaves room for more stages. (wgmma has a
    # block of its own: descriptions differing in block_dim alone are one variant there.)
    batched = {
        64: [
            ((64, 64, 64), 128, 2),
            ((64, 64, 64), 128, 3),
            ((64, 64, 64), 128, 4),
            ((64, 64, 32), 128, 3),
            ((64, 64, 64), 128, 6),
            ((64, 64, 32), 128, 4),
            ((64, 64, 32), 128, 6),
            ((64, 64, 32), 128, 10),
            ((64, 64, 32), 128, 12),
            ((64, 64, 64), 256, 3),
        ],
        128: [
            ((128, 128, 32), 256, 4),
            ((128, 128, 32), 256, 5),
            ((128, 128, 32), 256, 6),
            ((128, 128, 32), 256, 7),
            ((128, 128, 32), 256, 8),
            ((128, 128, 32), 256, 10),
            ((128, 128, 64), 256, 5),
            ((128, 128, 64), 256, 2),
            ((128, 128, 64), 256, 3),
            ((128, 128, 64), 128, 3),
            # 128 threads, two blocks an SM (a 64 x 64 warp tile: a third fewer ldmatrix a product)
            ((128, 128, 32), 128, 3),
            ((128, 128, 32), 128, 4),
            ((128, 128, 64), 128, 2),
        ],
    }
    # the best of the kernel's own loop of load/multiply/store (register form) last time: (block_dim,
    # K-tile, products a block, C through shared memory, stages)
    register = {64: (128, 64, 8, True, 2), 128: (256, 64, 2, True, 3)}
    jobs, plans = [], []
    chosen = [c for c in cases if any(part in c[0] for part in args.case.split(","))]
    for name, dtype, precision, acc, out, size, batch, torch_dtype in chosen:
        found = {}  # label: (kind, factory arguments, implementation, launch); a label found again: the same variant
        for tile, block_dim, stages in batched[size]:
            factory_args = (tile, dtype, acc, block_dim, precision, stages)
            mm = kernel_of("batched", factory_args).mm
            for implementation in ("wgmma", "tma", "cp.async"):
                try:
                    plan = gemm_variants.plan(mm, out, implementation=implementation)
                except tiles.TilesError:  # (it does not compute this product on this GPU)
                    continue
                if plan.shared_bytes > 227 * 1024:  # Hopper's opt-in limit a block
                    continue
                label = f"{implementation}, K-tile {tile[2]} x {stages}, {plan.threads}"
                grids = {label + (", 1 a block" if plan.grid == "products" else ""): None}  # (None: Matmul.launch's)
                if implementation != "wgmma":  # (its blocks take products in a dynamic order, as many as run)
                    grids.update({f"{label}, {p} a block": -(-batch // p) for p in args.per_block})
                for key, grid in grids.items():
                    found.setdefault(key, ("batched", factory_args, implementation, grid))
        block_dim, k_tile, per_block, staged, stages = register[size]
        if not args.batched_only:
            found[
                f"register {block_dim}, K-tile {k_tile} x {stages}, {per_block} a block"
                + (", staged C" if staged else "")
            ] = (
                "register",
                (size, dtype, acc, block_dim, k_tile, per_block, precision, staged, stages),
                None,
                (batch // per_block, block_dim),
            )
        if precision is None and out == acc and not args.batched_only:
            found["shared C, 128, aligned"] = ("shared", (size, dtype, acc, 128, 16), None, (batch, 128))
        variants = [(label, v) for label, v in found.items() if any(part in label for part in args.only.split("|"))]
        arrays = f"void({dtype}[:, :, ::1], {dtype}[:, :, ::1], {out}[:, :, ::1])"
        for kind, factory_args, implementation in dict.fromkeys(v[:3] for _, v in variants):
            jobs.append(
                (
                    kind,
                    factory_args,
                    (out, True, implementation, types.float64, types.float64) if kind == "batched" else arrays,
                )
            )
        plans.append((name, dtype, precision, out, size, batch, torch_dtype, variants))
    large_variants = []
    large = set(args.large_cases.split(",")) if args.large and not args.batched_only else set()
    if "tile loop" in large:
        for tile, block_dim, stages in (
            ((128, 128, 32), 128, 2),
            ((128, 128, 64), 128, 2),
            ((128, 128, 64), 128, 3),
            ((128, 256, 64), 256, 2),
        ):
            large_variants.append(
                (
                    f"{tile} x {block_dim}, {stages} stages",
                    ("own_loop", (tile, "int16", "float32", block_dim, "bf16", stages)),
                )
            )
        jobs += [(*f, "void(int16[:, ::1], int16[:, ::1], int16[:, ::1], float64, float64)") for _, f in large_variants]
    if args.jobs:
        precompile(jobs, args.jobs)

    def to_numba(t):
        return cuda.as_cuda_array(t.view(torch.int16) if t.dtype == torch.bfloat16 else t)

    for name, dtype, precision, out, size, batch, torch_dtype, variants in plans:
        a = torch.randn(batch, size, size, device="cuda", dtype=getattr(torch, torch_dtype))
        b = torch.randn(batch, size, size, device="cuda", dtype=getattr(torch, torch_dtype))
        c = torch.empty(batch, size, size, device="cuda", dtype=torch.float32 if out == "float32" else a.dtype)
        flops = 2 * batch * size**3
        reference = torch.bmm(a.float(), b.float())
        peer_ms = median_ms(lambda: torch.bmm(a, b), args.repeats)
        da, db, dc = (to_numba(t) for t in (a, b, c))
        results = []
        bound = 1e-5 if dtype == "float32" else 1e-2
        for label, (kind, factory_args, implementation, launch) in variants:
            kernel = kernel_of(kind, factory_args)
            if kind == "batched":
                start = lambda: gemm_variants.launcher(  # noqa: E731
                    kernel.mm,
                    kernel,
                    kernel.mm.operands(da, db, dc, implementation=implementation),
                    1.0,
                    0.0,
                    grid=launch,
                )
            else:
                start = lambda: started(kernel, launch, da, db, dc)  # noqa: E731
            results.append(measure(name, label, start, c, reference, bound, flops, args.repeats))
        rows.append(best_row(name, results, flops, "torch.bmm", peer_ms, lambda: torch.bmm(a, b), args.sustained))
        # The memory bound: the least time in which A and B can be read and C written, at the bandwidth of an
        # elementwise add (two reads to one write, as here) on tensors of A's size and dtype.
        total = torch.empty_like(a)
        add_ms = median_ms(lambda: torch.add(a, b, out=total), args.repeats)
        rows[-1]["memory_bound_ms"] = add_ms * (a.nbytes + b.nbytes + c.nbytes) / (3 * a.nbytes)
    n = args.large
    flops, repeats = 2 * n**3, max(args.repeats // 4, 5)  # (fewer samples: each is 10 launches of milliseconds)
    bf16_tiles = [((128, 128, 64), 4), ((128, 192, 64), 4), ((64, 256, 64), 4), ((128, 256, 64), 3)]

    def bf16_product(k):
        """A (n x k), B (k x n) and C (n x n) of bf16 on the GPU, A @ B in float32, torch.matmul's time, and the
        three as numba-cuda arrays."""
        a = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        c = torch.zeros(n, n, device="cuda", dtype=torch.bfloat16)
        peer_ms = median_ms(lambda: torch.matmul(a, b), args.repeats)
        return a, b, c, torch.matmul(a.float(), b.float()), peer_ms, *(to_numba(t) for t in (a, b, c))

    if large & {"tile loop", "Matmul.tile"}:
        a, b, c, reference, peer_ms, da, db, dc = bf16_product(n)
        results = []
        for label, (kind, factory_args) in large_variants:  # (none unless "tile loop")
            tile, block_dim = factory_args[0], factory_args[3]
            kernel = kernel_of(kind, factory_args)
            grid = (n // tile[1], n // tile[0])
            start = lambda: started(kernel, (grid, block_dim), da, db, dc, 1.0, 0.0)  # noqa: E731
            results.append(measure("large", label, start, c, reference, 1e-2, flops, repeats))
        if results:
            rows.append(
                best_row(
                    f"bf16 {n}^3, bf16 C (tile loop)",
                    results,
                    flops,
                    "torch.matmul",
                    peer_ms,
                    lambda: torch.matmul(a, b),
                    args.sustained,
                )
            )
        if "Matmul.tile" in large:
            descriptions = [tiles.Matmul(shape, "int16", precision="bf16", stages=s) for shape, s in bf16_tiles]
            results = measure_tiles(descriptions, da, db, dc, c, reference, 1e-2, flops, repeats, args.only)
            rows.append(
                best_row(
                    f"bf16 {n}^3, bf16 C (Matmul.tile, Hopper pipeline)",
                    results,
                    flops,
                    "torch.matmul",
                    peer_ms,
                    lambda: torch.matmul(a, b),
                    args.sustained,
                )
            )
    if "Matmul.gemm" in large:
        descriptions = [tiles.Matmul(shape, "int16", precision="bf16", stages=s) for shape, s in bf16_tiles]
        for k in (n, n // 8):
            a, b, c, reference, peer_ms, da, db, dc = bf16_product(k)
            results = measure_tiles(
                descriptions, da, db, dc, c, reference, 1e-2, 2 * n * n * k, repeats, args.only, call="gemm"
            )
            rows.append(
                best_row(
                    f"bf16 {n}^3, bf16 C (Matmul.gemm)" if k == n else f"bf16 {n}x{n}x{k}, bf16 C (Matmul.gemm)",
                    results,
                    2 * n * n * k,
                    "torch.matmul",
                    peer_ms,
                    lambda: torch.matmul(a, b),
                    args.sustained,
                )
            )
    if "tf32" in large:
        # float32 A and B multiplied as tf32, B column-major (tf32's wgmma reads B along K), against cuBLAS's tf32
        a, b, c = (
            torch.randn(n, n, device="cuda"),
            torch.randn(n, n, device="cuda").t(),
            torch.zeros(n, n, device="cuda"),
        )
        reference = torch.matmul(a.double(), b.double()).float()
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            peer_ms = median_ms(lambda: torch.matmul(a, b), args.repeats)
            descriptions = [
                tiles.Matmul(shape, "float32", precision="tf32", stages=stages, arrangement=("row_major", "col_major"))
                for shape, stages in (((128, 128, 32), 2), ((128, 128, 32), 4), ((128, 256, 32), 3))
            ]
            results = measure_tiles(
                descriptions, *(cuda.as_cuda_array(t) for t in (a, b, c)), c, reference, 1e-3, flops, repeats, args.only
            )
            rows.append(
                best_row(
                    f"tf32 {n}^3, fp32 C (Matmul.tile, Hopper pipeline)",
                    results,
                    flops,
                    "torch.matmul (tf32)",
                    peer_ms,
                    lambda: torch.matmul(a, b),
                    args.sustained,
                )
            )
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
    name = device_name(cuda.get_current_device())
    date = datetime.date.today().isoformat()
    print(f"tile matmul vs cuBLAS (PyTorch), median of {args.repeats} ({name}, {date}, commit {commit})")
    print(
        f"{'case':<40}{'kernel':>34}{'ms':>9}{'TFLOP/s':>9}{'peer':>14}{'peer TFLOP/s':>14}{'ratio':>7}"
        f"{'bound':>7}{'kernel/gap us':>16}{'peer kernel/gap':>18}{'sustained ratio':>17}{'MHz/peer MHz':>14}"
    )
    for r in rows:
        r["ratio"] = r["tflops"] / r["peer_tflops"]
        sustained = (
            ""
            if "sustained_ratio" not in r
            else (f"{r['sustained_ratio']:>17.2f}{r['sustained_mhz'] or 0:>8.0f}/{r['peer_sustained_mhz'] or 0:<5.0f}")
        )
        memory = f"{r['memory_bound_ms'] / r['ms']:>7.2f}" if "memory_bound_ms" in r else " " * 7
        print(
            f"{r['case']:<40}{str(r['block_dim']):>34}{r['ms']:>9.3f}{r['tflops']:>9.1f}{r['peer']:>14}"
            f"{r['peer_tflops']:>14.1f}{r['ratio']:>7.2f}{memory}"
            f"{r['kernel_ms'] * 1e3:>10.1f}/{r['gap_ms'] * 1e3:<5.1f}"
            f"{r['peer_kernel_ms'] * 1e3:>12.1f}/{r['peer_gap_ms'] * 1e3:<5.1f}{sustained}"
        )
    for case, why in skipped.items():
        print(f"{case}: skipped ({why})")
    path = write_result(
        "matmul",
        {
            "device": name,
            "date": date,
            "commit": commit,
            "repeats": args.repeats,
            "versions": versions(
                "numba", "numba-cuda", "torch", "nvidia-mathdx", "nvidia-libmathdx-cu13", "nvidia-cuda-nvrtc"
            ),
            "skipped": skipped,
            "rows": rows,
        },
        args,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
