"""Where the batched bf16 case's time goes: the same kernel over part of the batch, on chosen grids.

The bf16 128^3 x 4096 case of benchmarks/matmul.py (its best launch when this was measured: `Matmul.batched`
by TMA, ``implementation="tma"``, 128 x 128 x 32 tiles, 6 stages, 256 threads, a persistent grid) run over
``count`` products on ``blocks`` blocks, so that each block does ``count / blocks`` products ("rounds"): 32
rounds on 128 blocks (the benchmark's launch), 31 on 128, 124 or 132 blocks (do more SMs help?), 1 round (a
launch's start and end alone).
Each row: the median time a launch (CUDA events, back to back), the kernel's own duration and the gap
(profiler), products a microsecond, and the DRAM bytes a second that the products need (A and B read, C
written once); for comparison, ``torch.bmm`` over each row's count of products (cuBLAS's start and
steady rate) and ``torch.add`` over the whole batch (the same bytes, no arithmetic). Prints a table and
writes JSON under benchmarks/results/.

    PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/matmul_rounds.py [--label L]
"""

import argparse
import datetime
import os
import sys
from pathlib import Path

from numba import cuda

import numba_tiles as tiles

import gemm_variants
from _versions import commit, device_name, versions, write_result

os.environ.setdefault("NUMBA_TILES_BACKGROUND", "0")  # (its kernels are precompiled or timed: none compiles ahead)
from matmul import error, kernel_ms, median_ms

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from examples import gemm  # noqa: E402

BATCH, SIZE = 4096, 128
# (products, blocks): the benchmark's launch, then 31 rounds on fewer and more blocks, then single rounds
GRIDS = ((4096, 128), (4096, 132), (3968, 128), (3844, 124), (4092, 132), (128, 128), (132, 132), (16, 16))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    import torch  # (here: --help needs no torch)

    mm = tiles.Matmul((SIZE, SIZE, 32), "int16", accumulator="float32", block_dim=256, precision="bf16", stages=6)
    kernel = gemm.make_batched(mm)
    a, b = (torch.randn(BATCH, SIZE, SIZE, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    c = torch.empty_like(a)
    bits = lambda t: cuda.as_cuda_array(t.view(torch.int16))  # noqa: E731 (bfloat16 as int16 bits)
    product_bytes = 3 * SIZE * SIZE * 2
    rows = []

    def row(name, count, blocks, launch, err):
        ms = median_ms(launch, args.repeats)
        duration, gap = kernel_ms(launch)
        rows.append({"launch": name, "products": count, "blocks": blocks, "error": err, "ms": ms,
                     "kernel_ms": duration, "gap_ms": gap, "products_per_us": count / duration / 1e3,
                     "dram_tb_s": count * product_bytes / duration / 1e9})

    for count, blocks in GRIDS:
        c.fill_(float("nan"))
        ops = mm.operands(bits(a[:count]), bits(b[:count]), bits(c[:count]), implementation="tma")
        launch = gemm_variants.launcher(mm, kernel, ops, 1.0, 0.0, grid=blocks)
        torch.cuda.synchronize()
        err = error(c[:count].float(), torch.bmm(a[:count].float(), b[:count].float()))
        assert err < 1e-2, f"{count} products on {blocks} blocks: relative error {err:.2e}"
        row(ops.implementation, count, blocks, launch, err)
    for count in sorted({count for count, _ in GRIDS}, reverse=True):
        row("torch.bmm", count, None, lambda count=count: torch.bmm(a[:count], b[:count], out=c[:count]), 0.0)
    row("torch.add", BATCH, None, lambda: torch.add(a, b, out=c), None)
    name, date, measured = device_name(cuda.get_current_device()), datetime.date.today().isoformat(), commit()
    print(f"bf16 {SIZE}^3 batched by rounds ({name}, {date}, commit {measured})")
    print(f"{'launch':<12}{'products':>9}{'blocks':>7}{'rounds':>7}{'ms':>9}{'kernel us':>10}{'gap us':>7}"
          f"{'products/us':>12}{'TB/s':>6}")
    for r in rows:
        rounds = -(-r["products"] // r["blocks"]) if r["blocks"] else ""  # (the most any block does)
        print(f"{r['launch']:<12}{r['products']:>9}{r['blocks'] or '':>7}{rounds:>7}{r['ms']:>9.4f}"
              f"{r['kernel_ms'] * 1e3:>10.1f}{r['gap_ms'] * 1e3:>7.1f}{r['products_per_us']:>12.2f}"
              f"{r['dram_tb_s']:>6.2f}")
    path = write_result("matmul_rounds", date, args.label, rows, device=name, commit=measured, repeats=args.repeats,
                        versions=versions("numba", "numba-cuda", "torch", "nvidia-mathdx"))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
