"""Compile latency: time to a linked cubin in a fresh process, with and without one block_reduce (or one matmul).

Each measurement is a new Python process that imports numba_tiles and calls ``tiles.compile``
for sm_90 (no GPU needed), so it pays every cold cost a user pays: the kernel without the
intrinsic, with it and an empty disk cache, and with it and a warm cache. Prints a table and
writes benchmarks/results/compile_latency-cpuN.json (N: the machine's cores; ``--out`` another folder).

    python benchmarks/compile_latency.py [--runs 5] [--tree DIR] [--matmul] [--batched] [--out DIR] [--draft]

``--tree`` measures another checkout of numba_tiles (say, an older commit in a git worktree)
with the same script, so that before and after come from one machine and one sitting.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _versions import add_output_arguments, cpu_device, measured_commit, write_result

os.environ.setdefault("NUMBA_TILES_BACKGROUND", "0")  # (its kernels are precompiled or timed: none compiles ahead)

CHILD = r"""
import json, os, sys, time
if "by cuBLASDx" in sys.argv[1]:  # the products left to cuBLASDx (its complex, float32 and float16-accumulator path)
    os.environ["NUMBA_TILES_MATMUL_ATOMS"] = "0"
t0 = time.perf_counter()
from numba import cuda
from numba.cuda import types
import numba_tiles as tiles
t1 = time.perf_counter()
import_s = t1 - t0

def with_reduce(x, out):
    i = cuda.grid(1)
    s = tiles.block_reduce(x[i], "+", block_dim=256)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = s

def without(x, out):
    i = cuda.grid(1)
    s = x[i]
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = s

sys.path.insert(0, ".")
from examples import gemm
with_matmul = gemm.make_gemm((64, 64, 64), "float16", "float32", 128)  # one fp16 product a K-tile, fp32 C
# the register form (tiles.Matmul): loads, product, C staged through shared memory
with_register = gemm.make_own_loop(tiles.Matmul((64, 64, 32), "float16", block_dim=128), staged=True)

def without_matmul(a, b, c, alpha, beta):  # the same arguments, no product
    c[cuda.threadIdx.x, 0] = alpha * a[0, 0] * b[0, 0] + beta

# Matmul.batched by wgmma ("hopper batched": sm_90a, CuTe's GMMA atoms, no cuBLASDx GEMM)
BMM = tiles.Matmul((128, 128, 32), "int16", precision="bf16", stages=4)

def with_batched(ops, alpha, beta):
    BMM.batched(ops, alpha, beta)

def without_batched(pipe, a, b, c, alpha, beta):  # the same arguments (what ops passes: its arrays), no product
    c[0, 0, cuda.threadIdx.x] = pipe[0] + a[0, 0, 0] + b[0, 0, 0] + int(alpha * beta)

kernel = {"without": without, "matmul": with_matmul, "matmul by cuBLASDx": with_matmul,
          "register matmul": with_register, "register matmul by cuBLASDx": with_register,
          "without matmul": without_matmul, "hopper batched": with_batched,
          "without batched": without_batched}.get(sys.argv[1].split(",")[0], with_reduce)
sig = ("void(float16[:, :], float16[:, :], float32[:, :], float64, float64)" if "matmul" in sys.argv[1]
       else (BMM.operands_type("int16", batched=True, implementation="wgmma"), types.float32, types.float32)
       if "hopper batched" in sys.argv[1]
       else "void(uint8[::1], int16[:, :, :], int16[:, :, :], int16[:, :, :], float32, float32)"
       if "batched" in sys.argv[1] else "void(float32[:], float32[:])")
arch = "sm_90a" if "batched" in sys.argv[1] else "sm_90"
if ", kernel " in sys.argv[1]:
    # Other instantiations first (untimed): the 2nd kernel of a process, or the 3rd once its
    # precompiled header is made (a user between notebook cells; older trees make it in-line).
    def warmup(block):
        def kernel(x, out):
            out[0] = tiles.block_reduce(x[cuda.grid(1)], "+", block_dim=block)
        return kernel
    for block in (64, 128)[:int(sys.argv[1].split(", kernel ")[1][0]) - 1]:
        tiles.compile(warmup(block), "void(float32[:], float32[:])", arch="sm_90")
    from numba_tiles import _compile
    getattr(_compile, "wait_for_precompiled_headers", lambda: None)()
    t1, before = time.perf_counter(), dict(tiles.cache.stats())
else:
    before = dict(tiles.cache.stats())
tiles.compile(kernel, sig, arch=arch)
t2 = time.perf_counter()
stats = {k: v - before[k] for k, v in tiles.cache.stats().items()}
print(json.dumps({"import_s": import_s, "compile_s": t2 - t1, "nvrtc_s": stats["nvrtc_seconds"],
                  "nvrtc_runs": stats["nvrtc"], "cache_hits": stats["hits"], "pch_used": stats["pch_used"],
                  "links": stats.get("links", 0)}))
"""


def measure(variant, runs, tree=None):
    """Median of ``runs`` fresh processes; "cold" empties the cache before each, "warm" fills it once first."""
    samples = []
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {**os.environ, "NUMBA_TILES_CACHE_DIR": cache_dir}
        cwd = Path(tree).resolve() if tree else Path(__file__).resolve().parents[1]  # `python -c` imports from cwd
        if variant.endswith("warm cache"):
            subprocess.run([sys.executable, "-c", CHILD, variant], env=env, cwd=cwd, capture_output=True, check=True)
        for _ in range(runs):
            if "cold cache" in variant:
                for entry in Path(cache_dir).iterdir():
                    entry.unlink()
            out = subprocess.run(
                [sys.executable, "-c", CHILD, variant], env=env, cwd=cwd, capture_output=True, text=True, check=True
            )
            samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", default=None, help="a checkout of numba_tiles to measure instead of this one")
    parser.add_argument(
        "--matmul",
        action="store_true",
        help="also a first tiles.matmul and a first tiles.Matmul kernel (~15-30 s a cold run)",
    )
    parser.add_argument(
        "--batched",
        action="store_true",
        help="also a first Matmul.batched kernel by wgmma (sm_90a; its own loop, no cuBLASDx GEMM)",
    )
    add_output_arguments(parser)
    args = parser.parse_args()
    commit = measured_commit(args, args.tree)
    variants = (
        "without",
        "block_reduce, cold cache",
        "block_reduce, warm cache",
        "block_reduce, kernel 2 of the process, cold cache",
        "block_reduce, kernel 3 of the process (PCH made), cold cache",
    )
    if args.matmul:
        variants += (
            "without matmul",
            "matmul, cold cache",
            "matmul, warm cache",
            "matmul by cuBLASDx, cold cache",
            "register matmul, cold cache",
            "register matmul, warm cache",
            "register matmul by cuBLASDx, cold cache",
        )
    if args.batched:
        variants += ("without batched", "hopper batched, cold cache", "hopper batched, warm cache")
    results = {variant: {**measure(variant, args.runs, args.tree), "runs": args.runs} for variant in variants}
    device = cpu_device()
    date = datetime.date.today().isoformat()
    print(
        f"compile latency to a linked sm_90 (batched: sm_90a) cubin, fresh process, median of {args.runs} "
        f"({device}, {date}, commit {commit})"
    )
    print(f"{'kernel':<62}{'import s':>10}{'compile s':>11}{'NVRTC s':>9}")
    for variant, r in results.items():
        print(f"{variant:<62}{r['import_s']:>10.2f}{r['compile_s']:>11.2f}{r['nvrtc_s']:>9.2f}")
    for variant in variants[1:]:
        base = results[
            "without matmul" if "matmul" in variant else "without batched" if "batched" in variant else "without"
        ]["compile_s"]
        if not variant.startswith("without"):
            print(f"{variant} adds {results[variant]['compile_s'] - base:.2f} s to the compile")
    path = write_result(
        "compile_latency",
        {"device": device, "date": date, "commit": commit, "runs": args.runs, "results": results},
        args,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
