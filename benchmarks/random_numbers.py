"""Random numbers drawn in kernels (`tiles.Random`, cuRANDDx's Philox) against PyTorch's generators, in one run.

Three cases, each numba_tiles kernel written as docs/guide/random.md teaches (a Philox subsequence a thread; the fills
by ``Random.fill`` from a grid of four times the resident blocks, a 16-byte store a draw):

- ``"uniform f32 1GiB"``: 2^28 float32 on (0, 1] into one array, against ``Tensor.uniform_`` (what ``torch.rand``
  fills with); the limit is a fill of the same bytes (``Tensor.fill_``). Target: >= 90% of the fill.
- ``"normal f32 1GiB"``: 2^28 normal float32, against ``Tensor.normal_`` (``torch.randn``'s). Target: >= 1.5x torch.
- ``"monte carlo pi 2^32"``: examples/monte_carlo.py (2^32 points drawn, counted and reduced in one kernel, no
  sample stored), against torch drawing 2^28 points at a time (``torch.rand``) and counting them. Target: >= 5x.

Each contender's values are checked first (the draws' mean and spread; pi within 5 standard errors). Each time is the
median of ``--repeats`` trials, a trial being launches queued behind a sleep kernel between two CUDA events on the
legacy default stream, so the host's launch time stays hidden. Writes benchmarks/results/random-DEVICE.json and
prints a table last. (Named so, not random.py: run as a script, its folder comes first on sys.path, where a random.py
would stand for the standard library's module.)

    python benchmarks/random_numbers.py [--repeats 9] [--out DIR] [--draft]

On the GPU machines (after ``make gpu-site``): ``PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/random_numbers.py``.
"""

import argparse
import datetime
import math
import sys
from pathlib import Path

import numpy as np
from _timing import median_ms
from _versions import add_output_arguments, device_name, measured_commit, versions, write_result
from numba import cuda, uint64

import numba_tiles as tiles

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
VALUES = 2**28  # float32 values of the fills: 1 GiB
TPB = 256
TARGETS = {
    "uniform f32 1GiB": (">= 90% of the fill", lambda r: r["gbs"] >= 0.9 * r["limit_gbs"]),
    "normal f32 1GiB": (">= 1.5x torch", lambda r: r["ratio"] >= 1.5),
    "monte carlo pi 2^32": (">= 5x torch", lambda r: r["ratio"] >= 5),
}


def fill_kernel(rng):
    """``out`` filled by ``rng.fill``, thread ``t`` of the grid at subsequence ``t``: its draws are packs ``t``, ``t +
    threads``, ... of ``out``, each one 16-byte store."""

    @cuda.jit
    def fill(out, seed):
        state = cuda.local.array(rng.state_size, uint64)
        rng.init(state, seed, cuda.grid(1))
        rng.fill(state, out)

    return fill


def fill_case(name, distribution, peer_name, torch_fill, repeats):
    import torch

    rng = tiles.Random("philox", distribution, "float32")
    kernel = fill_kernel(rng)
    out = torch.empty(VALUES, device="cuda")
    view = cuda.as_cuda_array(out)
    # (four times the blocks the GPU runs at once: on an H100 the normal fill ran fastest so, ahead of all of them
    # once and of a power of two of them; docs/notes/random-fills.md)
    grid = 4 * tiles.resident_blocks(kernel, TPB, view, np.uint64(1))

    def ours():
        kernel[grid, TPB](view, np.uint64(2026))

    ours()
    cuda.synchronize()
    mean, std = (0.5, math.sqrt(1 / 12)) if distribution == "uniform" else (0.0, 1.0)
    for values in (out, torch_fill(torch.empty_like(out))):
        got_mean, got_std = values.mean().item(), values.std().item()
        assert abs(got_mean - mean) < 1e-3 and abs(got_std - std) < 1e-3, (name, got_mean, got_std)
    ms = median_ms(ours, repeats, 3)
    peer = torch.empty_like(out)
    peer_ms = median_ms(lambda: torch_fill(peer), repeats, 3)
    limit_ms = median_ms(lambda: peer.fill_(1.0), repeats, 3)
    nbytes = out.nbytes
    return {
        "case": name,
        "ms": ms,
        "gbs": nbytes / ms / 1e6,
        "peer": peer_name,
        "peer_ms": peer_ms,
        "ratio": peer_ms / ms,
        "limit": "Tensor.fill_",
        "limit_gbs": nbytes / limit_ms / 1e6,
        "grid": grid,
    }


def monte_carlo_case(repeats):
    import monte_carlo
    import torch

    points = 2**32
    error = monte_carlo.standard_error(points)
    assert abs(monte_carlo.estimate_pi(points) - math.pi) < 5 * error
    total = cuda.to_device(np.zeros(1, np.int64))

    def ours():
        monte_carlo.count(points, total)

    chunk = 2**28

    def peer():
        inside = torch.zeros((), dtype=torch.int64, device="cuda")
        for _ in range(points // chunk):
            xy = torch.rand(chunk, 2, device="cuda")
            inside += (xy.square().sum(dim=1) <= 1).sum()
        return inside

    assert abs(4 * peer().item() / points - math.pi) < 5 * error
    ms = median_ms(ours, repeats, 2)
    peer_ms = median_ms(peer, max(repeats // 3, 3), 1)
    return {
        "case": "monte carlo pi 2^32",
        "ms": ms,
        "peer": "torch.rand, 2^28 points at a time",
        "peer_ms": peer_ms,
        "ratio": peer_ms / ms,
        "points_per_s": points / ms * 1e3,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    add_output_arguments(parser)
    args = parser.parse_args()
    commit = measured_commit(args)
    name = device_name(cuda.get_current_device())
    rows = [
        fill_case("uniform f32 1GiB", "uniform", "Tensor.uniform_", lambda t: t.uniform_(), args.repeats),
        fill_case("normal f32 1GiB", "normal", "Tensor.normal_", lambda t: t.normal_(), args.repeats),
        monte_carlo_case(args.repeats),
    ]
    for r in rows:
        r["target"], r["met"] = TARGETS[r["case"]][0], TARGETS[r["case"]][1](r)
    record = {
        "date": datetime.date.today().isoformat(),
        "device": name,
        "commit": commit,
        "repeats": args.repeats,
        "versions": versions("numba", "numba-cuda", "torch"),
        "rows": rows,
    }
    path = write_result("random", record, args)
    print(f"\n{name}, commit {commit}, median of {args.repeats}; wrote {path}")
    print(f"{'case':<22}{'ms':>8}{'GB/s':>7}{'limit':>7}{'peer ms':>9}{'ratio':>7}  target")
    for r in rows:
        gbs = f"{r['gbs']:>7.0f}{r['limit_gbs']:>7.0f}" if "gbs" in r else f"{'':>14}"
        verdict = "met" if r["met"] else "NOT MET"
        print(f"{r['case']:<22}{r['ms']:>8.3f}{gbs}{r['peer_ms']:>9.3f}{r['ratio']:>6.2f}x  {r['target']}: {verdict}")
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
