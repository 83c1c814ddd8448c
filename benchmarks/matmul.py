"""Tile matmul on the GPU: batched small GEMMs and one large GEMM written with the tile API, against cuBLAS (PyTorch).

Batched: one block per product, ``tile_load`` A and B into shared memory, ``tiles.matmul``,
``tile_store`` C; or several products a block, the next pair of tiles loading asynchronously
(``asynchronous=True``, ``tile_wait``) during each product (fp16 64^3 x 16384 with an fp16 or an fp32 C; fp32 64^3 x 16384), against
``torch.bmm`` on the same device memory. bf16 128^3 needs 128 KiB of shared tiles (over the 48 KiB of
static shared memory): reported as skipped. Large: examples/gemm.py's kernel (a loop over K-tiles) on 8192^3 fp16 with an
fp32 C, against ``torch.matmul``. Each output is checked against PyTorch's (relative Frobenius
error) before timing; then 3 warm-ups and ``--repeats`` runs timed by CUDA events, median.
Prints a table (TFLOP/s, ratio to PyTorch) and writes JSON under benchmarks/results/.

    PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/matmul.py [--repeats 20] [--label L] [--large 8192]
"""

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from numba import cuda
from numba.cuda import types

import numba_tiles as tiles

from _versions import versions

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
    args = parser.parse_args()
    torch.manual_seed(int(time.time()))
    rows, skipped = [], {}
    cases = [("fp16 64^3 x 16384, fp16 C", "float16", "float16", 64, 16384),
             ("fp16 64^3 x 16384, fp32 C", "float16", "float32", 64, 16384),
             ("fp32 64^3 x 16384", "float32", "float32", 64, 16384)]
    skipped["bf16 128^3 x 4096"] = ("its A, B and C tiles need 128 KiB of shared memory; static shared arrays stop "
                                    "at 48 KiB, and dynamic shared memory over 48 KiB is not wired yet")
    for name, dtype, acc, size, batch in cases:
        a = torch.randn(batch, size, size, device="cuda", dtype=getattr(torch, dtype))
        b = torch.randn(batch, size, size, device="cuda", dtype=getattr(torch, dtype))
        c = torch.empty(batch, size, size, device="cuda", dtype=getattr(torch, acc))
        flops = 2 * batch * size ** 3
        reference = torch.bmm(a.float(), b.float())
        peer_ms = median_ms(lambda: torch.bmm(a, b), args.repeats)
        best = None
        pipelined = (3 * size * size * np.dtype(dtype).itemsize + size * size * np.dtype(acc).itemsize) <= 48 * 1024
        variants = [(128, 1, None), (256, 1, None), (128, 1, 16), (256, 1, 16)]
        variants += [(128, 4, None), (128, 8, None), (256, 4, None)] if pipelined else []
        for block_dim, per_block, alignment in variants:
            kernel = (batched_kernel(size, dtype, acc, block_dim, alignment) if per_block == 1
                      else pipelined_kernel(size, dtype, acc, block_dim, per_block))
            da, db, dc = (cuda.as_cuda_array(t) for t in (a, b, c))
            launch = lambda: kernel[batch // per_block, block_dim](da, db, dc)  # noqa: E731
            launch()
            torch.cuda.synchronize()
            err = error(c, reference)
            assert err < (1e-2 if "fp16" in name else 1e-5), f"{name}, block {block_dim}: relative error {err:.2e}"
            ms = median_ms(launch, args.repeats)
            if best is None or ms < best[1]:
                best = (f"{block_dim}" + (f", {per_block} a block" if per_block > 1 else "")
                        + (", aligned" if alignment else ""), ms, err)
            c.fill_(float("nan"))  # the next variant must write every item
        rows.append({"case": name, "block_dim": best[0], "ms": best[1], "tflops": flops / best[1] / 1e9,
                     "error": best[2], "peer": "torch.bmm", "peer_ms": peer_ms, "peer_tflops": flops / peer_ms / 1e9})
    if args.large:
        n = args.large
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        c = torch.zeros(n, n, device="cuda", dtype=torch.float32)
        flops = 2 * n ** 3
        reference = torch.matmul(a.float(), b.float())
        peer_ms = median_ms(lambda: torch.matmul(a, b), args.repeats)
        best = None
        for tile, block_dim, alignment in (((64, 64, 32), 128, None), ((64, 64, 32), 128, 16),
                                           ((128, 64, 16), 256, 16), ((64, 128, 32), 256, 16)):
            kernel = gemm.make_gemm(tile, "float16", "float32", block_dim, alignment=alignment)
            da, db, dc = (cuda.as_cuda_array(t) for t in (a, b, c))
            grid = (n // tile[1], n // tile[0])
            launch = lambda: kernel[grid, block_dim](da, db, dc, 1.0, 0.0)  # noqa: E731
            launch()
            torch.cuda.synchronize()
            err = error(c, reference)
            assert err < 1e-2, f"large GEMM, tile {tile}: relative error {err:.2e}"
            ms = median_ms(launch, max(args.repeats // 4, 5))
            if best is None or ms < best[1]:
                best = (f"{tile} x {block_dim}" + (", aligned" if alignment else ""), ms, err)
        rows.append({"case": f"fp16 {n}^3, fp32 C (tile loop)", "block_dim": best[0], "ms": best[1],
                     "tflops": flops / best[1] / 1e9, "error": best[2], "peer": "torch.matmul", "peer_ms": peer_ms,
                     "peer_tflops": flops / peer_ms / 1e9})
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    date = datetime.date.today().isoformat()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"tile matmul vs cuBLAS (PyTorch), median of {args.repeats} ({name}, {date}, commit {commit})")
    print(f"{'case':<36}{'block':>18}{'ms':>9}{'TFLOP/s':>9}{'peer':>14}{'peer TFLOP/s':>14}{'ratio':>7}")
    for r in rows:
        r["ratio"] = r["tflops"] / r["peer_tflops"]
        print(f"{r['case']:<36}{str(r['block_dim']):>18}{r['ms']:>9.3f}{r['tflops']:>9.1f}{r['peer']:>14}"
              f"{r['peer_tflops']:>14.1f}{r['ratio']:>7.2f}")
    for case, why in skipped.items():
        print(f"{case}: skipped ({why})")
    record = {"benchmark": "matmul", "date": date, "device": name, "commit": commit, "label": args.label,
              "python": platform.python_version(), "repeats": args.repeats,
              "versions": versions("numba", "numba-cuda", "torch", "nvidia-mathdx", "nvidia-cuda-nvrtc"),
              "rows": rows, "skipped": skipped}
    path = ROOT / "benchmarks" / "results" / (f"matmul-{date}" + (f"-{args.label}" if args.label else "") + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
