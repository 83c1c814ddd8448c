"""Batches of small dense solves in kernels (`tiles.Solver`, cuSOLVERDx) against PyTorch's batched solvers, in one run.

Each case solves a batch of independent systems with one right-hand side: the numba_tiles kernel is
examples/batched_cholesky.py's loop (each block stages a group of ``batches_per_block`` problems in shared memory,
calls ``execute`` once and writes the solutions back), for the function of the case; the peer is what a PyTorch user
calls on the same batch, on the GPU:

- ``"posv f32 32 x 65536"``, ``"posv f64 64 x 16384"``: Cholesky factor and solve, against
  ``torch.cholesky_solve(b, torch.linalg.cholesky(a))``. Target: >= 10x torch.
- ``"gesv f32 32 x 65536"``: LU with partial pivoting, against ``torch.linalg.solve``. Target: >= 5x.
- ``"gels f32 64x32 x 16384"``: least squares by QR, against ``torch.linalg.lstsq``. Target: >= 5x.

Each case runs a few shapes of the kernel (threads a block, problems a block, A's rows padded or not, either
arrangement in shared memory) and reports the fastest, all in the JSON; results are checked against
the peer's first. The limit shown is a copy of the batch's bytes (A and B read, X written) at the speed of
``Tensor.copy_`` measured in the same run. Each time is the median of ``--repeats`` trials
(benchmarks/_timing.py). Writes benchmarks/results/solvers-DEVICE.json and prints a table last.

    python benchmarks/solvers.py [--repeats 9] [--out DIR] [--draft]

On the GPU machines (after ``make gpu-site``): ``PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/solvers.py``.
"""

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np
from _timing import median_ms
from _versions import add_output_arguments, device_name, measured_commit, versions, write_result
from numba import cuda

import numba_tiles as tiles

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

# The shapes of the kernel a case tries, (threads, batches_per_block, leading_dimension, arrangement) of the
# description (None: its default); the kernel reads and writes C-ordered problems whatever the arrangement in shared
# memory (examples/batched_cholesky.py's group kernel)
ROW, COL = (None, None, None, "row_major"), (None, None, None, "col_major")
ROW_PADDED, COL_PADDED = (None, None, "padded", "row_major"), (None, None, "padded", "col_major")
# case: (function, (m, n), dtype, problems, target ratio, shapes)
CASES = {
    "posv f32 32 x 65536": (
        "posv",
        (32, 32),
        "float32",
        65536,
        10,
        [ROW, ROW_PADDED, COL_PADDED, (128, 4, None, "row_major"), (128, 4, "padded", "row_major")],
    ),
    "posv f64 64 x 16384": (
        "posv",
        (64, 64),
        "float64",
        16384,
        10,
        [ROW, ROW_PADDED, COL_PADDED, (64, 1, "padded", "row_major"), (64, 1, "padded", "col_major")],
    ),
    "gesv f32 32 x 65536": (
        "gesv",
        (32, 32),
        "float32",
        65536,
        5,
        [ROW, ROW_PADDED, COL, COL_PADDED, (64, 2, "padded", "row_major"), (64, 2, "padded", "col_major")],
    ),
    "gels f32 64x32 x 16384": (
        "gels",
        (64, 32),
        "float32",
        16384,
        5,
        [ROW, ROW_PADDED, COL_PADDED, (32, 2, "padded", "row_major")],
    ),
}


def problems_of(function, m, n, dtype, count, rng):
    """(A, B) for ``count`` problems: SPD for posv, well conditioned otherwise; B one column (gels: m rows)."""
    g = rng.standard_normal((count, m, n)).astype(dtype)
    if function == "posv":
        a = g @ g.transpose(0, 2, 1) + n * np.eye(n, dtype=dtype)
    elif function == "gesv":
        a = g + 2 * np.sqrt(n) * np.eye(n, dtype=dtype)
    else:
        a = g
    return np.ascontiguousarray(a, dtype), rng.standard_normal((count, m, 1)).astype(dtype)


def case(name, repeats):
    import batched_cholesky  # (the example's kernel is the one timed)
    import torch

    function, (m, n), dtype, count, target, shapes = CASES[name]
    a_host, b_host = problems_of(function, m, n, dtype, count, np.random.default_rng(2026))
    a, b = torch.from_numpy(a_host).cuda(), torch.from_numpy(b_host).cuda()
    if function == "posv":

        def peer():
            return torch.cholesky_solve(b, torch.linalg.cholesky(a))

        peer_name = "torch.cholesky_solve(b, torch.linalg.cholesky(a))"
    elif function == "gesv":

        def peer():
            return torch.linalg.solve(a, b)

        peer_name = "torch.linalg.solve"
    else:

        def peer():
            return torch.linalg.lstsq(a, b).solution

        peer_name = "torch.linalg.lstsq"
    want = peer()
    scale = want.abs().max().item()
    tried = []
    for threads, batches, leading, arrangement in shapes:
        s = tiles.Solver(
            function,
            (m, n),
            dtype,
            block_dim=threads,
            batches_per_block=batches,
            arrangement=arrangement,
            leading_dimension=leading,
        )
        kernel = batched_cholesky.group_kernel(s)
        x = torch.empty_like(b)
        info = cuda.device_array(count, np.int32)
        a_flat = cuda.as_cuda_array(a.reshape(-1))
        x_flat = cuda.as_cuda_array(x.reshape(-1))

        def ours(s=s, kernel=kernel, x=x, x_flat=x_flat, a_flat=a_flat, info=info):
            x.copy_(b)  # (solved in place: each trial solves the same B, the copy counted in its time)
            s.launch(kernel, a_flat, x_flat, info, problems=count)

        ours()
        cuda.synchronize()
        error = ((x[:, :n] - want[:, :n]).abs().max() / scale).item()
        assert error < (1e-3 if dtype == "float32" else 1e-9), (name, s, error)
        assert not info.copy_to_host().any() or function == "gels", name
        tried.append(
            {
                "threads": s.threads,
                "batches_per_block": s.batches_per_block,
                "leading_dimension": s.leading_dimension,
                "arrangement": s.arrangement,
                "ms": median_ms(ours, repeats, 3),
                "error": error,
            }
        )
    best = min(tried, key=lambda r: r["ms"])
    peer_ms = median_ms(peer, repeats, 3)
    copy = torch.empty_like(a)
    copy_ms = median_ms(lambda: copy.copy_(a), repeats, 3)
    moved = a.nbytes + 2 * b.nbytes
    return {
        "case": name,
        "ms": best["ms"],
        "threads": best["threads"],
        "batches_per_block": best["batches_per_block"],
        "leading_dimension": best["leading_dimension"],
        "arrangement": best["arrangement"],
        "error_vs_peer": best["error"],
        "peer": peer_name,
        "peer_ms": peer_ms,
        "ratio": peer_ms / best["ms"],
        "limit_ms": copy_ms * moved / (2 * a.nbytes),  # (the batch's bytes at the copy's speed)
        "target": f">= {target}x torch",
        "met": peer_ms / best["ms"] >= target and not any("wrong" in r for r in tried),
        "shapes": tried,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    add_output_arguments(parser)
    args = parser.parse_args()
    commit = measured_commit(args)
    name = device_name(cuda.get_current_device())
    rows = [case(c, args.repeats) for c in args.cases]
    record = {
        "date": datetime.date.today().isoformat(),
        "device": name,
        "commit": commit,
        "repeats": args.repeats,
        "versions": versions("numba", "numba-cuda", "torch"),
        "rows": rows,
    }
    path = write_result("solvers", record, args)
    print(f"\n{name}, commit {commit}, median of {args.repeats}; wrote {path}")
    print(f"{'case':<24}{'ms':>8}{'limit':>8}{'peer ms':>9}{'ratio':>8}  {'shape':<18}target")
    for r in rows:
        verdict = "met" if r["met"] else "NOT MET"
        lda = r["leading_dimension"][0]
        shape = f"{r['threads']}x{r['batches_per_block']} lda {lda}{' col' if r['arrangement'] == 'col_major' else ''}"
        print(
            f"{r['case']:<24}{r['ms']:>8.3f}{r['limit_ms']:>8.3f}{r['peer_ms']:>9.3f}{r['ratio']:>7.1f}x  {shape:<18}"
            f"{r['target']}: {verdict}"
        )
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
