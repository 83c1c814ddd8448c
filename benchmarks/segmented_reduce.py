"""Segmented sums on the GPU: numba_tiles' kernels against CuPy, PyTorch and cuda.compute, in one run.

The numba_tiles side is examples/segmented_reduction.py (``segmented_reduce``, ``csr_reduce``), its kernels
compiled by numba-cuda and, as ``numba_tiles-mlir`` where numba-cuda-mlir is installed, by numba-cuda-mlir (the
same source, loaded a second time with numba-cuda-mlir's ``cuda``). Shapes,
1 GiB of input each (``--scale`` in GiB): float32 segments of 128, 4096 and 2**20 items, float32 CSR
segments of uniform random lengths 1..8191, float64 and int32 segments of 4096. Peers, each where it
imports and runs (else skipped, with the reason): ``cupy.sum(x2d, axis=1)``, ``torch.sum(x2d, dim=1)``
(CSR: ``torch.segment_reduce``), cuda-cccl 1.1.1's ``cuda.compute.make_segmented_reduce`` with offset
arrays, and with offsets computed from a ``CountingIterator`` (regular shapes; no offsets read). The limit
is a full-array read of the same bytes: the best of ``cupy.sum(x)`` and ``torch.sum(x)`` over the
whole 1-D array ("read:" rows; a copy writes too, so it is no limit).

All read the very same buffer: a Numba device array, handed to CuPy, PyTorch and cuda.compute through
``__cuda_array_interface__`` (no copies; the pointers are checked). Before timing, each contender's
output is checked against NumPy (float64 sums; a float segment of n items may be off by
4·eps·sqrt(n·Σx²); int32 sums exactly, modulo 2**32); a wrong one is reported and the run exits 1.
Then warm-ups and ``--repeats`` runs, each timed by CUDA events on the legacy default stream (which
orders the default streams that all four libraries launch on), queued behind a ~2 ms sleep kernel so
the host's launch cost stays hidden. Median time; GB/s = bytes read (the input, and the CSR offsets)
/ time / 1e9. Prints a table and, per shape, whether numba_tiles meets the targets (>= 1.0x the best
peer, >= 95% of the full-array read); writes every timing to benchmarks/results/segmented_reduce-DEVICE.json (the
shapes it ran; ``--out`` another folder).

    python benchmarks/segmented_reduce.py [--repeats 25] [--shapes f32-128,f32-csr] [--scale 0.05] [--out DIR]
    ncu -o sr python benchmarks/segmented_reduce.py --ncu numba_tiles:f32-4096   # 4 launches, untimed
    python benchmarks/segmented_reduce.py --self-check                          # NumPy only, no GPU

On the GPU machines: ``PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/segmented_reduce.py``. A --scale
well below 1 fits in the L2 cache, which it then measures instead of the memory: for quick checks only.
"""

import argparse
import datetime
import functools
import gc
import importlib.util
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from _versions import add_output_arguments, device_name, measured_commit, versions, write_result
from numba import cuda

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {  # name: (dtype, segment length; 0 = CSR segments of 1..CSR_MAX items)
    "f32-128": (np.float32, 128),
    "f32-4096": (np.float32, 4096),
    "f32-1M": (np.float32, 2**20),
    "f32-csr": (np.float32, 0),
    "f64-4096": (np.float64, 4096),
    "i32-4096": (np.int32, 4096),
}
CSR_MAX, WARMUP, SLEEP_ITERS = 8191, 3, 2000  # the sleep kernel: 2000 x nanosleep(1 µs)
TARGET_PEER, TARGET_READ = 1.0, 0.95


class Skip(Exception):
    """A contender that does not apply to this shape."""


# ---- data and the NumPy reference (no GPU) ----


def csr_offsets(rng, items):
    """n + 1 int64 offsets of segments with lengths uniform in 1..CSR_MAX, about ``items`` in all."""
    lengths = rng.integers(1, CSR_MAX + 1, max(round(items / ((1 + CSR_MAX) / 2)), 1))
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def make_input(dtype, seg_len, scale, rng):
    """The host input (``scale`` GiB) and its n + 1 offsets (``arange(n + 1) * seg_len`` for regular segments)."""
    dtype = np.dtype(dtype)
    items = int(scale * 2**30) // dtype.itemsize
    offsets = np.arange(max(items // seg_len, 1) + 1, dtype=np.int64) * seg_len if seg_len else csr_offsets(rng, items)
    n = int(offsets[-1])  # small integers: no int32 sum overflows, whoever adds them in whatever order
    x = rng.integers(-100, 101, n, dtype=dtype) if dtype.kind == "i" else rng.standard_normal(n, dtype=dtype)
    return x, offsets


def wrap32(v):
    return (np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31


def reference(x, offsets):
    """(want, tol) per segment and for the whole array: float64 sums, to within 4·eps·sqrt(n·Σx²) of a float sum
    of n items; int sums modulo 2**32, exactly."""
    starts, lengths = offsets[:-1], np.diff(offsets)  # every segment is non-empty
    if x.dtype.kind == "i":
        want = wrap32(np.add.reduceat(x, starts, dtype=np.int64))
        return (want, np.zeros(want.size)), (wrap32([want.sum()]), np.zeros(1))
    want, squares = (np.add.reduceat(v, starts, dtype=np.float64) for v in (x, x * x))
    eps = 4 * np.finfo(x.dtype).eps
    return (want, eps * np.sqrt(lengths * squares)), (np.array([want.sum()]), eps * np.sqrt([x.size * squares.sum()]))


def check(got, want, tol):
    """None if ``got`` matches ``want`` within ``tol``, else what is wrong."""
    got = np.asarray(got).reshape(-1)
    if got.shape != want.shape:
        return f"{got.size} results, expected {want.size}"
    got = wrap32(got) if got.dtype.kind in "iu" else got.astype(np.float64)
    bad = ~(np.abs(got - want) <= tol)  # NaN (an output never written) is wrong
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return f"{int(bad.sum())} of {want.size} sums wrong, e.g. [{i}] = {got[i]}, expected {want[i]} ± {tol[i]:.2g}"


# ---- contenders: setup(c) returns a launch callable, which returns the output (a device array) ----


def share(a, lib):
    """Numba device array ``a`` as a CuPy array or a torch tensor over the same memory (no copy, checked)."""
    mod = sys.modules[lib]
    stream = mod.cuda.get_current_stream().ptr if lib == "cupy" else mod.cuda.current_stream().cuda_stream
    assert stream in (0, 1, 2), f"{lib} launches on stream {stream:#x}, not a default one: the events miss it"
    view = mod.asarray(a) if lib == "cupy" else mod.as_tensor(a, device="cuda")
    copied = (view.data.ptr if lib == "cupy" else view.data_ptr()) != a.__cuda_array_interface__["data"][0]
    assert not copied, f"{lib} copied the buffer instead of sharing it"
    return view


def tiles(c, mlir=False):
    x, offsets, out = c.x, c.offsets, c.out
    if mlir:  # (its kernels take its own device arrays, views of the same memory: numba-cuda's type as its types)
        sr = example_under_mlir()
        x, offsets, out = (sr.cuda.as_cuda_array(a) for a in (x, offsets, out))
    else:
        sys.path.insert(0, str(ROOT / "examples"))
        import segmented_reduction as sr
    if c.seg_len:
        return lambda: sr.segmented_reduce(x, c.seg_len, "+", out=out)
    return lambda: sr.csr_reduce(x, offsets, "+", out=out)


@functools.cache
def example_under_mlir():
    """examples/segmented_reduction.py as a second module whose ``cuda`` is numba-cuda-mlir's: its kernels, made
    when first asked for, are then numba-cuda-mlir's."""
    try:
        from numba_cuda_mlir import cuda as mlir_cuda
    except ImportError as exc:
        raise Skip(f"numba-cuda-mlir is not installed ({exc})") from None
    source = ROOT / "examples" / "segmented_reduction.py"
    spec = importlib.util.spec_from_file_location("segmented_reduction_mlir", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.cuda = mlir_cuda
    return module


def cupy_sum(c, whole=False):
    import cupy

    x = share(c.x, "cupy")
    if whole:
        out = cupy.empty((), x.dtype)
        return lambda: cupy.sum(x, dtype=x.dtype, out=out)
    if not c.seg_len:  # CuPy 14.2's add.reduceat (_routines_indexing.pyx): cumsum of all, then differences
        raise Skip("cupy.add.reduceat is a full cumsum and differences of it (3x the traffic, float32 cancellation)")
    x2d, out = x.reshape(c.count, c.seg_len), share(c.out, "cupy")
    return lambda: cupy.sum(x2d, axis=1, dtype=x.dtype, out=out)


def torch_sum(c, whole=False):
    import torch

    x = share(c.x, "torch")
    if whole:
        out = torch.empty((), dtype=x.dtype, device="cuda")
        return lambda: torch.sum(x, dim=0, dtype=x.dtype, out=out)
    if not c.seg_len:  # unsafe=True: no check of the offsets, which would wait for the GPU
        offsets = share(c.offsets, "torch")
        return lambda: torch.segment_reduce(x, "sum", offsets=offsets, unsafe=True)
    x2d, out = x.view(c.count, c.seg_len), share(c.out, "torch")
    return lambda: torch.sum(x2d, dim=1, dtype=x.dtype, out=out)


def compute(c, counting=False):
    """cuda-cccl 1.1.1 (cuda/compute/algorithms/_segmented_reduce.py at git tag python-1.1.1): the object built by
    ``make_segmented_reduce`` returns the temp bytes when called with ``temp_storage=None``, else it launches."""
    import cuda.compute as cc

    if counting and not c.seg_len:
        raise Skip("regular segments only")
    if counting:
        step = np.int64(c.seg_len)

        def start(i):  # segment i is [start(i), start(i + 1))
            return i * step

        starts, ends = (cc.TransformIterator(cc.CountingIterator(np.int64(k)), start) for k in (0, 1))
    else:
        starts, ends = c.offsets[:-1], c.offsets[1:]
    build = dict(
        d_in=c.x,
        d_out=c.out,
        start_offsets_in=starts,
        end_offsets_in=ends,
        op=cc.OpKind.PLUS,
        h_init=np.zeros((), c.x.dtype),
    )
    reducer = cc.make_segmented_reduce(**build)
    run = dict(build, num_segments=c.count, max_segment_size=c.max_len)  # stream=None: the default stream
    temp = cuda.device_array(max(reducer(temp_storage=None, **run), 1), np.uint8)

    def launch():
        reducer(temp_storage=temp, **run)
        return c.out

    return launch


CONTENDERS = {  # name: (kind, setup); kinds: "tiles", "peer", "read" (the full-array read: the limit)
    "numba_tiles": ("tiles", tiles),
    "numba_tiles-mlir": ("tiles", lambda c: tiles(c, mlir=True)),
    "cupy": ("peer", cupy_sum),
    "torch": ("peer", torch_sum),
    "cuda.compute": ("peer", compute),
    "cuda.compute-counting": ("peer", lambda c: compute(c, counting=True)),
    "read:cupy": ("read", lambda c: cupy_sum(c, whole=True)),
    "read:torch": ("read", lambda c: torch_sum(c, whole=True)),
}


def to_host(a):
    if hasattr(a, "copy_to_host"):  # Numba
        return a.copy_to_host()
    return a.get() if hasattr(a, "get") else a.cpu().numpy()  # CuPy, PyTorch


# ---- timing ----


@cuda.jit
def _sleep(iterations):
    for _ in range(iterations):
        cuda.nanosleep(1000)


def time_runs(launch, repeats):
    """Event times (µs) of ``repeats`` launches, each queued behind the sleep kernel; the longest host launch (µs)."""
    stream = cuda.legacy_default_stream()  # ordered with every blocking stream, so with each library's default
    for _ in range(WARMUP):
        launch()
    cuda.synchronize()
    events, host = [], []
    for _ in range(repeats):
        events.append((cuda.event(), cuda.event()))
        _sleep[1, 1, stream](SLEEP_ITERS)
        t0 = time.perf_counter()
        events[-1][0].record(stream)
        launch()
        events[-1][1].record(stream)
        host.append(time.perf_counter() - t0)
    cuda.synchronize()
    return [cuda.event_elapsed_time(a, b) * 1e3 for a, b in events], max(host) * 1e6


def release():
    gc.collect()
    cuda.current_context().deallocations.clear()
    if "cupy" in sys.modules:
        sys.modules["cupy"].get_default_memory_pool().free_all_blocks()
    if "torch" in sys.modules:
        sys.modules["torch"].cuda.empty_cache()


# ---- one shape ----


def setup_shape(name, scale, rng):
    x, offsets = make_input(*SHAPES[name], scale, rng)
    return (
        x,
        offsets,
        SimpleNamespace(
            x=cuda.to_device(x),
            offsets=cuda.to_device(offsets),
            seg_len=SHAPES[name][1],
            count=offsets.size - 1,
            max_len=int(np.diff(offsets).max()),
        ),
    )


def contender(case, cname):
    """``(launch, its first output on the host)``, with an output filled beforehand with NaN (or INT_MIN)."""
    poison = np.nan if case.x.dtype.kind == "f" else np.iinfo(case.x.dtype).min
    c = SimpleNamespace(**vars(case), out=cuda.to_device(np.full(case.count, poison, case.x.dtype)))
    launch = CONTENDERS[cname][1](c)
    return launch, to_host(launch())


def cell(value, spec):
    return format(value, spec) if value is not None else format("-", spec.split(".")[0])


def run_shape(name, args, rng):
    x, offsets, case = setup_shape(name, args.scale, rng)
    segments, whole = reference(x, offsets)
    nbytes = x.nbytes + (0 if case.seg_len else offsets.nbytes)
    result = {
        "dtype": x.dtype.name,
        "seg_len": case.seg_len or f"csr 1..{CSR_MAX}",
        "segments": case.count,
        "items": x.size,
        "bytes": nbytes,
        "rows": {},
        "skipped": {},
        "wrong": {},
    }
    del x, offsets
    for cname in args.contenders:
        kind = CONTENDERS[cname][0]
        try:
            launch, got = contender(case, cname)
        except Exception as exc:  # a peer that does not import or run here is skipped; numba_tiles must run
            if kind == "tiles" and not isinstance(exc, Skip):
                raise
            result["skipped"][cname] = str(exc) if isinstance(exc, Skip) else f"{type(exc).__name__}: {exc}"
            continue
        error = check(got, *(whole if kind == "read" else segments))
        if error:
            result["wrong"][cname] = error
            continue
        times, host_us = time_runs(launch, args.repeats)
        median = statistics.median(times)
        result["rows"][cname] = {
            "kind": kind,
            "times_us": times,
            "median_us": median,
            "host_launch_max_us": host_us,
            "gbps": (case.x.nbytes if kind == "read" else nbytes) / median / 1e3,
        }
        del launch
    del case
    release()
    rows = result["rows"]
    peers = {k: r["gbps"] for k, r in rows.items() if r["kind"] == "peer"}
    result["best_peer"] = best = max(peers, key=peers.get, default=None)
    result["read_gbps"] = limit = max((r["gbps"] for r in rows.values() if r["kind"] == "read"), default=None)
    for cname, r in rows.items():
        r["of_read"] = r["gbps"] / limit if limit else None
        r["vs_best_peer"] = r["gbps"] / peers[best] if best and r["kind"] != "read" else None
    for cname in args.contenders:
        if cname in rows:
            r = rows[cname]
            blocked = r["host_launch_max_us"] > 0.5 * args.sleep_us  # it waited for the GPU: its host time counts
            line = (
                f"{r['median_us']:>10.1f}{r['gbps']:>9.0f}{cell(r['of_read'], '>9.1%')}"
                f"{cell(r['vs_best_peer'], '>14.2f')}" + ("  (the launch blocked the host)" if blocked else "")
            )
        else:
            line = (
                f"  WRONG: {result['wrong'][cname]}"
                if cname in result["wrong"]
                else f"  skipped: {result['skipped'][cname]}"
            )
        print(f"{name:<10}{cname:<23}{line}")
    t = rows.get("numba_tiles")
    vs, of = (t["vs_best_peer"], t["of_read"]) if t else (None, None)
    result["meets_targets"] = meets = None if vs is None or of is None else vs >= TARGET_PEER and of >= TARGET_READ
    verdict = {True: "MEETS the targets", False: "MISSES the targets", None: "cannot tell against the targets"}[meets]
    result["summary"] = (
        f"{name}: numba_tiles not measured"
        if not t
        else f"{name}: numba_tiles {t['gbps']:.0f} GB/s, "
        + (f"{vs:.2f}x the best peer ({best} {peers[best]:.0f} GB/s), " if best else "no peer, ")
        + (f"{of:.1%} of the full-array read ({limit:.0f} GB/s)" if limit else "no full-array read")
        + f": {verdict} (>= {TARGET_PEER:.1f}x the best peer, >= {TARGET_READ:.0%} of the read)"
    )
    print(result["summary"])
    return result


# ---- the run ----


def describe():
    dev = cuda.get_current_device()
    try:
        smi = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            or None
        )
    except OSError:
        smi = None
    return {
        "device": device_name(dev),
        "compute_capability": "%d.%d" % tuple(dev.compute_capability),
        "driver": smi,
        "driver_cuda": "%d.%d" % cuda.cudadrv.driver.get_version(),
        "python": platform.python_version(),
        "versions": versions(
            "numpy",
            "numba",
            "numba-cuda",
            "cuda-core",
            "cuda-bindings",
            "cupy-cuda13x",
            "cupy-cuda12x",
            "torch",
            "cuda-cccl",
        ),
    }


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25, help="timed runs per contender (>= 20 for a report)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="a comma-separated subset of " + ",".join(SHAPES))
    parser.add_argument("--contenders", default=",".join(CONTENDERS), help="a comma-separated subset")
    parser.add_argument("--scale", type=float, default=1.0, help="input per shape, in GiB (default 1)")
    parser.add_argument("--ncu", metavar="CONTENDER:SHAPE", help="only launch this, 4 times, untimed (for ncu)")
    parser.add_argument("--self-check", action="store_true", help="check the reference and CSR generator; no GPU")
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    if args.ncu and ":" not in args.ncu:
        parser.error("--ncu takes CONTENDER:SHAPE, e.g. numba_tiles:f32-4096")
    cname, _, shape = (args.ncu or ":").rpartition(":")
    args.shapes = [shape] if args.ncu else [s for s in args.shapes.split(",") if s]
    args.contenders = [cname] if args.ncu else [c for c in args.contenders.split(",") if c]
    for given, known, what in ((args.shapes, SHAPES, "shape"), (args.contenders, CONTENDERS, "contender")):
        if not given or set(given) - set(known):
            parser.error(f"unknown {what} in {given}; choose from {', '.join(known)}")
    if args.repeats < 1 or not 0 < args.scale <= 16:
        parser.error("--repeats must be >= 1 and --scale in (0, 16]")
    return args


def self_check():
    """The reference, its tolerance and the CSR generator on small arrays, with NumPy only."""
    rng = np.random.default_rng(0)
    lengths = np.diff(csr_offsets(rng, 2**28))
    assert lengths.min() == 1 and lengths.max() == CSR_MAX and abs(lengths.sum() / 2**28 - 1) < 0.01
    for dtype, seg_len in (
        (np.float32, 128),
        (np.float32, 2**14),
        (np.float32, 0),
        (np.float64, 4096),
        (np.int32, 4096),
        (np.int32, 0),
    ):
        x, offsets = make_input(dtype, seg_len, 2**-6, rng)
        assert offsets[0] == 0 and offsets[-1] == x.size and np.diff(offsets).min() >= 1
        (want, tol), whole = reference(x, offsets)
        pieces = np.split(x, offsets[1:-1])
        sums = np.array([p.sum(dtype=x.dtype) for p in pieces])  # in x's dtype (pairwise), as a GPU adds them
        ordered = np.array([np.cumsum(p, dtype=x.dtype)[-1] for p in pieces])  # one by one: the least accurate
        assert check(sums, want, tol) is None and check(ordered, want, tol) is None, (dtype, seg_len)
        assert check([x.sum(dtype=x.dtype)], *whole) is None, (dtype, seg_len)
        first = np.arange(sums.size) == 0
        for wrong in (
            sums + first,
            sums - first * pieces[0][np.argmax(np.abs(pieces[0]))],
            sums[:-1],
            np.where(first, np.nan, sums),
        ):  # off by one, the largest item dropped, one missing, unwritten
            assert check(wrong, want, tol) is not None, (dtype, seg_len)
    big = np.full(8, 2**30, np.int32)  # int32 sums wrap: 2**33 is 0 modulo 2**32
    assert check(np.add.reduce(big, dtype=np.int32, keepdims=True), *reference(big, np.array([0, 8]))[0]) is None
    assert parse(["--ncu", "read:cupy:f64-4096"]).contenders == ["read:cupy"]
    print(f"self-check passed: reference sums and tolerances, int32 wrapping, CSR lengths 1..{CSR_MAX}, arguments")


def main():
    args = parse()
    if args.self_check:
        return self_check()
    if not cuda.is_available():
        raise SystemExit(
            "segmented_reduce: no CUDA GPU (numba.cuda.is_available() is False); it times GPU kernels, "
            "so run it on a machine with one (--self-check runs without)"
        )
    rng = np.random.default_rng(2026)
    if args.ncu:
        launch, _ = contender(setup_shape(args.shapes[0], args.scale, rng)[2], args.contenders[0])
        for _ in range(3):
            launch()
        cuda.synchronize()
        return print(f"launched {args.ncu} 4 times, untimed (the first compiled it)")
    commit = measured_commit(args)
    args.sleep_us = time_runs(lambda: _sleep[1, 1, cuda.legacy_default_stream()](SLEEP_ITERS), 1)[0][0]
    info, date = describe(), datetime.date.today().isoformat()
    print(
        f"segmented sums, {args.scale:g} GiB per shape, median of {args.repeats} after {WARMUP} warm-ups "
        f"({info['device']}, sm_{info['compute_capability'].replace('.', '')}, driver {info['driver']}, CUDA "
        f"{info['driver_cuda']}; {date}, commit {commit}; sleep kernel {args.sleep_us:.0f} µs)"
    )
    print(f"{'shape':<10}{'contender':<23}{'time µs':>10}{'GB/s':>9}{'of read':>9}{'vs best peer':>14}")
    shapes = {name: run_shape(name, args, rng) for name in args.shapes}
    print("\n".join(s["summary"] for s in shapes.values()))
    record = {
        "date": date,
        "commit": commit,
        **info,
        "repeats": args.repeats,
        "warmup": WARMUP,
        "scale_gib": args.scale,
        "sleep_us": args.sleep_us,
        "targets": {"vs_best_peer": TARGET_PEER, "of_read": TARGET_READ},
        "shapes": shapes,
    }
    path = write_result("segmented_reduce", record, args)
    print(f"wrote {path}")
    wrong = [f"{n} {c}: {e}" for n, s in shapes.items() for c, e in s["wrong"].items()]
    if wrong:
        raise SystemExit("segmented_reduce: wrong results: " + "; ".join(wrong))


if __name__ == "__main__":
    main()
