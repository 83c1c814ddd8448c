"""Batched block FFTs (`tiles.FFT`, cuFFTDx) against cuFFT through PyTorch, and the copy limit, in one run.

Seven cases, 1 GiB of input each (``--scale`` in GiB), each numba_tiles kernel written as docs/guide/fft.md
teaches: a block transforms a group of ``fft.ffts_per_block`` rows, out of place, a block for each group (no loop:
`FFT.launch`'s default grid). ``--loop`` times the other form instead: as many blocks as the GPU runs at once
(``tiles.resident_blocks``), each looping over groups of rows, the plain transforms reading their next rows while
the current ones are transformed:

- ``"c2c f32 256"``, ``"c2c f32 1024"``, ``"c2c f32 4096"``, ``"c2c f64 1024"``: forward FFTs of every row, against
  ``torch.fft.fft(x, dim=-1)`` (into a new tensor from torch's caching allocator: with ``out=``, cuFFT writes a
  tensor of its own that is then copied). Target: >= 1.0x cuFFT.
- ``"r2c f32 4096"``: real rows to their half spectra, against ``torch.fft.rfft``.
- ``"conv f32 1024"``, ``"conv f32 4096"``: ``y = ifft(fft(x) * h)`` for every row of complex64 ``x`` and one filter
  spectrum ``h`` (complex64, ``size`` values), in one kernel (forward FFT, the product at the frequencies
  ``fft.index(i)`` gives, inverse FFT in place), against ``torch.fft.ifft(torch.fft.fft(x).mul_(h))``
  (three cuFFT-backed launches). Both as NumPy's: ours multiplies by ``h / size`` (cuFFTDx normalizes neither
  direction), torch's ``ifft`` divides by ``size``. Target: >= 3.5x torch.

The data is made on the GPU (``torch.randn``) and shared with the kernels (no copies). Each case first checks
cuFFT's rows against ``numpy.fft`` (a few rows, in float64), then ours against cuFFT's, all of it: the largest
difference must be below 1e-4 (float32) or 1e-11 (float64) of the largest value, as the GPU tests bound FFTs; a
wrong case is not timed and fails the run. Then each of ours, the peer and the copy limit (``y.copy_(x)`` of the
input's bytes: bytes read and written) is timed: the median of ``--repeats`` trials after 3 warm-ups, a trial being
launches queued behind a sleep kernel between two CUDA events on the legacy default stream (which orders torch's
default stream too), so that the host's launch time stays hidden. GB/s = (bytes read + bytes written) / time: the
input and the output (``h`` is left out: 8 or 32 KiB). Writes benchmarks/results/fft-DEVICE.json (rows ``case``,
``ms``, ``gbs``, ``peer_ms``, ``ratio`` = peer_ms / ms, ``copy_gbs``, and more; ``--out`` another folder) and
prints a table last.

    python benchmarks/fft.py [--repeats 15] [--scale 1] [--cases "c2c f32 1024,conv f32 4096"] [--out DIR] [--draft]
    python benchmarks/fft.py --dry      # no GPU: compile every kernel for sm_90 (types and links them)
    python benchmarks/fft.py --sizes 1024=16:4,4096=16:2    # other elements a thread : FFTs a block, by size
    python benchmarks/fft.py --blocks-per-sm 8     # launch_bounds=(threads, 8): registers capped for 8 blocks an SM
    python benchmarks/fft.py --loop --out /tmp/loop  # the looping form, kept apart from the record

On the GPU machines (after ``make gpu-site``): ``PYTHONPATH=$PWD/.gpu-site:$PWD python3 benchmarks/fft.py``.
"""

import argparse
import datetime
import gc
import sys
import time
import traceback

import numpy as np
from _timing import median_ms
from _versions import add_output_arguments, device_name, measured_commit, versions, write_result
from numba import complex64, complex128, cuda

import numba_tiles as tiles

WARMUP = 3  # launches before the timed ones
TOLERANCE = {"float32": 1e-4, "float64": 1e-11}  # of the largest value: the difference between two FFTs of a row
PEER_ROWS = 4  # rows of the peer's output checked against numpy.fft
CASES = {  # name: (kind, precision, size, the target's least ratio to the peer, or None)
    "c2c f32 256": ("c2c", "float32", 256, 1.0),
    "c2c f32 1024": ("c2c", "float32", 1024, 1.0),
    "c2c f32 4096": ("c2c", "float32", 4096, 1.0),
    "c2c f64 1024": ("c2c", "float64", 1024, 1.0),
    "r2c f32 4096": ("r2c", "float32", 4096, 1.0),
    "conv f32 1024": ("conv", "float32", 1024, 3.5),
    "conv f32 4096": ("conv", "float32", 4096, 3.5),
}
COMPLEX = {"float32": "complex64", "float64": "complex128"}
MET = {True: "met", False: "NOT MET"}
ITEMS = {"complex64": complex64, "complex128": complex128}


# ---- the kernels, as a user writes them from docs/guide/fft.md ----


def transform_kernel(fft, jit=cuda.jit):
    """``y[r] = fft(x[r])`` for every row ``r`` (c2c: complex rows of ``size``; r2c: real rows into ``size // 2 + 1``
    values), a block a group of ``fft.ffts_per_block`` rows, as `FFT`'s example."""
    items_type, per_block = ITEMS[fft.value_type], fft.ffts_per_block

    @jit
    def transform(x, y):
        items = cuda.local.array(fft.storage_size, items_type)
        row = cuda.blockIdx.x * per_block + cuda.threadIdx.y
        if row < x.shape[0]:
            fft.load(x[row], items)
        fft.execute(items)
        if row < x.shape[0]:
            fft.store(items, y[row])

    return transform


def convolution_kernel(forward, inverse, jit=cuda.jit):
    """``y[r] = size * ifft(fft(x[r]) * spectrum)`` for every row ``r``: ``ifft(fft(x[r]) * h)`` for ``spectrum = h /
    size``, a block a group of rows."""
    items_type, per_block = ITEMS[forward.value_type], forward.ffts_per_block

    @jit
    def convolution(x, spectrum, y):
        items = cuda.local.array(forward.storage_size, items_type)
        row = cuda.blockIdx.x * per_block + cuda.threadIdx.y
        if row < x.shape[0]:
            forward.load(x[row], items)
        forward.execute(items)
        for i in range(forward.elements_per_thread):
            items[i] *= spectrum[forward.index(i)]
        inverse.execute(items)  # in place, in the forward's layout
        if row < x.shape[0]:
            inverse.store(items, y[row])

    return convolution


def looping_transform_kernel(fft, jit=cuda.jit):
    """`transform_kernel` on the resident blocks (``--loop``), each looping over groups of rows and reading its next
    group into ``ahead`` before the current group's FFT: those loads are in flight while it computes."""
    items_type, per_block = ITEMS[fft.value_type], fft.ffts_per_block

    @jit
    def transform(x, y):
        items = cuda.local.array(fft.storage_size, items_type)
        ahead = cuda.local.array(fft.storage_size, items_type)
        rows = x.shape[0]
        step = cuda.gridDim.x * per_block
        first = cuda.blockIdx.x * per_block + cuda.threadIdx.y
        if first < rows:
            fft.load(x[first], ahead)
        for group in range(cuda.blockIdx.x, (rows + per_block - 1) // per_block, cuda.gridDim.x):
            row = group * per_block + cuda.threadIdx.y
            for i in range(fft.storage_size):
                items[i] = ahead[i]
            if row + step < rows:
                fft.load(x[row + step], ahead)
            fft.execute(items)
            if row < rows:
                fft.store(items, y[row])

    return transform


def looping_convolution_kernel(forward, inverse, jit=cuda.jit):
    """`convolution_kernel` on the resident blocks (``--loop``), each looping over groups of rows. (Reading ahead, as
    `looping_transform_kernel` does, made it slower: with two FFTs inlined, the second register array costs more
    than the loads in flight gain.)"""
    items_type, per_block = ITEMS[forward.value_type], forward.ffts_per_block

    @jit
    def convolution(x, spectrum, y):
        items = cuda.local.array(forward.storage_size, items_type)
        rows = x.shape[0]
        for group in range(cuda.blockIdx.x, (rows + per_block - 1) // per_block, cuda.gridDim.x):
            row = group * per_block + cuda.threadIdx.y
            if row < rows:
                forward.load(x[row], items)
            forward.execute(items)
            for i in range(forward.elements_per_thread):
                items[i] *= spectrum[forward.index(i)]
            inverse.execute(items)  # in place, in the forward's layout
            if row < rows:
                inverse.store(items, y[row])

    return convolution


def describe_case(name, sizes=None, blocks_per_sm=None, loop=False):
    """(the kernel, its FFT descriptions, its signature for `tiles.compile`) of case ``name``; ``sizes``: {FFT size:
    (elements_per_thread, ffts_per_block)} where not cuFFTDx's suggestions; ``blocks_per_sm``: the kernel compiled
    with ``launch_bounds=(its threads, blocks_per_sm)``, its registers capped so that as many blocks fit an SM;
    ``loop``: the looping form, for the resident blocks."""
    kind, precision, size, _ = CASES[name]
    chosen = dict(zip(("elements_per_thread", "ffts_per_block"), (sizes or {}).get(size, ())))
    if kind == "conv":
        forward = tiles.FFT(size, COMPLEX[precision], **chosen)
        inverse = tiles.FFT(
            size,
            COMPLEX[precision],
            direction="inverse",
            elements_per_thread=forward.elements_per_thread,
            ffts_per_block=forward.ffts_per_block,
        )
        value = forward.value_type
        return (
            (looping_convolution_kernel if loop else convolution_kernel)(
                forward, inverse, kernel_jit(forward, blocks_per_sm)
            ),
            (forward, inverse),
            f"void({value}[:, ::1], {value}[::1], {value}[:, ::1])",
        )
    fft = tiles.FFT(size, precision if kind == "r2c" else COMPLEX[precision], kind=kind, **chosen)
    source = fft.precision if kind == "r2c" else fft.value_type
    return (
        (looping_transform_kernel if loop else transform_kernel)(fft, kernel_jit(fft, blocks_per_sm)),
        (fft,),
        f"void({source}[:, ::1], {fft.value_type}[:, ::1])",
    )


def kernel_jit(fft, blocks_per_sm):
    """``cuda.jit``, with the launch bounds of ``blocks_per_sm`` blocks of ``fft.block_dim`` where given."""
    return cuda.jit(launch_bounds=(fft.threads, blocks_per_sm)) if blocks_per_sm else cuda.jit


# ---- timing ----


# ---- one case on the GPU ----


def numba_view(t):
    """A torch tensor as a Numba device array over the same memory (no copy)."""
    a = cuda.as_cuda_array(t)
    assert a.__cuda_array_interface__["data"][0] == t.data_ptr(), "Numba copied the tensor"
    return a


def difference(got, want):
    """The largest difference of ``got`` from ``want`` (torch tensors), relative to ``want``'s largest value."""
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


def run_case(name, args):
    import torch

    kind, precision, size, target = CASES[name]
    kernel, ffts, _ = describe_case(name, args.sizes, args.blocks_per_sm, args.loop)
    fft = ffts[0]
    source = getattr(torch, fft.precision if kind == "r2c" else fft.value_type)
    rows = int(args.scale * 2**30) // (source.itemsize * size)
    generator = torch.Generator(device="cuda").manual_seed(2026)
    x = torch.randn(rows, size, dtype=source, device="cuda", generator=generator)
    y = torch.empty(rows, size // 2 + 1 if kind == "r2c" else size, dtype=getattr(torch, fft.value_type), device="cuda")
    if kind == "conv":
        h = torch.randn(size, dtype=y.dtype, device="cuda", generator=generator)
        arguments = (numba_view(x), numba_view(h / size), numba_view(y))
        peer_name = "torch.fft.fft, mul_, ifft"

        def peer():
            return torch.fft.ifft(torch.fft.fft(x, dim=-1).mul_(h), dim=-1)

    else:
        arguments = (numba_view(x), numba_view(y))
        peer_name = "torch.fft.rfft" if kind == "r2c" else "torch.fft.fft"
        transform = torch.fft.rfft if kind == "r2c" else torch.fft.fft

        def peer():
            return transform(x, dim=-1)

    started = time.perf_counter()
    grid = -(-rows // fft.ffts_per_block)  # a block a group (FFT.launch's default grid)
    if args.loop:
        grid = min(tiles.resident_blocks(kernel, fft.block_dim, *arguments), grid)

    def ours():
        kernel[grid, fft.block_dim](*arguments)

    ours()
    cuda.synchronize()
    compile_s = time.perf_counter() - started
    peer_y = peer()
    torch.cuda.synchronize()

    # cuFFT's first rows against NumPy's, in float64; then ours against cuFFT's, all of it
    head = x[:PEER_ROWS].cpu().numpy().astype(np.complex128 if kind != "r2c" else np.float64)
    if kind == "conv":
        want = np.fft.ifft(np.fft.fft(head) * h.cpu().numpy().astype(np.complex128))
    else:
        want = (np.fft.rfft if kind == "r2c" else np.fft.fft)(head)
    peer_error = difference(peer_y[:PEER_ROWS].cpu().to(torch.complex128), torch.from_numpy(want))
    error = difference(y, peer_y)
    row = {"case": name, "rows": rows, "bytes": x.nbytes + y.nbytes, "error_vs_peer": error, "peer_error": peer_error}
    bound = TOLERANCE[precision]
    if not (peer_error <= bound and error <= bound):
        wrong = f"{peer_name} against numpy.fft" if not peer_error <= bound else "numba_tiles against " + peer_name
        return {**row, "wrong": f"{wrong}: largest difference {max(peer_error, error):.3g} of the largest value"}
    copy = torch.empty_like(x)
    ms = median_ms(ours, args.repeats, WARMUP)
    peer_ms = median_ms(peer, args.repeats, WARMUP)
    copy_gbs = 2 * x.nbytes / median_ms(lambda: copy.copy_(x), args.repeats) / 1e6
    row.update(
        ms=ms,
        gbs=row["bytes"] / ms / 1e6,
        peer=peer_name,
        peer_ms=peer_ms,
        peer_gbs=row["bytes"] / peer_ms / 1e6,
        ratio=peer_ms / ms,
        copy_gbs=copy_gbs,
        target=f">= {target:.1f}x {peer_name}" if target else "none",
        met=peer_ms / ms >= target if target else None,
        fft=repr(fft),
        blocks_per_sm=args.blocks_per_sm,
        form="loop" if args.loop else "a block a group",
        block_dim=list(fft.block_dim),
        grid=grid,
        compile_s=compile_s,
    )
    return row


def release():
    import torch

    gc.collect()
    cuda.current_context().deallocations.clear()
    torch.cuda.empty_cache()


# ---- the run ----


def dry(names, sizes=None, blocks_per_sm=None, loop=False):
    """No GPU: compile each case's kernel for sm_90, linked with its FFTs."""
    for name in names:
        started = time.perf_counter()
        kernel, ffts, signature = describe_case(name, sizes, blocks_per_sm, loop)
        cubin = tiles.compile(kernel, signature, arch="sm_90")
        print(
            f"{name:<15} {time.perf_counter() - started:6.1f} s  {len(cubin):>8} bytes of cubin  "
            + "; ".join(repr(f) for f in ffts),
            flush=True,
        )
    print(f"--dry: {len(names)} kernels typed, compiled and linked for sm_90")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="timed trials per contender (median)")
    parser.add_argument("--scale", type=float, default=1.0, help="GiB of input per case (default 1)")
    parser.add_argument("--cases", default=",".join(CASES), help="a comma-separated subset of: " + ", ".join(CASES))
    parser.add_argument("--dry", action="store_true", help="no GPU: compile every kernel for sm_90 and stop")
    parser.add_argument(
        "--sizes",
        type=lambda text: {int(n): tuple(map(int, v.split(":"))) for n, v in (p.split("=") for p in text.split(","))},
        help="elements a thread and FFTs a block by FFT size, e.g. 1024=16:4,4096=16:2 (default: cuFFTDx's)",
    )
    parser.add_argument(
        "--blocks-per-sm",
        type=int,
        help="compile each kernel with launch_bounds=(its threads, N): registers capped so that N blocks fit an SM",
    )
    parser.add_argument(
        "--loop", action="store_true", help="the looping form on the resident blocks instead of a block a group"
    )
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    if not names or set(names) - set(CASES):
        parser.error(f"unknown cases {sorted(set(names) - set(CASES))}; choose from {', '.join(CASES)}")
    if args.dry:
        return dry(names, args.sizes, args.blocks_per_sm, args.loop)
    if not cuda.is_available():
        raise SystemExit("fft: no CUDA GPU (numba.cuda.is_available() is False); --dry compiles without one")
    commit = measured_commit(args)
    device = device_name(cuda.get_current_device())
    date = datetime.date.today().isoformat()
    rows, wrong = [], []
    for name in names:
        try:
            row = run_case(name, args)
        except Exception:  # (one case failing leaves the others measured)
            traceback.print_exc()
            row = {"case": name, "wrong": "raised: " + traceback.format_exc(limit=0).strip()}
        release()
        (wrong if "wrong" in row else rows).append(row)
        said = row.get("wrong") or f"{row['gbs']:.0f} GB/s, {row['ratio']:.2f}x {row['peer']}"
        print(f"{name}: {said}", flush=True)
    if rows:
        record = {
            "date": date,
            "device": device,
            "commit": commit,
            "scale_gib": args.scale,
            "repeats": args.repeats,
            "warmup": WARMUP,
            "versions": versions("numpy", "numba", "numba-cuda", "torch"),
            "rows": rows,
        }
        if wrong:  # (cases that ran wrong or failed: not timed, no row)
            record["wrong"] = {r["case"]: r["wrong"] for r in wrong}
        path = write_result("fft", record, args)
        print(f"wrote {path}")
    print(f"\n{device}, commit {commit}, {args.scale:g} GiB a case, median of {args.repeats} after {WARMUP} warm-ups")
    print(f"{'case':<15}{'ms':>8}{'GB/s':>7}{'peer ms':>9}{'ratio':>7}{'copy GB/s':>10}{'of copy':>8}  target")
    for r in rows:
        verdict = "no target" if r["met"] is None else f"{r['target']}: {MET[r['met']]}"
        print(
            f"{r['case']:<15}{r['ms']:>8.3f}{r['gbs']:>7.0f}{r['peer_ms']:>9.3f}{r['ratio']:>6.2f}x"
            f"{r['copy_gbs']:>10.0f}{r['gbs'] / r['copy_gbs']:>8.0%}  {verdict}"
        )
    for r in wrong:
        print(f"{r['case']:<15}WRONG, not timed: {r['wrong']}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
