"""`tiles.matmul` on shared tiles: examples/gemm.py's GEMM (`tile_load`, `tiles.matmul`, `tile_store`, one tile of C
a block) by the block's warps on MMA atoms (the default on sm_80 and later) against the same kernel by cuBLASDx
(``NUMBA_TILES_MATMUL_ATOMS=0``), with torch.matmul beside them, in one run. Each result is checked against
torch's first. Prints a table; writes benchmarks/results/matmul_shared-DEVICE.json (``--out`` another folder),
rows of ``{"case", "ms", "tflops", "cublasdx_ms", "ratio" (cuBLASDx's time over ours), "peer_ms"}``. Needs a GPU.

    PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/matmul_shared.py [--size 4096] [--repeats 15] [--out DIR]
"""

import argparse
import datetime
import os
import sys
from pathlib import Path

from _timing import median_ms
from _versions import add_output_arguments, device_name, measured_commit, versions, write_result

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import gemm  # noqa: E402  (examples/gemm.py: the kernel measured)

from numba_tiles._matmul import mma_tiles  # noqa: E402

# case (tile x threads): (A's and B's dtype, C's, precision, tile, threads, alignment, the size's divisor)
CASES = {
    "fp16 64x64x32 x 128": ("float16", "float32", None, (64, 64, 32), 128, None, 1),
    "fp16 64x64x32 x 128 aligned": ("float16", "float32", None, (64, 64, 32), 128, 16, 1),
    "fp16 128x64x32 x 256 aligned": ("float16", "float32", None, (128, 64, 32), 256, 16, 1),
    "bf16 64x64x32 x 128 aligned": ("int16", "float32", "bf16", (64, 64, 32), 128, 16, 1),
    "tf32 64x64x16 x 128 aligned": ("float32", "float32", "tf32", (64, 64, 16), 128, 16, 1),
    "fp64 32x32x16 x 128": ("float64", "float64", None, (32, 32, 16), 128, None, 2),
}


def operands(torch, dtype, precision, size):
    """A and B (size x size) as the kernel takes them (bf16 as its bits) and as torch.matmul takes them."""
    a, b = (torch.randn(size, size, device="cuda") for _ in range(2))
    if precision == "bf16":
        a, b = a.bfloat16(), b.bfloat16()
        return (a.view(torch.int16), b.view(torch.int16)), (a, b)
    a, b = a.to(getattr(torch, dtype)), b.to(getattr(torch, dtype))
    return (a, b), (a, b)


def main():
    import torch
    from numba import cuda

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096, help="M = N = K (fp64's is half)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--cases", default=",".join(CASES), help="a comma-separated subset of: " + ", ".join(CASES))
    add_output_arguments(parser)
    args = parser.parse_args()
    commit = measured_commit(args)
    device = device_name(cuda.get_current_device())
    rows = []
    for case in [c for c in args.cases.split(",") if c]:
        dtype, acc, precision, tile, block, alignment, scale = CASES[case]
        size = args.size // scale
        (a, b), (peer_a, peer_b) = operands(torch, dtype, precision, size)
        reference = peer_a.double() @ peer_b.double()
        c = torch.zeros(size, size, device="cuda", dtype=getattr(torch, acc))
        grid = ((size + tile[1] - 1) // tile[1], (size + tile[0] - 1) // tile[0])
        flops = 2 * size**3
        times = {}
        for form, switch in (("atoms", "1"), ("cublasdx", "0")):
            os.environ[mma_tiles.ENABLED] = switch  # read when the kernel is compiled, at its first launch
            kernel = gemm.make_gemm(tile, dtype, acc, block, ("C", "C"), precision, alignment)
            da, db, dc = (cuda.as_cuda_array(t) for t in (a, b, c))

            def launch(kernel=kernel, da=da, db=db, dc=dc):
                kernel[grid, block](da, db, dc, 1.0, 0.0)

            c.fill_(float("nan"))
            launch()
            torch.cuda.synchronize()
            error = float((c.double() - reference).norm() / reference.norm())
            assert error < (1e-12 if acc == "float64" else 1e-2), f"{case}, {form}: relative error {error:.2e}"
            times[form] = median_ms(launch, args.repeats)
        os.environ.pop(mma_tiles.ENABLED)
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        peer_ms = median_ms(lambda: torch.matmul(peer_a, peer_b), args.repeats)
        rows.append(
            {
                "case": f"{case}, {size}^3",
                "ms": times["atoms"],
                "tflops": flops / times["atoms"] / 1e9,
                "cublasdx_ms": times["cublasdx"],
                "ratio": times["cublasdx"] / times["atoms"],
                "peer": "torch.matmul",
                "peer_ms": peer_ms,
            }
        )
    print(f"tiles.matmul on shared tiles, examples/gemm.py's kernel ({device}, commit {commit})")
    print(f"{'case':<52}{'atoms TFLOP/s':>14}{'cuBLASDx':>10}{'atoms/cuBLASDx':>16}{'torch.matmul':>14}")
    for r in rows:
        flops = r["tflops"] * r["ms"] * 1e9
        print(
            f"{r['case']:<52}{r['tflops']:>14.1f}{flops / r['cublasdx_ms'] / 1e9:>10.1f}{r['ratio']:>15.2f}x"
            f"{flops / r['peer_ms'] / 1e9:>14.1f}"
        )
    record = {
        "device": device,
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "repeats": args.repeats,
        "versions": versions("numba", "numba-cuda", "torch"),
        "rows": rows,
    }
    print(f"wrote {write_result('matmul_shared', record, args)}")


if __name__ == "__main__":
    main()
