"""Time to first result of a matmul kernel in a fresh Python process, as a notebook user pays it.

Each run is a new process: it imports numba_tiles, defines a kernel, optionally does ``--work`` seconds of other
work (a notebook's next cells: a sleep), then makes the operands, launches, and checks C against NumPy. Cases:
``"Matmul.tile bf16 128x128x64"``, a one-line kernel of ``mm.tile`` (our wgmma block on Hopper, the register
form elsewhere), whose description starts compiling its code in the background when it is created
(``NUMBA_TILES_BACKGROUND=0`` turns that off), so the launch after other work waits only for what is left; and
``"tiles.matmul fp16 64x64x32"``, the README's GEMM on shared tiles (compiled at its first launch). Modes:
``cold`` (an empty disk cache) and ``warm`` (the cache an earlier process filled), the description's case each
with and without the other work, and ``cold-serial`` (an empty cache, no background compile). Reported: from
the interpreter's start to the result, without the other work (``first_result_s``), and from the launch to the
result (``launch_to_result_s``). Writes benchmarks/results/first_result_matmul-DEVICE.json (``--out`` another
folder), a row a case and mode. Needs a GPU.

    PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/first_result_matmul.py [--work 15] [--out DIR] [--draft]
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

from _versions import add_output_arguments, measured_commit, versions, write_result

CHILD = r"""
import time
T0 = time.perf_counter()
import json, sys
import numpy as np
from numba import cuda
from numba.cuda.types import float16, float32
import numba_tiles as tiles

if sys.argv[2] == "tile":
    MM = tiles.Matmul((128, 128, 64), "int16", precision="bf16")

    @cuda.jit
    def gemm(ops, alpha, beta):
        MM.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, alpha, beta)
else:

    @cuda.jit
    def gemm(a, b, c, alpha, beta):  # the README's
        sa = cuda.shared.array((64, 32), float16)
        sb = cuda.shared.array((32, 64), float16)
        sc = cuda.shared.array((64, 64), float32)
        row, col = 64 * cuda.blockIdx.y, 64 * cuda.blockIdx.x
        tiles.tile_load(c, sc, row, col, block_dim=128)
        scale = beta
        for k in range(0, a.shape[1], 32):
            tiles.tile_load(a, sa, row, k, block_dim=128)
            tiles.tile_load(b, sb, k, col, block_dim=128)
            tiles.matmul(sa, sb, sc, alpha, scale, shape=(64, 64, 32), block_dim=128)
            scale = 1.0
        tiles.tile_store(sc, c, row, col, block_dim=128)

defined = time.perf_counter()
time.sleep(float(sys.argv[1]))  # the user's other work
start = time.perf_counter()
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 1024, 1024)).astype(np.float32)
c = cuda.device_array((1024, 1024), np.float32)
if sys.argv[2] == "tile":
    bits = ((x.view(np.uint32).astype(np.uint64) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)) >> 16).astype(np.uint16)
    a, b = (cuda.to_device(m.view(np.int16)) for m in bits)
    MM.launch(gemm, MM.operands(a, b, c), 1.0, 0.0)
    values = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
else:
    values = x.astype(np.float16)
    gemm[(16, 16), 128](cuda.to_device(values[0]), cuda.to_device(values[1]), c, 1.0, 0.0)
    values = values.astype(np.float64)
result = c.copy_to_host()
end = time.perf_counter()
error = np.linalg.norm(result - values[0] @ values[1]) / np.linalg.norm(values[0] @ values[1])
assert error < 1e-5, error
name = cuda.get_current_device().name
name = name.decode() if isinstance(name, bytes) else str(name)
print(json.dumps({"define_s": defined - T0, "first_result_s": end - T0 - (start - defined),
                  "launch_to_result_s": end - start, "device": name}))
"""


# case: (the child's kernel, its environment): the README's GEMM by the warps' MMA atoms and, as before them,
# by cuBLASDx
CASES = {
    "Matmul.tile bf16 128x128x64": ("tile", {}),
    "tiles.matmul fp16 64x64x32": ("shared", {}),
    "tiles.matmul fp16 64x64x32 by cuBLASDx": ("shared", {"NUMBA_TILES_MATMUL_ATOMS": "0"}),
}


def run(case, mode, work, cache):
    """One child process: its record."""
    kernel, extra = CASES[case]
    env = dict(os.environ, NUMBA_TILES_CACHE_DIR=cache, NUMBA_TILES_BACKGROUND="0" if mode == "cold-serial" else "1")
    env.update(extra)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(work), kernel], env=env, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise RuntimeError(f"{case}, {mode}: {done.stderr[-3000:]}")
    record = json.loads(done.stdout.splitlines()[-1])
    return {
        "case": f"{case}, {mode}, {work:g} s of other work",
        "kind": case,
        "mode": mode,
        "work_s": work,
        **record,
        "waited": "in the background" in done.stderr,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=float, default=15.0, help="seconds of other work between definition and launch")
    add_output_arguments(parser)
    args = parser.parse_args()
    commit = measured_commit(args)
    rows = []
    tile, shared, by_cublasdx = CASES
    with (
        tempfile.TemporaryDirectory() as cold_now,
        tempfile.TemporaryDirectory() as cold_later,
        tempfile.TemporaryDirectory() as serial,
        tempfile.TemporaryDirectory() as shared_cold,
        tempfile.TemporaryDirectory() as cublasdx_cold,
    ):
        rows.append(run(shared, "cold", 0.0, shared_cold))
        rows.append(run(shared, "warm", 0.0, shared_cold))
        rows.append(run(by_cublasdx, "cold", 0.0, cublasdx_cold))
        rows.append(run(tile, "cold", 0.0, cold_now))  # (a): define and launch at once
        rows.append(run(tile, "cold", args.work, cold_later))  # (b): define, other work, launch
        rows.append(run(tile, "cold-serial", 0.0, serial))
        rows.append(run(tile, "warm", 0.0, cold_now))  # the same kernel, its cache filled by (a)
        rows.append(run(tile, "warm", args.work, cold_now))
    print(f"first result of a matmul kernel in a fresh process ({rows[0]['device']})")
    print(f"{'case':40} {'mode':12} {'other work s':>12} {'first result s':>15} {'launch to result s':>19}  waited")
    for r in rows:
        print(
            f"{r['kind']:40} {r['mode']:12} {r['work_s']:12.0f} {r['first_result_s']:15.2f} "
            f"{r['launch_to_result_s']:19.2f}  {r['waited']}"
        )
    path = write_result(
        "first_result_matmul",
        {
            "device": rows[0]["device"],
            "date": datetime.date.today().isoformat(),
            "commit": commit,
            "versions": versions("numba", "numba-cuda"),
            "rows": rows,
        },
        args,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
