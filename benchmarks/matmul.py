"""Tile matmul on the GPU: batched small GEMMs and one large GEMM written with the tile API, against cuBLAS (PyTorch).

Batched: the register form (`tiles.Matmul`): one or several products a block, each over K-tiles loaded
asynchronously a few steps ahead into dynamic shared memory, the accumulator in registers, C stored
from them or staged through shared memory; and the shared-C form (`tile_load`, `tiles.matmul`,
`tile_store`) as it was. Cases: fp16 64^3 x 16384 with an fp16 or an fp32 C, bf16 128^3 x 4096 with a
bf16 C, fp32 64^3 x 16384; against ``torch.bmm`` on the same device memory. Large, 8192^3 bf16 against
``torch.matmul``: examples/gemm.py's `make_pipelined_gemm` (the register form in a loop over K-tiles) and
`make_hopper_gemm` (`tiles.PipelineMatmul`, TMA + wgmma; ``prepare``, a one-thread kernel a pair of A
and B, is not timed). Each output is checked against
PyTorch's (relative Frobenius error) before timing; then 3 warm-ups and ``--repeats`` runs timed by
CUDA events, median. ``--jobs N`` first compiles every kernel in N processes (NVRTC takes 20-35 s a
cuBLASDx kernel). Prints a table (TFLOP/s, ratio to PyTorch) and writes JSON under benchmarks/results/.

    PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/matmul.py [--repeats 20] [--label L] [--large 8192] [--jobs 15]
"""

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from numba import cuda
from numba.cuda import types

import numba_tiles as tiles

from _versions import device_name, versions

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from examples import gemm  # noqa: E402


def batched_kernel(size, dtype, accumulator, block_dim, alignment=None):
    """One product a block; ``alignment=16``: aligned tiles, which cuBLASDx moves with ldmatrix/stmatrix."""
    ab, acc = getattr(types, dtype), getattr(types, accumulator)

    @cuda.jit
    def batched(a, b, c):
        i = cuda.blockIdx.x
        sa = cuda.shared.array((size, size), ab, alignment=alignment)
        sb = cuda.shared.array((size, size), ab, alignment=alignment)
        sc = cuda.shared.array((size, size), acc, alignment=alignment)
        tiles.tile_load(a[i], sa, 0, 0, block_dim=block_dim)
        tiles.tile_load(b[i], sb, 0, 0, block_dim=block_dim)
        tiles.matmul(sa, sb, sc, shape=(size, size, size), block_dim=block_dim, alignment=alignment)
        tiles.tile_store(sc, c[i], 0, 0, block_dim=block_dim)

    return batched


def pipelined_kernel(size, dtype, accumulator, block_dim, per_block):
    """``per_block`` products a block, the next pair of tiles loading (asynchronously) during each product."""
    ab, acc = getattr(types, dtype), getattr(types, accumulator)

    @cuda.jit
    def pipelined(a, b, c):
        sa = cuda.shared.array((2, size, size), ab)  # two buffers each
        sb = cuda.shared.array((2, size, size), ab)
        sc = cuda.shared.array((size, size), acc)
        first = cuda.blockIdx.x * per_block
        tiles.tile_load(a[first], sa[0], 0, 0, block_dim=block_dim, asynchronous=True)
        tiles.tile_load(b[first], sb[0], 0, 0, block_dim=block_dim, asynchronous=True)
        for j in range(per_block):
            s = j % 2
            if j + 1 < per_block:
                tiles.tile_load(a[first + j + 1], sa[1 - s], 0, 0, block_dim=block_dim, asynchronous=True)
                tiles.tile_load(b[first + j + 1], sb[1 - s], 0, 0, block_dim=block_dim, asynchronous=True)
                tiles.tile_wait(2, block_dim=block_dim)  # this product's pair is in; the next may not be
            else:
                tiles.tile_wait(block_dim=block_dim)
            tiles.matmul(sa[s], sb[s], sc, shape=(size, size, size), block_dim=block_dim)
            tiles.tile_store(sc, c[first + j], 0, 0, block_dim=block_dim)

    return pipelined


def register_kernel(size, dtype, accumulator, block_dim, k_tile, per_block, precision=None, staged=False, stages=2):
    """The register form (`tiles.Matmul`): ``per_block`` products a block, each over K-tiles of ``k_tile``,
    the next ``stages - 1`` K-tiles' A and B loading (asynchronously) during each product; C (of the
    accumulator's dtype or A's) stored from the registers, or (``staged``) through shared memory in 16-byte
    vectors. The buffers are dynamic shared memory, ``kernel.shared_bytes`` of it."""
    mm = tiles.Matmul((size, size, k_tile), dtype, accumulator=accumulator, block_dim=block_dim, precision=precision)
    ab, acc_type = getattr(types, dtype), getattr(types, accumulator)
    A, B, C, S, ksteps = mm.a_items, mm.b_items, mm.c_items, stages, size // k_tile
    STAGE = S * (A + B) * np.dtype(dtype).itemsize // np.dtype(accumulator).itemsize

    @cuda.jit
    def batched(a, b, c):
        shared = cuda.shared.array(0, ab, alignment=16)
        acc = cuda.local.array(mm.accumulator_items, acc_type)
        first = cuda.blockIdx.x * per_block
        steps = per_block * ksteps
        for s in range(-(S - 1), steps):
            ahead = s + S - 1
            if ahead < steps:
                j, kk, slot = ahead // ksteps, ahead % ksteps, ahead % S
                mm.load_a(a[first + j], shared[slot * A:(slot + 1) * A], 0, kk * k_tile, asynchronous=True)
                mm.load_b(b[first + j], shared[S * A + slot * B:S * A + (slot + 1) * B], kk * k_tile, 0,
                          asynchronous=True)
            if s >= 0:
                mm.wait(2 * min(steps - 1 - s, S - 1))  # later K-tiles' loads (2 each) may still run
                j, kk, slot = s // ksteps, s % ksteps, s % S
                if kk == 0:
                    for i in range(mm.accumulator_items):
                        acc[i] = 0
                mm.multiply(shared[slot * A:(slot + 1) * A], shared[S * A + slot * B:S * A + (slot + 1) * B], acc)
                if kk == ksteps - 1:
                    if staged:
                        stage = cuda.shared.array(0, acc_type, alignment=16)
                        mm.store(acc, c[first + j], 0, 0, 1.0, 0.0, stage[STAGE:STAGE + C])
                    else:
                        mm.store(acc, c[first + j], 0, 0)

    batched.shared_bytes = S * (A + B) * np.dtype(dtype).itemsize + (C * np.dtype(accumulator).itemsize
                                                                      if staged else 0)
    return batched


def _compile_one(job):
    """Compile one benchmark kernel for this GPU's arch into the disk cache (a worker process)."""
    kind, args, signature = job
    kernel = {"register": register_kernel, "batched": batched_kernel, "pipelined": pipelined_kernel,
              "gemm": gemm.make_gemm, "pipelined_gemm": gemm.make_pipelined_gemm}[kind](*args)
    start = time.perf_counter()
    try:
        tiles.compile(kernel, signature, arch="sm_90")
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


def median_ms(launch, repeats):
    import torch

    for _ in range(3):
        launch()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def error(result, expected):
    result, expected = result.double(), expected.double()
    return float((result - expected).norm() / expected.norm())


def main():
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--label", default="")
    parser.add_argument("--large", type=int, default=8192, help="M = N = K of the large GEMM (0: skip it)")
    parser.add_argument("--jobs", type=int, default=0, help="precompile the kernels first in this many processes")
    args = parser.parse_args()
    torch.manual_seed(int(time.time()))
    rows, skipped = [], {}
    # (case, A and B's dtype, precision, accumulator, C's dtype, size, batch, torch dtype)
    cases = [("fp16 64^3 x 16384, fp16 C", "float16", None, "float32", "float16", 64, 16384, "float16"),
             ("fp16 64^3 x 16384, fp32 C", "float16", None, "float32", "float32", 64, 16384, "float16"),
             ("bf16 128^3 x 4096, bf16 C", "int16", "bf16", "float32", "int16", 128, 4096, "bfloat16"),
             ("fp32 64^3 x 16384", "float32", None, "float32", "float32", 64, 16384, "float32")]
    # register form (block_dim, K-tile, products a block) per size; the shared-C form as it was
    # (block_dim, K-tile, products a block, C through shared memory, pipeline stages)
    # (the 64^3 cases are bound by memory: more products a block keep more loads in flight; at 128^3 one
    # product a block spends most of its time filling and draining the pipeline)
    register = {64: [(128, 32, 1, False, 2), (128, 32, 4, True, 3), (128, 64, 4, True, 3), (64, 64, 4, True, 3),
                     (128, 32, 8, True, 4), (128, 64, 8, True, 2), (256, 32, 4, True, 3), (64, 32, 8, False, 4)],
                128: [(256, 32, 1, False, 3), (256, 64, 1, True, 2), (256, 64, 2, True, 3), (128, 32, 2, True, 3),
                      (256, 32, 4, False, 4), (256, 64, 4, False, 3), (128, 64, 2, False, 3), (256, 32, 2, False, 4)]}
    jobs, plans = [], []
    for name, dtype, precision, acc, out, size, batch, torch_dtype in cases:
        signature = f"void({dtype}[:, :, ::1], {dtype}[:, :, ::1], {out}[:, :, ::1])"
        variants = []
        for block_dim, k_tile, per_block, staged, stages in register[size]:
            shared = stages * size * k_tile * 2 * np.dtype(dtype).itemsize + staged * size * (size + 4) * 4
            if shared > 227 * 1024:
                continue  # over Hopper's shared memory a block may opt in to
            factory = ("register", (size, dtype, acc, block_dim, k_tile, per_block, precision, staged, stages))
            variants.append((f"register {block_dim}, K-tile {k_tile} x {stages}" + (f", {per_block} a block"
                                                                                    if per_block > 1 else "")
                             + (", staged C" if staged else ""), factory))
        if precision is None and out == acc:
            variants.append(("shared C, 128, aligned", ("batched", (size, dtype, acc, 128, 16))))
        jobs += [(*factory, signature) for _, factory in variants]
        plans.append((name, dtype, precision, out, size, batch, torch_dtype, variants))
    large_variants = []
    if args.large:
        for tile, block_dim, stages in (((128, 128, 32), 128, 2), ((128, 128, 64), 128, 2), ((128, 128, 64), 128, 3),
                                        ((128, 256, 64), 256, 2)):
            large_variants.append((f"{tile} x {block_dim}, {stages} stages",
                                   ("pipelined_gemm", (tile, "int16", "float32", block_dim, "bf16",
                                                       ("row_major", "row_major"), False, stages))))
        jobs += [(*f, "void(int16[:, ::1], int16[:, ::1], int16[:, ::1], float32, float32)") for _, f in large_variants]
    if args.jobs:
        precompile(jobs, args.jobs)

    def to_numba(t):
        return cuda.as_cuda_array(t.view(torch.int16) if t.dtype == torch.bfloat16 else t)

    for name, dtype, precision, out, size, batch, torch_dtype, variants in plans:
        a = torch.randn(batch, size, size, device="cuda", dtype=getattr(torch, torch_dtype))
        b = torch.randn(batch, size, size, device="cuda", dtype=getattr(torch, torch_dtype))
        c = torch.empty(batch, size, size, device="cuda", dtype=torch.float32 if out == "float32" else a.dtype)
        flops = 2 * batch * size ** 3
        reference = torch.bmm(a.float(), b.float())
        peer_ms = median_ms(lambda: torch.bmm(a, b), args.repeats)
        best = None
        bound = 1e-5 if dtype == "float32" else 1e-2
        for label, (kind, factory_args) in variants:
            kernel = {"register": register_kernel, "batched": batched_kernel}[kind](*factory_args)
            per_block = factory_args[5] if kind == "register" else 1
            da, db, dc = (to_numba(t) for t in (a, b, c))
            shared = getattr(kernel, "shared_bytes", 0)
            launch = lambda: kernel[batch // per_block, factory_args[3], 0, shared](da, db, dc)  # noqa: E731
            try:
                tiles.allow_dynamic_shared_memory(kernel, shared, da, db, dc)
                launch()
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 (a variant that does not build or launch is reported)
                print(f"  {name}: {label}: failed: {str(exc)[:200]}", flush=True)
                continue
            err = error(c.float(), reference)
            assert err < bound, f"{name}, {label}: relative error {err:.2e}"
            ms = median_ms(launch, args.repeats)
            print(f"  {name}: {label}: {flops / ms / 1e9:.1f} TFLOP/s (error {err:.1e})", flush=True)
            if best is None or ms < best[1]:
                best = (label, ms, err)
            c.fill_(float("nan"))  # the next variant must write every item
        rows.append({"case": name, "block_dim": best[0], "ms": best[1], "tflops": flops / best[1] / 1e9,
                     "error": best[2], "peer": "torch.bmm", "peer_ms": peer_ms, "peer_tflops": flops / peer_ms / 1e9})
    if args.large:
        n = args.large
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.zeros(n, n, device="cuda", dtype=torch.bfloat16)
        flops = 2 * n ** 3
        reference = torch.matmul(a.float(), b.float())
        peer_ms = median_ms(lambda: torch.matmul(a, b), args.repeats)
        best = None
        for label, (kind, factory_args) in large_variants:
            tile, block_dim = factory_args[0], factory_args[3]
            kernel = gemm.make_pipelined_gemm(*factory_args)
            da, db, dc = (to_numba(t) for t in (a, b, c))
            grid = (n // tile[1], n // tile[0])
            launch = lambda: kernel[grid, block_dim, 0, kernel.shared_bytes](da, db, dc, 1.0, 0.0)  # noqa: E731
            try:
                tiles.allow_dynamic_shared_memory(kernel, kernel.shared_bytes, da, db, dc, 1.0, 0.0)
                launch()
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001
                print(f"  large: {label}: failed: {str(exc)[:200]}", flush=True)
                continue
            err = error(c.float(), reference)
            assert err < 1e-2, f"large GEMM, {label}: relative error {err:.2e}"
            ms = median_ms(launch, max(args.repeats // 4, 5))
            print(f"  large: {label}: {flops / ms / 1e9:.1f} TFLOP/s (error {err:.1e})", flush=True)
            if best is None or ms < best[1]:
                best = (label, ms, err)
        rows.append({"case": f"bf16 {n}^3, bf16 C (tile loop)", "block_dim": best[0], "ms": best[1],
                     "tflops": flops / best[1] / 1e9, "error": best[2], "peer": "torch.matmul", "peer_ms": peer_ms,
                     "peer_tflops": flops / peer_ms / 1e9})
        best = None
        pipelines = [tiles.PipelineMatmul(shape, "int16", precision="bf16", c_dtype="int16", stages=stages)
                     for shape, stages in (((128, 128, 64), 2), ((128, 128, 64), 3), ((128, 256, 64), 3))]
        with ThreadPoolExecutor(len(pipelines)) as pool:  # libmathdx makes them side by side
            list(pool.map(lambda mm: mm.shared_memory_bytes, pipelines))
        for mm in pipelines:
            label = f"pipeline {mm.shape} x {mm.threads}, {mm.stages} stages"
            kernel = gemm.make_hopper_gemm(mm)
            dc = to_numba(c)
            c.fill_(float("nan"))
            da, db = to_numba(a), to_numba(b)
            launch = gemm.run_hopper(mm, kernel, da, db, dc, 1.0, 0.0)
            torch.cuda.synchronize()
            err = error(c.float(), reference)
            assert err < 1e-2, f"large GEMM, {label}: relative error {err:.2e}"
            ms = median_ms(launch, max(args.repeats // 4, 5))
            print(f"  large: {label}: {flops / ms / 1e9:.1f} TFLOP/s (error {err:.1e})", flush=True)
            if best is None or ms < best[1]:
                best = (label, ms, err)
        rows.append({"case": f"bf16 {n}^3, bf16 C (PipelineMatmul)", "block_dim": best[0], "ms": best[1],
                     "tflops": flops / best[1] / 1e9, "error": best[2], "peer": "torch.matmul", "peer_ms": peer_ms,
                     "peer_tflops": flops / peer_ms / 1e9})
    name = device_name(cuda.get_current_device())
    date = datetime.date.today().isoformat()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"tile matmul vs cuBLAS (PyTorch), median of {args.repeats} ({name}, {date}, commit {commit})")
    print(f"{'case':<36}{'kernel':>34}{'ms':>9}{'TFLOP/s':>9}{'peer':>14}{'peer TFLOP/s':>14}{'ratio':>7}")
    for r in rows:
        r["ratio"] = r["tflops"] / r["peer_tflops"]
        print(f"{r['case']:<36}{str(r['block_dim']):>34}{r['ms']:>9.3f}{r['tflops']:>9.1f}{r['peer']:>14}"
              f"{r['peer_tflops']:>14.1f}{r['ratio']:>7.2f}")
    for case, why in skipped.items():
        print(f"{case}: skipped ({why})")
    record = {"benchmark": "matmul", "date": date, "device": name, "commit": commit, "label": args.label,
              "python": platform.python_version(), "repeats": args.repeats,
              "versions": versions("numba", "numba-cuda", "torch", "nvidia-mathdx", "nvidia-libmathdx-cu13",
                                  "nvidia-cuda-nvrtc"),
              "rows": rows, "skipped": skipped}
    path = ROOT / "benchmarks" / "results" / (f"matmul-{date}" + (f"-{args.label}" if args.label else "") + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
