"""Fused epilogues on the GPU: C = act(A @ B + bias) by the tile matmul in one kernel, against PyTorch.

Each case times our kernel (examples/gemm_epilogue.py's `Matmul.batched` kernel, or its `Matmul.gemm` one and
`Matmul.tile` in benchmarks/gemm_variants.py's persistent loop; the epilogue inlined into the store), PyTorch's eager
``act(matmul + bias)`` (three kernels), cuBLASLt's own fused epilogue where PyTorch reaches it
(``torch._addmm_activation(..., use_gelu=True)``: tanh-approximated GELU, not batched) and the bare product
(``torch.bmm`` / ``torch.matmul``), all in one run. The GELU is the tanh form in all three (ours:
examples/gemm_epilogue.py's ``bias_gelu_tanh``; eager: ``approximate="tanh"``), checked against eager's result
first; eager's erf form (PyTorch's default) is timed too, ``eager_erf_ms``. The batched rows also give the host's
time to queue one launch (``host_launch_ms``): by ``Matmul.launch``, which works out the launch each call, and of
the launch worked out once (``Matmul.launch_config``), as the timed ones are, and the batch's bytes at a copy's
speed (``limit_ms``: no kernel of the product runs faster; ``eager_bound``, eager's time over it: the most a kernel
can gain on eager). Prints a table and writes ``benchmarks/results/matmul_epilogue-DEVICE.json`` (the cases it
ran; ``--out`` another folder).

    PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/matmul_epilogue.py [--repeats 20] [--only relu] [--out DIR]
"""

import argparse
import datetime
import os
import sys
from pathlib import Path

import gemm_variants
from _versions import add_output_arguments, device_name, measured_commit, versions, write_result
from numba import cuda

import numba_tiles as tiles

os.environ.setdefault("NUMBA_TILES_BACKGROUND", "0")  # (its kernels are precompiled or timed: none compiles ahead)
from matmul import error, host_ms, median_ms

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from examples import gemm, gemm_epilogue  # noqa: E402


def to_numba(t):
    import torch

    return cuda.as_cuda_array(t.view(torch.int16) if t.dtype == torch.bfloat16 else t)


def batched_case(name, dtype, size, count, repeats):
    """relu(bmm(a, b) + bias[col]): ours (`Matmul.batched`; on Hopper wgmma for the bf16 128-row tiles, TMA
    one product a block for the fp16 ones), eager and the bare bmm."""
    import torch

    dtype = getattr(torch, dtype)
    a, b = (torch.randn(count, size, size, device="cuda", dtype=dtype) for _ in range(2))
    bias = torch.randn(size, device="cuda", dtype=dtype)
    c = torch.empty(count, size, size, device="cuda", dtype=dtype)
    if dtype == torch.bfloat16:
        mm = tiles.Matmul((size, size, 32), "int16", precision="bf16", stages=4)
    else:
        mm = tiles.Matmul((size, size, size), "float16", block_dim=128, stages=2)
    ops = mm.operands(to_numba(a), to_numba(b), to_numba(c))
    kernel = gemm_epilogue.make_batched(mm, gemm_epilogue.batched_bias_relu)
    extras = (to_numba(bias.float()),)
    start = lambda: gemm_variants.launcher(mm, kernel, ops, 1.0, 0.0, extras)  # noqa: E731
    eager = lambda: torch.relu(torch.bmm(a, b) + bias)  # noqa: E731
    row = measure(
        name, f"Matmul.batched {ops.implementation} {mm.shape} x {mm.stages} stages", start, c, eager, repeats
    )
    # (the host's side of a launch: mm.launch works out the launch each call, the timed launches do not)
    row["host_launch_ms"] = {
        "mm.launch": host_ms(lambda: mm.launch(kernel, ops, 1.0, 0.0, extras)),
        "configured": host_ms(start()),
    }
    print(
        f"  host time a launch: mm.launch {row['host_launch_ms']['mm.launch']:.3f} ms, configured "
        f"{row['host_launch_ms']['configured']:.3f} ms",
        flush=True,
    )
    row = finish(row, {"eager_ms": eager, "bare_ms": lambda: torch.bmm(a, b)}, repeats)
    # (the batch's bytes, A and B read and C written, at the speed of a copy in the same run: no kernel of the
    # product runs faster, so eager_bound is the most any kernel can gain on eager PyTorch)
    copy = torch.empty_like(a)
    row["limit_ms"] = median_ms(lambda: copy.copy_(a), repeats) * (a.nbytes + b.nbytes + c.nbytes) / (2 * a.nbytes)
    row["eager_bound"] = row["eager_ms"] / row["limit_ms"]
    print(f"  the bytes at a copy's speed: {row['limit_ms']:.3f} ms (eager over that: {row['eager_bound']:.2f}x)")
    return row


def large_case(name, m, n, k, repeats):
    """gelu(a @ w + bias[col]) in bf16: ours (`Matmul.gemm` on the resident grid, and `Matmul.tile` in
    benchmarks/gemm_variants.py's persistent loop and one tile a block; on Hopper our wgmma block: the fastest of
    two tiles each way; and its bare product, for the epilogue's cost), eager, cuBLASLt's fused and the bare
    product."""
    import torch

    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    extras = (to_numba(bias.float()),)
    descriptions = [tiles.Matmul((128, n, 64), "int16", precision="bf16", stages=4) for n in (128, 192)]
    eager = lambda: torch.nn.functional.gelu(a @ w + bias, approximate="tanh")  # noqa: E731
    rows, repeats = [], max(repeats // 4, 5)
    for mm in descriptions:
        for form in ("gemm", True, False):
            ops, bare_ops = (mm.operands(to_numba(a), to_numba(w), to_numba(c)) for _ in range(2))  # (a pipe each)
            if form == "gemm":
                kernel, bare = gemm_epilogue.make_whole_gemm(mm, gemm_epilogue.bias_gelu_tanh), gemm.make_whole_gemm(mm)
                start = lambda: gemm_variants.launcher(mm, kernel, ops, 1.0, 0.0, extras, grid="resident")  # noqa: E731
                launch_bare = lambda: gemm_variants.launcher(mm, bare, bare_ops, 1.0, 0.0, grid="resident")  # noqa: E731
                label = f"Matmul.gemm {ops.implementation} {mm.shape} x {mm.stages} stages"
            else:
                kernel, bare = (
                    gemm_variants.make_grouped(mm, epilogue, persistent=form)
                    for epilogue in (gemm_epilogue.bias_gelu_tanh, None)
                )
                start = lambda: gemm_variants.launch_grouped(mm, kernel, ops, 1.0, 0.0, extras)  # noqa: E731
                launch_bare = lambda: gemm_variants.launch_grouped(mm, bare, bare_ops, 1.0, 0.0)  # noqa: E731
                label = f"Matmul.tile {ops.implementation} {mm.shape} x {mm.stages} stages" + (
                    "" if form else ", a tile a block"
                )
            rows.append(
                measure(
                    name,
                    label,
                    start,
                    c,
                    eager,
                    repeats,
                    ours_bare_ms=launch_bare(),
                )
            )
    row = min(rows, key=lambda r: r["ms"])
    row["variants"] = {r["kernel"]: r["ms"] for r in rows}
    peers = {
        "eager_ms": eager,
        "eager_erf_ms": lambda: torch.nn.functional.gelu(a @ w + bias),
        "cublaslt_fused_ms": lambda: torch._addmm_activation(bias, a, w, use_gelu=True),
        "bare_ms": lambda: a @ w,
    }
    return finish(row, peers, repeats)


def measure(name, label, start, c, eager, repeats, **peers):
    """Our kernel's row: ``start()`` launches it (and returns its relaunch), checked against ``eager``, then it and
    each of ``peers`` (``key=launch``) timed."""
    import torch

    c.fill_(float("nan"))  # (every item must be written)
    launch = start()
    torch.cuda.synchronize()
    err = error(c.float(), eager().float())
    assert err < 1e-2, f"{name}: relative error {err:.2e} against eager PyTorch"
    return timed({"case": name, "kernel": label, "error": err}, {"ms": launch, **peers}, repeats)


def timed(row, launches, repeats):
    """``row`` with the median time of each of ``launches`` ({key: launch}) under its key."""
    row.update((key, median_ms(launch, repeats)) for key, launch in launches.items())
    return row


def finish(row, peers, repeats):
    """``row`` with the peers' times ({key: launch}) and the ratios, printed."""
    timed(row, peers, repeats)
    row["speedup_vs_eager"] = row["eager_ms"] / row["ms"]
    row["ratio_vs_bare"] = row["bare_ms"] / row["ms"]
    if "cublaslt_fused_ms" in row:
        row["ratio_vs_cublaslt_fused"] = row["cublaslt_fused_ms"] / row["ms"]
    print(
        f"  {row['case']}: {row['ms']:.3f} ms ({row['kernel']}), eager {row['eager_ms']:.3f}, bare "
        f"{row['bare_ms']:.3f}"
        + (f", cuBLASLt fused {row['cublaslt_fused_ms']:.3f}" if "cublaslt_fused_ms" in row else "")
        + (f", ours bare {row['ours_bare_ms']:.3f}" if "ours_bare_ms" in row else ""),
        flush=True,
    )
    return row


CASES = [
    ("batched bf16 128^3 x 4096 relu(bias)", batched_case, ("bfloat16", 128, 4096)),
    ("batched fp16 64^3 x 16384 relu(bias)", batched_case, ("float16", 64, 16384)),
    ("bf16 8192^3 gelu(bias)", large_case, (8192, 8192, 8192)),
    ("bf16 8192x8192x1024 gelu(bias)", large_case, (8192, 8192, 1024)),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--only", default="", help="only the cases whose name holds this text")
    add_output_arguments(parser)
    args = parser.parse_args()
    commit = measured_commit(args)
    rows = [case(name, *sizes, args.repeats) for name, case, sizes in CASES if args.only in name]
    device, date = device_name(cuda.get_current_device()), datetime.date.today().isoformat()
    print(f"fused epilogues vs PyTorch, median of {args.repeats} ({device}, {date}, commit {commit})")
    print(f"{'case':<40}{'ms':>8}{'eager':>8}{'fused':>8}{'bare':>8}{'vs eager':>9}{'vs fused':>9}{'vs bare':>8}")
    for r in rows:
        fused = r.get("cublaslt_fused_ms")
        print(
            f"{r['case']:<40}{r['ms']:>8.3f}{r['eager_ms']:>8.3f}{fused or float('nan'):>8.3f}{r['bare_ms']:>8.3f}"
            f"{r['speedup_vs_eager']:>9.2f}{r.get('ratio_vs_cublaslt_fused', float('nan')):>9.2f}"
            f"{r['ratio_vs_bare']:>8.2f}"
        )
    path = write_result(
        "matmul_epilogue",
        {
            "device": device,
            "date": date,
            "commit": commit,
            "repeats": args.repeats,
            "versions": versions(
                "numba", "numba-cuda", "torch", "nvidia-mathdx", "nvidia-libmathdx-cu13", "nvidia-cuda-nvrtc"
            ),
            "rows": rows,
        },
        args,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
