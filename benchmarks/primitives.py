"""The block primitives as the guides teach them, against the memory's limit and their peers, in one run.

Four cases, 1 GiB of input each (``--scale`` in GiB), each numba_tiles kernel the one in examples/, written
with the intrinsics' default arguments:

- ``"histogram u8 256 bins"``: examples/byte_histogram.py, against CUB's DeviceHistogram (cuda-cccl's
  ``cuda.compute.make_histogram_even``), ``torch.bincount`` and ``cupy.histogram``; the limit is a full read of
  the same bytes (``torch.sum`` over them as float32). Targets: >= 2000 GB/s and >= 1.0x CUB's.
- ``"segmented scan f32 4096"``: examples/segmented_scan.py, against ``torch.cumsum`` and ``cupy.cumsum`` along
  rows; the limit is a copy (``Tensor.copy_``), bytes read plus written. Target: >= 85% of the copy.
- ``"segmented sort i32 2048"``: examples/segmented_sort.py, against ``torch.sort``, ``cupy.sort`` and cuda-cccl's
  ``make_segmented_sort``; limit: the copy. Target: >= 1.5x torch.sort.
- ``"segmented sum f32 4096"``: examples/segmented_reduction.py, against ``torch.sum``, ``cupy.sum`` and
  cuda-cccl's ``make_segmented_reduce``; limit: the full read. Target: >= 95% of the read.

Every contender's output is checked against NumPy first (the first segments, or the whole histogram); a wrong one
fails the run. Each time is the median of ``--repeats`` trials, a trial being launches queued behind a sleep kernel
between two CUDA events on the legacy default stream (which orders every library's default stream), so the host's
launch time stays hidden. GB/s counts the bytes a case must move once (read; read and written for scan and sort).
Writes benchmarks/results/primitives-DEVICE.json (the cases it ran; ``--out`` another folder) and prints a table.

    python benchmarks/primitives.py [--repeats 9] [--scale 1] [--cases histogram,scan] [--out DIR] [--draft]

On the GPU machines: ``PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/primitives.py``.
"""

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np
from _timing import median_ms
from _versions import add_output_arguments, device_name, measured_commit, versions, write_result
from numba import cuda

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
TARGETS = {  # case: (what the target is, a function of the row that says whether it is met)
    "histogram u8 256 bins": (
        ">= 2000 GB/s and >= 1.0x CUB's DeviceHistogram",
        lambda r: r["gbs"] >= 2000 and r["gbs"] >= r["peers"]["CUB DeviceHistogram"],
    ),
    "segmented scan f32 4096": (">= 85% of the copy", lambda r: r["gbs"] >= 0.85 * r["limit_gbs"]),
    "segmented sort i32 2048": (">= 1.5x torch.sort", lambda r: r["gbs"] >= 1.5 * r["peers"]["torch.sort"]),
    "segmented sum f32 4096": (">= 95% of the read", lambda r: r["gbs"] >= 0.95 * r["limit_gbs"]),
}


def view(a, lib):
    """Numba device array ``a`` as a torch tensor or a CuPy array over the same memory (no copy)."""
    if lib == "torch":
        import torch

        return torch.as_tensor(a, device="cuda")
    import cupy

    return cupy.asarray(a)


def host(a):
    return a.copy_to_host() if hasattr(a, "copy_to_host") else (a.get() if hasattr(a, "get") else a.cpu().numpy())


class Case:
    """One case: its numba_tiles launch, its peers' (name: launch), the bytes it moves, its limit, a check."""

    def __init__(self, name, nbytes, limit):
        self.name, self.nbytes, self.limit = name, nbytes, limit
        self.ours, self.peers = None, {}

    def add_peer(self, name, make):
        """``make()`` gives the peer's launch, or raises ImportError/RuntimeError where it cannot run here."""
        try:
            self.peers[name] = make()
        except Exception as exc:  # (a peer library not installed, or unable to run this case)
            print(f"  {self.name}: {name} skipped: {type(exc).__name__}: {str(exc)[:200]}")


def histogram_case(rng, scale):
    import byte_histogram as h

    x = cuda.to_device(rng.integers(0, 256, int(scale * 2**30), dtype=np.uint8))
    want = np.bincount(host(x), minlength=256)
    case = Case("histogram u8 256 bins", x.size, "read")
    out = cuda.to_device(np.zeros(256, np.uint32))  # (the first launch is checked; later ones add to it)
    case.ours = (lambda: h.byte_histogram(x, out), lambda got: np.array_equal(host(got), want))

    def cub():
        import cuda.compute as cc

        hist = cuda.device_array(256, np.int32)
        levels = dict(
            h_num_output_levels=np.array([257], np.int32),
            h_lower_level=np.array([0], np.int32),
            h_upper_level=np.array([256], np.int32),
        )
        run = dict(d_samples=x, d_histogram=hist, num_samples=x.size, **levels)
        made = cc.make_histogram_even(**run)
        temp = cuda.device_array(max(made(temp_storage=None, **run), 1), np.uint8)
        return lambda: (made(temp_storage=temp, **run), hist)[1], lambda got: np.array_equal(host(got), want)

    def torch_bincount():
        import torch

        t = view(x, "torch")
        return lambda: torch.bincount(t, minlength=256), lambda got: np.array_equal(host(got), want)

    def cupy_histogram():
        import cupy

        c = view(x, "cupy")
        return lambda: cupy.histogram(c, bins=256, range=(0, 256))[0], lambda got: np.array_equal(host(got), want)

    case.add_peer("CUB DeviceHistogram", cub)
    case.add_peer("torch.bincount", torch_bincount)
    case.add_peer("cupy.histogram", cupy_histogram)
    return case, x


def rows_of(a, seg_len, count=64):
    return host(a[: count * seg_len]).reshape(count, seg_len)


def scan_case(rng, scale):
    import segmented_scan as s

    x = cuda.to_device(rng.standard_normal(int(scale * 2**28), dtype=np.float32))
    y = cuda.device_array_like(x)
    want = np.cumsum(rows_of(x, 4096).astype(np.float64), axis=1)

    def close(got):
        return np.allclose(rows_of(got, 4096), want, rtol=1e-4, atol=1e-2)

    case = Case("segmented scan f32 4096", 2 * x.nbytes, "copy")
    case.ours = (lambda: s.segmented_cumsum(x, 4096, y), close)

    def torch_cumsum():
        import torch

        tx, ty = view(x, "torch").view(-1, 4096), view(y, "torch").view(-1, 4096)
        return lambda: (torch.cumsum(tx, dim=1, out=ty), y)[1], close

    def cupy_cumsum():
        import cupy

        cx, cy = view(x, "cupy").reshape(-1, 4096), view(y, "cupy").reshape(-1, 4096)
        return lambda: (cupy.cumsum(cx, axis=1, out=cy), y)[1], close

    case.add_peer("torch.cumsum", torch_cumsum)
    case.add_peer("cupy.cumsum", cupy_cumsum)
    return case, x


def sort_case(rng, scale):
    import segmented_sort as s

    x = cuda.to_device(rng.integers(-(2**31), 2**31 - 1, int(scale * 2**28), dtype=np.int32))
    y = cuda.device_array_like(x)
    want = np.sort(rows_of(x, 2048), axis=1)

    def sorted_(got):
        return np.array_equal(rows_of(got, 2048), want)

    case = Case("segmented sort i32 2048", 2 * x.nbytes, "copy")
    case.ours = (lambda: s.segmented_sort(x, 2048, y), sorted_)

    def torch_sort():
        import torch

        tx = view(x, "torch").view(-1, 2048)
        return lambda: torch.sort(tx, dim=1).values.view(-1), sorted_

    def cupy_sort():
        import cupy

        cx = view(x, "cupy").reshape(-1, 2048)
        return lambda: cupy.sort(cx, axis=1).reshape(-1), sorted_

    def cub_segmented_sort():
        import cuda.compute as cc

        count = x.size // 2048
        offsets = cuda.to_device(np.arange(count + 1, dtype=np.int64) * 2048)
        run = dict(
            d_in_keys=x,
            d_out_keys=y,
            d_in_values=None,
            d_out_values=None,
            start_offsets_in=offsets[:-1],
            end_offsets_in=offsets[1:],
        )
        made = cc.make_segmented_sort(**run, order=cc.SortOrder.ASCENDING)
        run.update(num_items=x.size, num_segments=count)
        temp = cuda.device_array(max(made(temp_storage=None, **run), 1), np.uint8)
        return lambda: (made(temp_storage=temp, **run), y)[1], sorted_

    case.add_peer("torch.sort", torch_sort)
    case.add_peer("cupy.sort", cupy_sort)
    case.add_peer("CUB DeviceSegmentedSort", cub_segmented_sort)
    return case, x


def sum_case(rng, scale):
    import segmented_reduction as sr

    x = cuda.to_device(rng.standard_normal(int(scale * 2**28), dtype=np.float32))
    out = cuda.device_array(x.size // 4096, np.float32)
    want = rows_of(x, 4096).astype(np.float64).sum(axis=1)

    def close(got):
        return np.allclose(host(got)[:64], want, rtol=1e-4, atol=1e-2)

    case = Case("segmented sum f32 4096", x.nbytes, "read")
    case.ours = (lambda: sr.segmented_reduce(x, 4096, "+", out=out), close)

    def torch_sum():
        import torch

        tx, to = view(x, "torch").view(-1, 4096), view(out, "torch")
        return lambda: (torch.sum(tx, dim=1, out=to), out)[1], close

    def cupy_sum():
        import cupy

        cx, co = view(x, "cupy").reshape(-1, 4096), view(out, "cupy")
        return lambda: (cupy.sum(cx, axis=1, out=co), out)[1], close

    def cub_segmented_reduce():
        import cuda.compute as cc

        count = x.size // 4096
        offsets = cuda.to_device(np.arange(count + 1, dtype=np.int64) * 4096)
        build = dict(
            d_in=x,
            d_out=out,
            start_offsets_in=offsets[:-1],
            end_offsets_in=offsets[1:],
            op=cc.OpKind.PLUS,
            h_init=np.zeros((), np.float32),
        )
        made = cc.make_segmented_reduce(**build)
        run = dict(build, num_segments=count, max_segment_size=4096)
        temp = cuda.device_array(max(made(temp_storage=None, **run), 1), np.uint8)
        return lambda: (made(temp_storage=temp, **run), out)[1], close

    case.add_peer("torch.sum", torch_sum)
    case.add_peer("cupy.sum", cupy_sum)
    case.add_peer("CUB DeviceSegmentedReduce", cub_segmented_reduce)
    return case, x


CASES = {"histogram": histogram_case, "scan": scan_case, "sort": sort_case, "sum": sum_case}


def limits(x, repeats):
    """(read GB/s, copy GB/s) of ``x``'s bytes (a Numba device array): a full read as float32 (``torch.sum``) and a
    copy of it (bytes read and written)."""
    import torch

    t = view(x, "torch").view(torch.uint8)[: x.nbytes - x.nbytes % 4].view(torch.float32)
    copy, total = torch.empty_like(t), torch.empty((), dtype=torch.float32, device="cuda")
    read = t.nbytes / median_ms(lambda: torch.sum(t, dim=0, out=total), repeats) / 1e6
    copied = 2 * t.nbytes / median_ms(lambda: copy.copy_(t), repeats) / 1e6
    return read, copied


def run_case(make, rng, args):
    case, x = make(rng, args.scale)
    read, copied = limits(x, args.repeats)
    limit = read if case.limit == "read" else copied
    launch, check = case.ours
    if not check(launch()):
        sys.exit(f"{case.name}: numba_tiles' result is wrong")
    ms = median_ms(launch, args.repeats)
    peers = {}
    for name, (peer, peer_check) in case.peers.items():
        if not peer_check(peer()):
            sys.exit(f"{case.name}: {name}'s result is wrong")
        peers[name] = case.nbytes / median_ms(peer, args.repeats) / 1e6
    row = {
        "case": case.name,
        "ms": ms,
        "gbs": case.nbytes / ms / 1e6,
        "limit_gbs": limit,
        "limit": f"a full {case.limit} of the same bytes",
        "peers": peers,
        "bytes": case.nbytes,
    }
    target, met = TARGETS[case.name]
    row.update(of_limit=row["gbs"] / limit, target=target, met=bool(met(row)))
    del x
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--scale", type=float, default=1.0, help="GiB of input per case")
    parser.add_argument("--cases", default=",".join(CASES), help=f"some of {','.join(CASES)}")
    add_output_arguments(parser)
    args = parser.parse_args()
    commit = measured_commit(args)
    device = cuda.get_current_device()
    name = device_name(device)
    rng = np.random.default_rng()
    rows = [run_case(CASES[c], rng, args) for c in args.cases.split(",")]
    record = {
        "date": datetime.date.today().isoformat(),
        "device": name,
        "commit": commit,
        "scale_gib": args.scale,
        "repeats": args.repeats,
        "versions": versions("numba", "numba-cuda", "torch", "cupy-cuda13x", "cuda-cccl"),
        "rows": rows,
    }
    path = write_result("primitives", record, args)
    print(f"\n{name}, commit {commit}, {args.scale:g} GiB a case, median of {args.repeats}; wrote {path}")
    print(f"{'case':<26}{'GB/s':>7}{'limit':>7}{'of it':>7}  peers (GB/s)  target")
    for r in rows:
        peers = ", ".join(f"{k} {v:.0f}" for k, v in r["peers"].items())
        print(
            f"{r['case']:<26}{r['gbs']:>7.0f}{r['limit_gbs']:>7.0f}{r['of_limit']:>7.0%}  {peers}  "
            f"{r['target']}: {'met' if r['met'] else 'NOT MET'}"
        )
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
