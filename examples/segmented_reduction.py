"""Segmented reductions at the speed of a full-array read, written with numba_tiles intrinsics.

``segmented_reduce(x, seg_len, op)`` reduces each run of ``seg_len`` items of ``x``;
``csr_reduce(x, offsets, op)`` each ``x[offsets[i]:offsets[i + 1]]``. Both launch and return
the output at once (a device array; a NumPy array on the simulator). ``op`` is ``"+"``,
``"min"`` or ``"max"``; dtypes are NumPy's integers and floats.

How they reach the memory's speed (benchmarks/segmented_reduce.py measures them):

- Every thread loads ``items_per_thread`` consecutive items at once with ``block_load``'s
  ``"vectorize"`` algorithm (16-byte loads), so each thread has 64 bytes in flight.
- Each block loads its next tile before it reduces the current one, so its loads stay in
  flight across tiles; and the grid is ``WAVES`` times what fits on the GPU at once, so that
  while some blocks wait at a block-wide reduction's barrier, newer ones keep loading
  (measured on an H200: one wave of blocks walking the whole array reaches ~95% of the
  bandwidth these reach).
- Where the segments are shorter than a tile, a tile holds several of them and the threads of
  each (a logical warp) reduce it with ``warp_reduce``; a segment of a whole tile is reduced
  with ``block_reduce``; longer segments are summed per thread across their tiles first, and a
  segment split between blocks is combined with one atomic per block.
- Irregular segments start anywhere: their tiles start at the aligned address below the
  segment's start and end at its end (``num_valid``), and the items outside the segment count
  as the op's identity, so the loads stay 16-byte vectors and read nothing of the neighbours
  but the few items below an unaligned start.
- Irregular segments of at most 2048 float32 on average (8 KiB) are reduced by a warp each
  instead of a block, which would leave most of its tile idle (measured on an H200, mean length
  32: 0.78 against 0.10 TB/s; 512: 3.5 against 1.2).

The kernels use no name of numba-cuda's but ``cuda`` (NumPy scalar types, the dispatcher's own typing), so
the same source compiles with numba-cuda-mlir's ``cuda`` too (benchmarks/segmented_reduce.py times both).

    python examples/segmented_reduction.py      # checks every kernel against NumPy
"""

import functools
import math

import numpy as np
from numba import cuda

import numba_tiles as tiles

BLOCK = 128  # threads per block
VECTOR_BYTES = 64  # bytes each thread loads per tile: four 16-byte loads
WAVES = 16  # blocks per resident block slot: while some wait at a barrier, newer ones keep loads in flight
WARP_LOADS = 8  # loads in flight per lane where a warp reduces a segment
SIMULATOR = cuda.config.ENABLE_CUDASIM  # (numba-cuda's: numba-cuda-mlir has no simulator)
SHORT = 8192  # bytes: segments of at most this on average are reduced a warp each (H200: 3.8 against a block's
#              3.5 TB/s at a mean of 2048 float32, 0.96 against 3.5 at 4096)


def identity(op, dtype):
    """The value that leaves ``op`` unchanged: 0 for +, the largest value for min, the smallest for max."""
    dtype = np.dtype(dtype)
    if op == "+":
        return dtype.type(0)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    big = np.inf if dtype.kind == "f" else info.max
    small = -np.inf if dtype.kind == "f" else info.min
    return dtype.type(big if op == "min" else small)


def _combine(op, ty):
    """``op`` on two values of NumPy scalar type ``ty``, an inlined device function (int32 + int32 stays int32)."""
    if op == "+":
        return cuda.jit(device=True, inline="always")(lambda a, b: ty(a + b))
    pick = min if op == "min" else max
    return cuda.jit(device=True, inline="always")(lambda a, b: pick(a, b))


def _items_per_thread(dtype, nbytes=VECTOR_BYTES):
    return max(nbytes // np.dtype(dtype).itemsize, 1)


def _tile_items(dtype, seg_len):
    """Items per thread with which a tile is whole segments of at most a warp each, or one segment, or a
    part of one (then the tile kernel applies); None where none does."""
    ipt, vector = _items_per_thread(dtype), _items_per_thread(dtype, 16)
    tile = BLOCK * ipt
    if seg_len % tile == 0 or (tile % seg_len == 0 and seg_len % ipt == 0 and seg_len // ipt <= 32):
        return ipt
    if seg_len < tile and seg_len % (BLOCK * vector) == 0:  # one segment a tile, in fewer items per thread
        return seg_len // BLOCK
    return None


@functools.lru_cache(maxsize=None)
def _tile_kernel(dtype, op, seg_len, ipt):
    """Segments of ``seg_len`` items where a segment is a whole number of threads' items and a tile
    a whole number of segments, or a segment a whole number of tiles.

    ``kernel[grid, BLOCK](x, out, per_block)``: block b reduces tiles [b·per_block, (b+1)·per_block)
    (parts of long segments), or with ``per_block`` 0 whole segments b, b + grid, b + 2·grid, ...
    """
    ty = np.dtype(dtype).type
    tile = BLOCK * ipt
    combine, zero = _combine(op, ty), identity(op, dtype)
    group = seg_len // ipt  # threads per segment, when a tile holds whole segments
    per_seg = max(seg_len // tile, 1)  # tiles per segment

    @cuda.jit(device=True, inline="always")
    def thread_total(items):
        acc = items[0]
        for i in range(1, ipt):
            acc = combine(acc, items[i])
        return acc

    # How a tile's thread totals become segment results: chosen here, so that the kernel has
    # only the collective its segments need.
    if group <= 32:  # several segments per tile, one logical warp each
        @cuda.jit(device=True, inline="always")
        def finish(out, t, mine, acc, first, last):
            total = tiles.warp_reduce(mine, op, warp_size=group)
            if cuda.threadIdx.x % group == 0:
                out[t * (tile // seg_len) + cuda.threadIdx.x // group] = total
            return acc
    elif per_seg == 1:  # one segment per tile
        @cuda.jit(device=True, inline="always")
        def finish(out, t, mine, acc, first, last):
            total = tiles.block_reduce(mine, op, block_dim=BLOCK)
            if cuda.threadIdx.x == 0:
                out[t] = total
            return acc
    else:  # several tiles per segment: reduce where the segment or the block's range ends
        @cuda.jit(device=True, inline="always")
        def finish(out, t, mine, acc, first, last):
            acc = combine(acc, mine)
            if (t + 1) % per_seg == 0 or t + 1 == last:
                total = tiles.block_reduce(acc, op, block_dim=BLOCK)
                acc = ty(zero)
                if cuda.threadIdx.x == 0:
                    seg = t // per_seg
                    if first <= seg * per_seg and (seg + 1) * per_seg <= last:
                        out[seg] = total
                    else:  # shared with a neighbouring block
                        if op == "+":
                            cuda.atomic.add(out, seg, total)
                        elif op == "min":
                            cuda.atomic.min(out, seg, total)
                        else:
                            cuda.atomic.max(out, seg, total)
            return acc

    @cuda.jit(device=True, inline="always")
    def load(x, t, items):
        tiles.block_load(x[t * tile:], items, block_dim=BLOCK, items_per_thread=ipt, algorithm="vectorize")

    @cuda.jit
    def kernel(x, out, per_block):
        ntiles = x.size // tile
        if per_block:  # a range of tiles: parts of a few long segments
            first = cuda.blockIdx.x * per_block
            last = min(first + per_block, ntiles)
            t, jump = first, 0
        else:  # whole segments: the block's first, then every grid-th
            first, last = 0, ntiles
            t, jump = cuda.blockIdx.x * per_seg, (cuda.gridDim.x - 1) * per_seg
        # Two tiles in flight: while one is reduced the other is loading (no copy between them,
        # which would wait for the loads).
        a = cuda.local.array(ipt, ty)
        b = cuda.local.array(ipt, ty)
        if t < last:
            load(x, t, a)
        acc = ty(zero)
        while t < last:
            u = t + 1 + (jump if (t + 1) % per_seg == 0 else 0)
            if u < last:
                load(x, u, b)
            acc = finish(out, t, thread_total(a), acc, first, last)
            if u >= last:
                break
            t = u + 1 + (jump if (u + 1) % per_seg == 0 else 0)
            if t < last:
                load(x, t, a)
            acc = finish(out, u, thread_total(b), acc, first, last)

    return kernel


@functools.lru_cache(maxsize=None)
def _csr_kernel(dtype, op, regular):
    """Any segments: ``kernel[grid, BLOCK](x, offsets, seg_len, out)``; block b reduces segments b, b + grid, ...

    Segment s is ``x[s·seg_len:(s+1)·seg_len]`` if ``regular``, else ``x[offsets[s]:offsets[s+1]]``.
    """
    ty, ipt = np.dtype(dtype).type, _items_per_thread(dtype)
    tile = BLOCK * ipt
    align = max(16 // np.dtype(dtype).itemsize, 1)  # items per 16 bytes: where a vector load may start
    combine, zero = _combine(op, ty), identity(op, dtype)

    @cuda.jit(device=True, inline="always")
    def step(x, offsets, seg_len, out, seg, at, start, end):
        """The block's next tile after the one at ``at`` of segment ``seg``: (seg, at, start, end); seg ≥ out.size at the end.

        A segment's tiles start at the aligned address at or below its start, so that its loads
        are 16-byte vectors; an empty segment with no tile gets the identity here.
        """
        at += tile
        while at >= end:
            seg += cuda.gridDim.x
            if seg >= out.size:
                break
            start = seg * seg_len if regular else offsets[seg]
            end = start + seg_len if regular else offsets[seg + 1]
            at = start - start % align
            if at >= end and cuda.threadIdx.x == 0:
                out[seg] = zero
        return seg, at, start, end

    @cuda.jit(device=True, inline="always")
    def load(x, items, at, end):
        """The tile at ``at``, up to the segment's end: the identity past it (nothing past it is read)."""
        tiles.block_load(x[at:], items, block_dim=BLOCK, items_per_thread=ipt, algorithm="vectorize",
                         num_valid=end - at, oob_default=zero)

    @cuda.jit(device=True, inline="always")
    def accumulate(acc, items, at, start):
        first = at + cuda.threadIdx.x * ipt
        for i in range(ipt):
            if start <= first + i:  # the items before the segment (from its aligned start) are a neighbour's
                acc = combine(acc, items[i])
        return acc

    @cuda.jit(device=True, inline="always")
    def finish(out, acc, seg, at, end):
        if at + tile < end:
            return acc
        total = tiles.block_reduce(acc, op, block_dim=BLOCK)
        if cuda.threadIdx.x == 0:
            out[seg] = total
        return ty(zero)

    @cuda.jit
    def kernel(x, offsets, seg_len, out):
        a = cuda.local.array(ipt, ty)
        b = cuda.local.array(ipt, ty)
        # Start "before" the block's first segment; each step yields the next tile of its work.
        seg, at, start, end = step(x, offsets, seg_len, out, cuda.blockIdx.x - cuda.gridDim.x, 0, 0, 0)
        if seg < out.size:
            load(x, a, at, end)
        acc = ty(zero)
        while seg < out.size:
            seg_b, at_b, start_b, end_b = step(x, offsets, seg_len, out, seg, at, start, end)
            if seg_b < out.size:
                load(x, b, at_b, end_b)
            acc = finish(out, accumulate(acc, a, at, start), seg, at, end)
            if seg_b >= out.size:
                break
            seg, at, start, end = step(x, offsets, seg_len, out, seg_b, at_b, start_b, end_b)
            if seg < out.size:
                load(x, a, at, end)
            acc = finish(out, accumulate(acc, b, at_b, start_b), seg_b, at_b, end_b)

    return kernel


@functools.lru_cache(maxsize=None)
def _warp_kernel(dtype, op, regular):
    """Short segments, any lengths: ``kernel[grid, BLOCK](x, offsets, seg_len, out)``; warp w of the grid's W
    reduces segments w, w + W, ... (the same segments as ``_csr_kernel``'s).

    A block per segment would leave most of a tile idle on a segment of a few hundred items; a warp
    reads its segment in coalesced 128-byte rows, WARP_LOADS rows in flight per lane.
    """
    ty = np.dtype(dtype).type
    combine, zero = _combine(op, ty), identity(op, dtype)
    warps = BLOCK // 32
    rows = 32 * WARP_LOADS

    @cuda.jit
    def kernel(x, offsets, seg_len, out):
        v = cuda.local.array(WARP_LOADS, ty)
        lane = cuda.threadIdx.x % 32
        seg = cuda.blockIdx.x * warps + cuda.threadIdx.x // 32
        while seg < out.size:  # the same for the whole warp: warp_reduce sees all its lanes
            start = seg * seg_len if regular else offsets[seg]
            end = start + seg_len if regular else offsets[seg + 1]
            acc = ty(zero)
            i = start + lane
            while i + rows - 32 < end:  # WARP_LOADS independent loads before the first use
                for k in range(WARP_LOADS):
                    v[k] = x[i + 32 * k]
                for k in range(WARP_LOADS):
                    acc = combine(acc, v[k])
                i += rows
            while i < end:
                acc = combine(acc, x[i])
                i += 32
            total = tiles.warp_reduce(acc, op)
            if lane == 0:
                out[seg] = total
            seg += cuda.gridDim.x * warps

    return kernel


def _resident_blocks(kernel, *args):
    """How many blocks of ``kernel`` (compiled for ``args``) fit on the GPU at once: the grid that keeps every SM busy
    with no second wave. A few on the simulator, which runs each thread in Python."""
    if SIMULATOR:
        return 2
    if not hasattr(kernel, "_resident"):  # asked once: a launch is a few microseconds of host time
        compiled = kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))
        kernel._resident = compiled.max_cooperative_grid_blocks(BLOCK)
    return kernel._resident


def _output(x, count, out):
    if out is not None:
        return out
    return np.empty(count, x.dtype) if SIMULATOR else cuda.device_array(count, x.dtype)


def _fill(out, value):
    if SIMULATOR:
        out[:] = value
    else:
        _fill_kernel()[max(-(-out.size // BLOCK), 1), BLOCK](out, value)


@functools.lru_cache(maxsize=None)
def _fill_kernel():
    """``kernel[grid, BLOCK](out, value)``: every item of ``out`` set to ``value``."""
    @cuda.jit
    def fill(out, value):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = value

    return fill


def segmented_reduce(x, seg_len, op="+", out=None):
    """``out[i] = op-reduction of x[i·seg_len:(i+1)·seg_len]`` for a 1-D array ``x`` whose size is a multiple of ``seg_len``.

    Example::

        x = cuda.to_device(np.arange(1, 13, dtype=np.float32))
        segmented_reduce(x, 4).copy_to_host()    # [10, 26, 42]
    """
    if seg_len < 1 or x.size % seg_len:
        raise ValueError(f"segmented_reduce: x.size ({x.size}) must be a positive multiple of seg_len ({seg_len})")
    count = x.size // seg_len
    out = _output(x, count, out)
    ipt = _tile_items(x.dtype, seg_len)
    tile = BLOCK * (ipt or 1)
    if ipt is None or x.size % tile:
        no_offsets = np.zeros(1, np.int64) if SIMULATOR else cuda.device_array(1, np.int64)
        return _launch_csr(x, no_offsets, seg_len, out, op, True)
    ntiles = x.size // tile
    kernel = _tile_kernel(x.dtype, op, seg_len, ipt)
    resident = _resident_blocks(kernel, x, out, ntiles)
    if count >= 4 * resident:  # whole segments per block: no atomics
        kernel[min(count, resident * WAVES), BLOCK](x, out, 0)
    else:  # few long segments: split them between blocks, which combine with atomics
        per_block = -(-ntiles // (resident * WAVES))
        _fill(out, identity(op, x.dtype))
        kernel[-(-ntiles // per_block), BLOCK](x, out, per_block)
    return out


def _launch_csr(x, offsets, seg_len, out, op, regular):
    """A warp per segment where they are short on average, else a block per segment."""
    if x.size * x.dtype.itemsize <= SHORT * max(out.size, 1):
        kernel, per_block = _warp_kernel(x.dtype, op, regular), BLOCK // 32
    else:
        kernel, per_block = _csr_kernel(x.dtype, op, regular), 1
    grid = min(-(-out.size // per_block), _resident_blocks(kernel, x, offsets, seg_len, out) * WAVES)
    kernel[max(grid, 1), BLOCK](x, offsets, seg_len, out)
    return out


def csr_reduce(x, offsets, op="+", out=None):
    """``out[i] = op-reduction of x[offsets[i]:offsets[i+1]]`` (the op's identity for an empty segment).

    Example::

        x = cuda.to_device(np.arange(1, 13, dtype=np.float32))
        csr_reduce(x, cuda.to_device(np.array([0, 2, 7, 12]))).copy_to_host()    # [3, 25, 50]
    """
    out = _output(x, offsets.size - 1, out)
    return _launch_csr(x, offsets, 0, out, op, False)


def _check():
    """Every kernel path against NumPy, at sizes that also suit the simulator."""
    rng = np.random.default_rng()
    small = SIMULATOR
    cases = [(np.float32, 128, 64), (np.float32, 1024, 9), (np.float32, 4096, 9), (np.float32, 4096 * 3, 5),
             (np.float64, 4096, 9), (np.float64, 2048, 4), (np.int32, 64, 128), (np.int32, 1000, 7),
             (np.float32, 7, 1000)]
    for dtype, seg_len, count in cases[:6] if small else cases:
        x = (rng.integers(-100, 100, seg_len * count) if np.dtype(dtype).kind == "i"
             else rng.standard_normal(seg_len * count)).astype(dtype)
        d_x = x if small else cuda.to_device(x)
        for op, ref in (("+", np.sum), ("min", np.min), ("max", np.max)):
            got = segmented_reduce(d_x, seg_len, op)
            got = got if small else got.copy_to_host()
            want = ref(x.reshape(count, seg_len).astype(np.float64), axis=1)
            assert np.allclose(got, want, rtol=1e-4, atol=1e-3 * math.sqrt(seg_len)), (dtype, seg_len, op)
        for cuts in (5, x.size // (256 if small else 16)):  # long segments (a block each), short ones (a warp each)
            offsets = np.concatenate([[0], np.sort(rng.integers(0, x.size, cuts)), [x.size]]).astype(np.int64)
            got = csr_reduce(d_x, offsets if small else cuda.to_device(offsets), "+")
            got = got if small else got.copy_to_host()
            want = np.add.reduceat(x.astype(np.float64), offsets[:-1]) * (np.diff(offsets) > 0)
            assert np.allclose(got, want, rtol=1e-4, atol=1e-2), (dtype, "csr", cuts)
        print(f"{np.dtype(dtype).name} segments of {seg_len}: +, min, max and CSR match NumPy")


if __name__ == "__main__":
    _check()
