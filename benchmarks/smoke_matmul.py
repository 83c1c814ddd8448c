"""Each implementation of Matmul.tile and Matmul.batched once against NumPy (a quick GPU check).

    PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/smoke_matmul.py
"""

import sys
import time
from pathlib import Path

import numpy as np
from numba import cuda

import numba_tiles as tiles

from gemm_variants import bf16_bits, values

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from examples import gemm  # noqa: E402

rng = np.random.default_rng()
cases = [("tile", tiles.Matmul((128, 128, 64), "float16"), "float32", (1000, 1104, 904)),
         ("tile", tiles.Matmul((64, 64, 32), "float32"), "float32", (300, 260, 100)),
         ("tile", tiles.Matmul((128, 128, 64), "int16", precision="bf16"), "int16", (500, 704, 296)),
         ("batched", tiles.Matmul((64, 64, 32), "float32", stages=4), "float32", (1000, 60, 50, 64)),
         ("batched", tiles.Matmul((64, 64, 64), "float16", stages=2), "float16", (1000, 64, 64, 64)),
         ("batched", tiles.Matmul((128, 128, 32), "int16", precision="bf16", stages=4), "int16", (500, 128, 128, 128))]
for form, mm, c_dtype, sizes in cases:
    bf, kind = mm.precision == "bf16", "bf16" if c_dtype == "int16" else None
    lead, (m, n, k) = sizes[:-3], sizes[-3:]
    a, b, c = (rng.standard_normal((*lead, *s)).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    a, b = (bf16_bits(a), bf16_bits(b)) if bf else (a.astype(mm.dtype), b.astype(mm.dtype))
    c = bf16_bits(c) if c_dtype == "int16" else c.astype(c_dtype)
    kernel = gemm.make_tile_gemm(mm) if form == "tile" else gemm.make_batched(mm)
    start = time.time()
    d = [cuda.to_device(x) for x in (a, b, c)]
    ops = mm.operands(*d)
    mm.launch(kernel, ops, 0.75, -0.5)
    expected = 0.75 * (values(a, mm.precision) @ values(b, mm.precision)) - 0.5 * values(c, kind)
    err = np.linalg.norm(values(d[2].copy_to_host(), kind) - expected) / np.linalg.norm(expected)
    print(f"{form:8} {ops.implementation:10} {mm.dtype:8} -> {c_dtype:8} {sizes}: error {err:.1e} "
          f"({time.time() - start:.1f} s)", flush=True)
