"""Time to first result of a `tiles.FFT` kernel in a fresh Python process, as a notebook user pays it.

Each run is a new process with an empty disk cache (``NUMBA_TILES_CACHE_DIR`` a new temporary folder): it imports
numba_tiles, describes a 1024-point complex64 forward FFT (cuFFTDx's suggested sizes for this GPU), defines a kernel
of ``FFT.load``, ``FFT.execute`` and ``FFT.store`` over the rows of a batch (docs/guide/fft.md's first kernel),
launches it once on 1000 rows, copies the result back and checks it against ``numpy.fft.fft``. Reported per run:
from the spawn of the process to the result (``from_spawn_s``: the interpreter's start too), from the child's first
line to the result (``first_result_s``), from the launch to the result (``launch_to_result_s``: typing, NVRTC of the
FFT's programs, linking, loading, the kernel), and the NVRTC programs compiled. ``--runs`` cold runs (default 3),
then one ``warm`` run reading the cache the first filled. Writes benchmarks/results/first_result_fft-DEVICE.json
(``--out`` another folder).

    python benchmarks/first_result_fft.py [--runs 3] [--out DIR] [--draft]
    python benchmarks/first_result_fft.py --dry     # no GPU: one cold run that compiles for sm_90 instead

On the GPU machines: ``PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/first_result_fft.py``.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _versions import add_output_arguments, measured_commit, versions, write_result

CHILD = r"""
import time
T0, E0 = time.perf_counter(), time.time()
import json, sys
import numpy as np
from numba import complex64, cuda
import numba_tiles as tiles

FFT = tiles.FFT(1024, "complex64")

@cuda.jit
def spectra(x, y):  # y[r] = numpy.fft.fft(x[r])
    items = cuda.local.array(FFT.storage_size, complex64)
    row = cuda.blockIdx.x * FFT.ffts_per_block + cuda.threadIdx.y
    if row < x.shape[0]:
        FFT.load(x[row], items)
    FFT.execute(items)
    if row < x.shape[0]:
        FFT.store(items, y[row])

defined = time.perf_counter()
record = {"define_s": defined - T0, "fft": repr(FFT)}
if "--dry" in sys.argv:  # no GPU: a linked sm_90 cubin instead of a launch
    tiles.compile(spectra, "void(complex64[:, ::1], complex64[:, ::1])", arch="sm_90")
    record["device"] = "none (--dry: compiled for sm_90)"
else:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((1000, 1024)) + 1j * rng.standard_normal((1000, 1024))).astype(np.complex64)
    d_x = cuda.to_device(x)
    d_y = cuda.device_array_like(d_x)
    cuda.synchronize()
    record["data_s"] = time.perf_counter() - defined
    start = time.perf_counter()
    spectra[-(-1000 // FFT.ffts_per_block), FFT.block_dim](d_x, d_y)
    y = d_y.copy_to_host()
    record["launch_to_result_s"] = time.perf_counter() - start
    want = np.fft.fft(x.astype(np.complex128))
    error = np.abs(y - want).max() / np.abs(want).max()
    assert error < 4e-5, f"wrong result: largest difference {error:.3g} of the largest value"
    record["error"] = float(error)
    name = cuda.get_current_device().name
    record["device"] = name.decode() if isinstance(name, bytes) else str(name)
end = time.perf_counter()
record.update(first_result_s=end - T0, end_epoch=E0 + (end - T0), nvrtc=tiles.cache.stats()["nvrtc"])
print(json.dumps(record))
"""


def run(mode, cache, dry=False):
    """One child process with ``cache`` as its disk cache: its record."""
    env = dict(os.environ, NUMBA_TILES_CACHE_DIR=cache)
    spawn = time.time()
    done = subprocess.run(
        [sys.executable, "-c", CHILD] + (["--dry"] if dry else []),
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"first_result_fft: the {mode} run failed:\n{done.stderr[-3000:]}")
    record = json.loads(done.stdout.splitlines()[-1])
    record["from_spawn_s"] = record.pop("end_epoch") - spawn
    return {"mode": mode, **record}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="cold runs, each with an empty cache (median)")
    parser.add_argument("--dry", action="store_true", help="no GPU: one cold run that compiles for sm_90")
    add_output_arguments(parser)
    args = parser.parse_args()
    if args.dry:
        with tempfile.TemporaryDirectory() as cache:
            print(json.dumps(run("cold", cache, dry=True), indent=1))
        return
    commit = measured_commit(args)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        first = None
        for _ in range(args.runs):
            cache = tempfile.mkdtemp(dir=tmp)
            first = first or cache
            rows.append(run("cold", cache))
        rows.append(run("warm", first))  # the same kernel again, its programs in the first run's cache
    cold = [r for r in rows if r["mode"] == "cold"]
    median = {
        k: statistics.median(r[k] for r in cold) for k in ("from_spawn_s", "first_result_s", "launch_to_result_s")
    }
    print(f"first result of a 1024-point FFT kernel in a fresh process ({rows[0]['device']}; {rows[0]['fft']})")
    print(f"{'mode':6} {'from spawn s':>12} {'first result s':>15} {'launch to result s':>19} {'NVRTC programs':>15}")
    for r in rows:
        print(
            f"{r['mode']:6} {r['from_spawn_s']:12.2f} {r['first_result_s']:15.2f} {r['launch_to_result_s']:19.2f} "
            f"{r['nvrtc']:15d}"
        )
    print(f"median of {len(cold)} cold runs: {median['from_spawn_s']:.2f} s from spawn to result")
    path = write_result(
        "first_result_fft",
        {
            "device": rows[0]["device"],
            "date": datetime.date.today().isoformat(),
            "commit": commit,
            "versions": versions("numpy", "numba", "numba-cuda"),
            "cpu_count": os.cpu_count(),
            "runs": len(cold),
            "median_cold": median,
            "rows": rows,
        },
        args,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
