"""Segmented sum with ``tiles.block_sum``: one thread block sums one segment of a long array.

On a machine with a GPU it checks the result against NumPy and prints the bandwidth. Without
one it runs the same kernel on Numba's CUDA simulator at a small size, then cross-compiles it
for sm_90 and reports what the cubin holds.

    python examples/segmented_sum.py
"""

import os
import subprocess
import sys
import time

import numpy as np
from numba import cuda, float32

import numba_tiles as tiles

TPB = 256  # threads per block: a compile-time constant of the intrinsic


@cuda.jit
def segment_sums(x, seg_len, out):
    start = cuda.blockIdx.x * seg_len
    acc = float32(0)
    for j in range(cuda.threadIdx.x, seg_len, TPB):
        acc += x[start + j]
    total = tiles.block_sum(acc, block_dim=TPB)  # valid in thread 0
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = total


# What `python -m numba_tiles precompile examples.segmented_sum` compiles into the cache.
NUMBA_TILES_PRECOMPILE = {segment_sums: ["void(float32[:], int64, float32[:])"]}


def check(x, seg_len, out):
    want = x.reshape(-1, seg_len).astype(np.float64).sum(axis=1)
    err = np.abs(out - want).max() / np.abs(x).reshape(-1, seg_len).sum(axis=1).max()
    assert err < 1e-5, f"segment sums differ from NumPy: relative error {err:.2e}"
    return err


def on_gpu(segments=32768, seg_len=8192, repeats=20):
    rng = np.random.default_rng()
    x = rng.standard_normal(segments * seg_len).astype(np.float32)
    d_x, d_out = cuda.to_device(x), cuda.device_array(segments, np.float32)
    segment_sums[segments, TPB](d_x, seg_len, d_out)  # compile and warm up
    cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = cuda.event(), cuda.event()
        start.record()
        segment_sums[segments, TPB](d_x, seg_len, d_out)
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop) * 1e-3)
    err = check(x, seg_len, d_out.copy_to_host())
    seconds = float(np.median(times))
    name = cuda.get_current_device().name
    name = name.decode() if isinstance(name, bytes) else name
    print(f"device: {name}")
    print(f"segments: {segments} x {seg_len} float32 ({x.nbytes / 2**20:.0f} MiB), max relative error {err:.1e}")
    print(f"median time: {seconds * 1e3:.3f} ms  bandwidth: {x.nbytes / seconds / 1e9:.0f} GB/s")
    print(f"NVRTC runs in this process: {tiles.cache.stats()['nvrtc']} (0 means the LTO-IR came from the cache)")


def on_simulator(segments=3, seg_len=1000):
    x = np.random.default_rng().standard_normal(segments * seg_len).astype(np.float32)
    out = np.zeros(segments, np.float32)
    segment_sums[segments, TPB](x, seg_len, out)
    err = check(x, seg_len, out)
    print(f"simulator: {segments} segments x {seg_len} float32 match NumPy (max relative error {err:.1e})")


def cross_compile(arch="sm_90"):
    start = time.perf_counter()
    cubin = tiles.compile(segment_sums, NUMBA_TILES_PRECOMPILE[segment_sums][0], arch=arch)
    seconds = time.perf_counter() - start
    nvrtc = tiles.cache.stats()["nvrtc"]
    print(
        f"cross-compiled for {arch} with no GPU: {len(cubin)} bytes of cubin in {seconds:.1f} s "
        f"({nvrtc} NVRTC run(s); 0 means the LTO-IR came from the cache)"
    )
    from cuda.pathfinder import find_nvidia_binary_utility

    nvdisasm = find_nvidia_binary_utility("nvdisasm")
    if nvdisasm:
        path = "segment_sums.cubin"
        with open(path, "wb") as f:
            f.write(cubin)
        sass = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True, check=True).stdout
        os.remove(path)
        count = {op: sass.count(op) for op in ("SHFL", "REDUX", "BAR.SYNC", "CALL", "LDL", "STL")}
        print("SASS instruction counts:", ", ".join(f"{k} {v}" for k, v in count.items()))


if __name__ == "__main__":
    if "--simulate" in sys.argv:
        on_simulator()
    elif cuda.is_available():
        on_gpu()
    else:
        print("no GPU found: running on Numba's CUDA simulator, then cross-compiling")
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
        subprocess.run([sys.executable, __file__, "--simulate"], env=env, check=True)
        cross_compile()
