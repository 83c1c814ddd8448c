"""Fused epilogues on the GPU: C = act(A @ B + bias) by the tile matmul in one kernel, against PyTorch.

Each case times our kernel (examples/gemm_epilogue.py's, the epilogue inlined into the store), PyTorch's
eager ``act(matmul + bias)`` (three kernels), cuBLASLt's own fused epilogue where PyTorch reaches it
(``torch._addmm_activation(..., use_gelu=True)``: tanh-approximated GELU, not batched) and the bare product
(``torch.bmm`` / ``torch.matmul``), all in one run. Ours computes the erf GELU, as eager PyTorch does, and is
checked against eager's result first. Prints a table and writes ``benchmarks/results/matmul_epilogue-DATE.json``.

    PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/matmul_epilogue.py [--repeats 20] [--only relu] [--label L]
"""

import argparse
import datetime
import json
import platform
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from numba import cuda

import numba_tiles as tiles

from _versions import commit as git_commit, device_name, versions
from matmul import error, median_ms

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from examples import gemm, gemm_epilogue  # noqa: E402


def to_numba(t):
    import torch

    return cuda.as_cuda_array(t.view(torch.int16) if t.dtype == torch.bfloat16 else t)


def batched_case(name, dtype, size, count, repeats):
    """relu(bmm(a, b) + bias[col]): ours, eager and the bare bmm."""
    import torch

    dtype = getattr(torch, dtype)
    a, b = (torch.randn(count, size, size, device="cuda", dtype=dtype) for _ in range(2))
    bias = torch.randn(size, device="cuda", dtype=dtype)
    c = torch.empty(count, size, size, device="cuda", dtype=dtype)
    extras = (to_numba(bias.float()),)
    if dtype == torch.bfloat16:  # PipelineMatmul.batched: warp-specialized TMA and wgmma
        mm = tiles.PipelineMatmul((size, size, 32), "int16", precision="bf16", c_dtype="int16", stages=4)
        kernel = gemm_epilogue.make_hopper_batched(mm, gemm_epilogue.batched_bias_relu)
        start = lambda: gemm.run_hopper_batched(mm, kernel, to_numba(a), to_numba(b), to_numba(c),  # noqa: E731
                                                1.0, 0.0, extras)
        label = f"PipelineMatmul.batched {mm.shape} x {mm.stages} stages"
    else:  # Matmul.batched_tma, one product a block
        mm = tiles.Matmul((size, size, size), "float16", block_dim=128)
        kernel = gemm_epilogue.make_batched(mm, gemm_epilogue.batched_bias_relu, stages=2, tma=True, c="float16")
        start = lambda: gemm.run_batched(mm, kernel, to_numba(a), to_numba(b), to_numba(c), 1.0, 0.0,  # noqa: E731
                                         extras, per_block=1)
        label = f"Matmul.batched_tma {mm.shape} x 2 stages"
    eager = lambda: torch.relu(torch.bmm(a, b) + bias)  # noqa: E731
    return finish(measure(name, label, start, c, eager, {}, repeats),
                  {"eager_ms": eager, "bare_ms": lambda: torch.bmm(a, b)}, repeats)


def large_case(name, m, n, k, repeats):
    """gelu(a @ w + bias[col]) in bf16: ours (PipelineMatmul.tile, persistent: the fastest of two tiles; and its
    bare product, for the epilogue's cost), eager, cuBLASLt's fused and the bare product."""
    import torch

    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    extras = (to_numba(bias.float()),)
    pipelines = [tiles.PipelineMatmul(shape, "int16", precision="bf16", c_dtype="int16", stages=stages)
                 for shape, stages in (((128, 128, 64), 2), ((128, 256, 64), 3))]
    with ThreadPoolExecutor(len(pipelines)) as pool:  # (libmathdx makes them side by side)
        list(pool.map(lambda mm: mm.shared_memory_bytes, pipelines))
    eager = lambda: torch.nn.functional.gelu(a @ w + bias)  # noqa: E731
    rows = []
    for mm in pipelines:
        kernel, bare = gemm_epilogue.make_hopper_gemm(mm, gemm_epilogue.bias_gelu), gemm.make_hopper_gemm(mm)
        args = (to_numba(a), to_numba(w), to_numba(c), 1.0, 0.0)
        start = lambda: gemm.run_hopper(mm, kernel, *args, extras)  # noqa: E731
        rows.append(measure(name, f"PipelineMatmul.tile {mm.shape} x {mm.stages} stages", start, c, eager,
                            {"ours_bare_ms": gemm.run_hopper(mm, bare, *args)}, max(repeats // 4, 5)))
    row = min(rows, key=lambda r: r["ms"])
    row["variants"] = {r["kernel"]: r["ms"] for r in rows}
    peers = {"eager_ms": eager, "cublaslt_fused_ms": lambda: torch._addmm_activation(bias, a, w, use_gelu=True),
             "bare_ms": lambda: a @ w}
    return finish(row, peers, max(repeats // 4, 5))


def measure(name, label, start, c, eager, peers, repeats):
    """Our kernel's row: ``start()`` launches it (and returns its relaunch), checked against ``eager``, timed,
    then each of ``peers`` ({key: launch}) timed."""
    import torch

    c.fill_(float("nan"))  # (every item must be written)
    launch = start()
    torch.cuda.synchronize()
    err = error(c.float(), eager().float())
    assert err < 1e-2, f"{name}: relative error {err:.2e} against eager PyTorch"
    row = {"case": name, "kernel": label, "ms": median_ms(launch, repeats), "error": err}
    for key, peer in peers.items():
        row[key] = median_ms(peer, repeats)
    return row


def finish(row, peers, repeats):
    """``row`` with the peers' times ({key: launch}) and the ratios."""
    for key, peer in peers.items():
        row[key] = median_ms(peer, repeats)
    row["speedup_vs_eager"] = row["eager_ms"] / row["ms"]
    row["ratio_vs_bare"] = row["bare_ms"] / row["ms"]
    if "cublaslt_fused_ms" in row:
        row["ratio_vs_cublaslt_fused"] = row["cublaslt_fused_ms"] / row["ms"]
    print(f"  {row['case']}: {row['ms']:.3f} ms ({row['kernel']}), eager {row['eager_ms']:.3f}, bare "
          f"{row['bare_ms']:.3f}" + (f", cuBLASLt fused {row['cublaslt_fused_ms']:.3f}" if "cublaslt_fused_ms" in row
                                     else "") + (f", ours bare {row['ours_bare_ms']:.3f}" if "ours_bare_ms" in row
                                                 else ""), flush=True)
    return row


CASES = [("batched bf16 128^3 x 4096 relu(bias)", batched_case, ("bfloat16", 128, 4096)),
         ("batched fp16 64^3 x 16384 relu(bias)", batched_case, ("float16", 64, 16384)),
         ("bf16 8192^3 gelu(bias)", large_case, (8192, 8192, 8192)),
         ("bf16 8192x8192x1024 gelu(bias)", large_case, (8192, 8192, 1024))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--only", default="", help="only the cases whose name holds this text")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    rows = [case(name, *sizes, args.repeats) for name, case, sizes in CASES if args.only in name]
    device, date, commit = device_name(cuda.get_current_device()), datetime.date.today().isoformat(), git_commit()
    print(f"fused epilogues vs PyTorch, median of {args.repeats} ({device}, {date}, commit {commit})")
    print(f"{'case':<40}{'ms':>8}{'eager':>8}{'fused':>8}{'bare':>8}{'vs eager':>9}{'vs fused':>9}{'vs bare':>8}")
    for r in rows:
        fused = r.get("cublaslt_fused_ms")
        print(f"{r['case']:<40}{r['ms']:>8.3f}{r['eager_ms']:>8.3f}{fused or float('nan'):>8.3f}{r['bare_ms']:>8.3f}"
              f"{r['speedup_vs_eager']:>9.2f}{r.get('ratio_vs_cublaslt_fused', float('nan')):>9.2f}"
              f"{r['ratio_vs_bare']:>8.2f}")
    record = {"benchmark": "matmul_epilogue", "date": date, "device": device, "commit": commit, "label": args.label,
              "python": platform.python_version(), "repeats": args.repeats,
              "versions": versions("numba", "numba-cuda", "torch", "nvidia-mathdx", "nvidia-libmathdx-cu13",
                                  "nvidia-cuda-nvrtc"), "rows": rows}
    path = ROOT / "benchmarks" / "results" / (f"matmul_epilogue-{date}" + (f"-{args.label}" if args.label else "")
                                              + ".json")
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
