"""Time to first result of a `tiles.Matmul` kernel in a fresh Python process, as a notebook user pays it.

Each run is a new process: it imports numba_tiles, defines a description and a one-line kernel of
``mm.tile`` (bf16 128 x 128 x 64: our wgmma block on Hopper, the register form elsewhere), optionally
does ``--work`` seconds of other work (a notebook's next cells: a sleep), then makes the operands, launches,
and checks C against NumPy. The description starts compiling its code in the background when it is
created (``NUMBA_TILES_BACKGROUND=0`` turns that off), so the launch after other work waits only for
what is left. Modes: ``cold`` (an empty disk cache) and ``warm`` (the cache an earlier process filled),
each with and without the other work, and ``cold-serial`` (an empty cache, no background compile: what a
launch costs without it). Reported: from the interpreter's start to the result, without the other work
(``first_result_s``), and from the launch to the result (``launch_to_result_s``). Writes
benchmarks/results/first_result_matmul-DEVICE.json (``--out`` another folder). Needs a GPU.

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
import numba_tiles as tiles

MM = tiles.Matmul((128, 128, 64), "int16", precision="bf16")

@cuda.jit
def gemm(ops, alpha, beta):
    MM.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, alpha, beta)

defined = time.perf_counter()
time.sleep(float(sys.argv[1]))  # the user's other work
start = time.perf_counter()
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 1024, 1024)).astype(np.float32)
bits = ((x.view(np.uint32).astype(np.uint64) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)) >> 16).astype(np.uint16)
a, b = (cuda.to_device(m.view(np.int16)) for m in bits)
c = cuda.device_array((1024, 1024), np.float32)
MM.launch(gemm, MM.operands(a, b, c), 1.0, 0.0)
result = c.copy_to_host()
end = time.perf_counter()
values = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
error = np.linalg.norm(result - values[0] @ values[1]) / np.linalg.norm(values[0] @ values[1])
assert error < 1e-5, error
print(json.dumps({"define_s": defined - T0, "first_result_s": end - T0 - (start - defined),
                  "launch_to_result_s": end - start, "device": cuda.get_current_device().name.decode()
                  if isinstance(cuda.get_current_device().name, bytes) else str(cuda.get_current_device().name)}))
"""


def run(mode, work, cache):
    """One child process: its record."""
    env = dict(os.environ, NUMBA_TILES_CACHE_DIR=cache, NUMBA_TILES_BACKGROUND="0" if mode == "cold-serial" else "1")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(work)], env=env, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise RuntimeError(f"{mode}: {done.stderr[-3000:]}")
    record = json.loads(done.stdout.splitlines()[-1])
    return {"mode": mode, "work_s": work, **record, "waited": "in the background" in done.stderr}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=float, default=15.0, help="seconds of other work between definition and launch")
    add_output_arguments(parser)
    args = parser.parse_args()
    commit = measured_commit(args)
    rows = []
    with (
        tempfile.TemporaryDirectory() as cold_now,
        tempfile.TemporaryDirectory() as cold_later,
        tempfile.TemporaryDirectory() as serial,
    ):
        rows.append(run("cold", 0.0, cold_now))  # (a): define and launch at once
        rows.append(run("cold", args.work, cold_later))  # (b): define, other work, launch
        rows.append(run("cold-serial", 0.0, serial))
        rows.append(run("warm", 0.0, cold_now))  # the same kernel, its cache filled by (a)
        rows.append(run("warm", args.work, cold_now))
    print(f"first result of a Matmul.tile kernel in a fresh process ({rows[0]['device']})")
    print(f"{'mode':12} {'other work s':>12} {'first result s':>15} {'launch to result s':>19}  waited")
    for r in rows:
        print(
            f"{r['mode']:12} {r['work_s']:12.0f} {r['first_result_s']:15.2f} {r['launch_to_result_s']:19.2f}  "
            f"{r['waited']}"
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
