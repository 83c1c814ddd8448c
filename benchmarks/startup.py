"""What a process pays before its first kernel: ``import numba_tiles``, and the first launch of a
``@cuda.jit(cache=True)`` kernel that calls intrinsics, compiled or loaded from numba-cuda's cache.

Each measurement is a new Python process (median of ``--repeat``). The import rows run anywhere;
the first-launch rows need a GPU (``tests/downstream/cached.py``: a block sum and tiles_extras'
block_argmax): "compiled" has numba_tiles' disk cache warm and numba-cuda's empty (what a
kernel without cache=True pays in every new process), "from the cache" has both warm. Prints a
table and writes benchmarks/results/startup-DEVICE.json (DEVICE: the GPU, or cpuN on a machine without one;
``--out`` another folder).

    python benchmarks/startup.py [--repeat 7] [--out DIR] [--draft]
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _versions import add_output_arguments, cpu_device, measured_commit, versions, write_result
from _versions import device_name as name_of

ROOT = Path(__file__).resolve().parents[1]
IMPORTS = {
    "import numba.cuda": "import time; t = time.perf_counter(); from numba import cuda; print(time.perf_counter() - t)",
    "import numba_tiles (numba.cuda imported first)": "from numba import cuda; import time; t = time.perf_counter(); "
    "import numba_tiles; print(time.perf_counter() - t)",
    "import numba_tiles (from nothing)": "import time; t = time.perf_counter(); import numba_tiles; "
    "print(time.perf_counter() - t)",
    "numba-cuda's extension loader (imports numba_tiles)": (
        "from numba import cuda; from numba.cuda.core import entrypoints; import time; "
        "t = time.perf_counter(); entrypoints.init_all(); print(time.perf_counter() - t)"
    ),
}


def run(args, env=None):
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def device_name():
    try:
        from numba import cuda

        if not cuda.is_available():
            return None
        return name_of(cuda.get_current_device())
    except Exception:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    add_output_arguments(parser)
    options = parser.parse_args()
    commit = measured_commit(options)
    rows = {}
    for name, code in IMPORTS.items():
        rows[name] = statistics.median(float(run(["-c", code])) for _ in range(options.repeat))
    device = device_name()
    if device:
        work = Path(tempfile.mkdtemp(prefix="numba_tiles_startup_"))
        env = {**os.environ, "NUMBA_TILES_CACHE_DIR": str(work / "tiles"), "NUMBA_CACHE_DIR": str(work / "numba")}
        launch = ["-m", "tests.downstream.cached", "1"]
        run(launch, env)  # numba_tiles' disk cache warm from here on
        compiled, cached = [], []
        for _ in range(options.repeat):
            shutil.rmtree(work / "numba", ignore_errors=True)
            compiled.append(json.loads(run(launch, env)))
            cached.append(json.loads(run(launch, env)))
        assert all(r["correct"] for r in compiled + cached)
        assert all(r["numba_compiles"] == 0 and r["nvrtc"] == 0 for r in cached), cached
        rows["first launch, compiled (numba_tiles cache warm)"] = statistics.median(
            r["seconds_to_first_launch"] for r in compiled
        )
        rows["first launch, cache=True kernel from the cache"] = statistics.median(
            r["seconds_to_first_launch"] for r in cached
        )
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'what (new process, median of %d)' % options.repeat:<58}{'seconds':>9}")
    for name, seconds in rows.items():
        print(f"{name:<58}{seconds:>9.3f}")
    today = datetime.date.today().isoformat()
    result = {
        "date": today,
        "device": device or cpu_device(),
        "commit": commit,
        "cpus": os.cpu_count(),
        "repeat": options.repeat,
        "seconds": rows,
        "versions": versions("numba", "numba-cuda", "cuda-core"),
    }
    print(f"wrote {write_result('startup', result, options)}")


if __name__ == "__main__":
    main()
