"""Each implementation of Matmul.tile and Matmul.batched once against NumPy (a quick GPU check)."""
import sys, time
from pathlib import Path
import numpy as np
from numba import cuda
import numba_tiles as tiles
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from examples import gemm

rng = np.random.default_rng()
cases = [("tile", tiles.Matmul((128, 128, 64), "float16"), "float32", (1000, 1104, 904)),
         ("tile", tiles.Matmul((64, 64, 32), "float32"), "float32", (300, 260, 100)),
         ("tile", tiles.Matmul((128, 128, 64), "int16", precision="bf16"), "int16", (500, 704, 296)),
         ("batched", tiles.Matmul((64, 64, 32), "float32", stages=4), "float32", (1000, 60, 50, 64)),
         ("batched", tiles.Matmul((64, 64, 64), "float16", stages=2), "float16", (1000, 64, 64, 64)),
         ("batched", tiles.Matmul((128, 128, 32), "int16", precision="bf16", stages=4), "int16", (500, 128, 128, 128))]
for form, mm, c_dtype, sizes in cases:
    bf = mm.precision == "bf16"
    if form == "tile":
        m, n, k = sizes; sa, sb, sc = (m, k), (k, n), (m, n)
    else:
        cnt, m, n, k = sizes; sa, sb, sc = (cnt, m, k), (cnt, k, n), (cnt, m, n)
    a = rng.standard_normal(sa).astype(np.float32); b = rng.standard_normal(sb).astype(np.float32)
    a, b = (gemm.bf16_bits(a), gemm.bf16_bits(b)) if bf else (a.astype(mm.dtype), b.astype(mm.dtype))
    c = rng.standard_normal(sc).astype(np.float32)
    c = gemm.bf16_bits(c) if c_dtype == "int16" else c.astype(c_dtype)
    kernel = gemm.make_tile_gemm(mm) if form == "tile" else gemm.make_batched(mm)
    t = time.time()
    d = [cuda.to_device(x) for x in (a, b, c)]
    ops = mm.operands(*d)
    mm.launch(kernel, ops, 0.75, -0.5)
    out = d[2].copy_to_host()
    prec = "bf16" if bf else None
    exp = 0.75 * (gemm.values(a, prec) @ gemm.values(b, prec)) - 0.5 * gemm.values(c, "bf16" if c_dtype == "int16" else None)
    got = gemm.values(out, "bf16" if c_dtype == "int16" else None)
    err = np.linalg.norm(got - exp) / np.linalg.norm(exp)
    print(f"{form:8} {ops.implementation:10} {mm.dtype:8} -> {c_dtype:8} {sizes}: error {err:.1e} ({time.time() - t:.1f} s)", flush=True)
