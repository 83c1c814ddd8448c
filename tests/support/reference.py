"""Kernels and NumPy references shared by the GPU and simulator tests of the block reductions."""

import operator

import numba.cuda
import numpy as np

import numba_tiles as tiles

from .compiler import cuda

DTYPES = ["int32", "int64", "uint32", "uint64", "float32", "float64"]
BLOCK_DIMS = [32, 128, 256, 1024, (16, 16), (8, 8, 4)]
# Random partial blocks beside the fixed edge cases: one on the simulator, which runs each block's threads in Python
# (its twins take every count the same way), four on a GPU.
RANDOM_BLOCKS = 1 if numba.cuda.config.ENABLE_CUDASIM else 4
OPS = {
    "+": np.add,
    "*": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "&": np.bitwise_and,
    "|": np.bitwise_or,
    "^": np.bitwise_xor,
}
# The same ops spelled as Python objects, to check every spelling reaches the same code.
SPELLED = {
    "+": operator.add,
    "*": operator.mul,
    "min": min,
    "max": max,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}


SMALL_AND_COMPLEX = ["int8", "int16", "uint8", "uint16", "float16", "complex64", "complex128"]


def cases(dtypes=DTYPES):
    """(dtype, op) pairs that make sense: bitwise ops on integers only, min/max not on complex."""
    kinds = {"+": "iufc", "*": "iufc", "min": "iuf", "max": "iuf"}
    return [(d, op) for d in dtypes for op in OPS if np.dtype(d).kind in kinds.get(op, "iu")]


def threads_of(block_dim):
    dims = block_dim if isinstance(block_dim, tuple) else (block_dim,)
    return int(np.prod(dims))


def strides_of(block_dim):
    """(BX, BY): a thread's linear rank is threadIdx.x + BX * (threadIdx.y + BY * threadIdx.z)."""
    dims = block_dim if isinstance(block_dim, tuple) else (block_dim,)
    return dims[0], dims[1] if len(dims) > 1 else 1


def num_valid_per_block(threads, rng):
    """Per-block counts: the edge cases (0, 1, full, beyond full) and random partial tiles."""
    fixed = [threads, 0, 1, threads - 1, threads + 7, max(threads // 2, 1)]
    return np.array(fixed + list(rng.integers(0, threads + 1, RANDOM_BLOCKS)), dtype=np.int64)


def random_values(dtype, op, n, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        if op == "*":  # near the unit circle: long products neither overflow nor vanish
            return (random_values(part, op, n, rng) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))).astype(dtype)
        return (random_values(part, op, n, rng) + 1j * random_values(part, op, n, rng)).astype(dtype)
    if dtype == np.float16 and op != "*":
        return (rng.integers(-20, 20, n) / 4).astype(dtype)  # sums of a tile stay exact in half precision
    if dtype.kind == "f":
        if op == "*":  # products of values near 1 stay finite and well-conditioned
            return np.exp(rng.normal(0.0, 0.05, n)).astype(dtype)
        return rng.uniform(-100.0, 100.0, n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def make_kernel(op, block_dim, api="reduce"):
    """A kernel in which block b reduces x[b*T:(b+1)*T], in full and over its first nv[b] items."""
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    OP = SPELLED[op] if api == "spelled" else op

    @cuda.jit
    def kernel(x, nv, full, part):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        v = x[b * T + t]
        if api == "sum":
            a = tiles.block_sum(v, block_dim=block_dim)
            p = tiles.block_sum(v, block_dim=block_dim, num_valid=nv[b])
        else:
            a = tiles.block_reduce(v, OP, block_dim=block_dim)
            p = tiles.block_reduce(v, OP, block_dim=block_dim, num_valid=nv[b])
        if t == 0:
            full[b] = a
            part[b] = p

    return kernel


ITEMS_PER_THREAD = [1, 2, 4, 7, 16]
ALGORITHMS = ["warp_reductions", "raking", "raking_commutative_only"]


def make_items_kernel(op, block_dim, items, algorithm, dtype):
    """Block b reduces its tile of T*items values held in blocked order: in full, over its first
    nv[b] items, and broadcast (every thread writes what it got)."""
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    N = items
    DT = np.dtype(dtype)

    @cuda.jit
    def kernel(x, nv, full, part, every):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        mine = cuda.local.array(N, DT)
        for j in range(N):
            mine[j] = x[(b * T + t) * N + j]
        a = tiles.block_reduce(mine, op, block_dim=block_dim, items_per_thread=N, algorithm=algorithm)
        p = tiles.block_reduce(mine, op, block_dim=block_dim, items_per_thread=N, algorithm=algorithm, num_valid=nv[b])
        e = tiles.block_reduce(mine, op, block_dim=block_dim, items_per_thread=N, algorithm=algorithm, broadcast=True)
        every[b * T + t] = e
        if t == 0:
            full[b] = a
            part[b] = p

    return kernel


def run_items_case(dtype, op, block_dim, items, rng, algorithm="warp_reductions"):
    T = threads_of(block_dim)
    tile = T * items
    counts = num_valid_per_block(tile, rng)
    blocks = len(counts)
    x = random_values(dtype, op, blocks * tile, rng)
    full = np.full(blocks, 123, dtype=dtype)
    part = np.full(blocks, 123, dtype=dtype)
    every = np.full(blocks * T, 123, dtype=dtype)
    make_items_kernel(op, block_dim, items, algorithm, dtype)[blocks, block_dim](x, counts, full, part, every)
    want_full, want_part = reference(dtype, op, x, counts, tile)
    check(dtype, op, full, want_full, x, tile)
    check(dtype, op, part, want_part, x, tile)
    check(dtype, op, every, np.repeat(want_full, T), np.repeat(x.reshape(blocks, tile), T, axis=0).ravel(), tile)


WARP_SIZES = [1, 2, 4, 8, 16, 32]


def make_warp_kernel(op, warp_size, api="reduce"):
    """A kernel in which logical warp g reduces x[g*W:(g+1)*W], in full and over its first nv[g] lanes."""
    W = warp_size

    @cuda.jit
    def kernel(x, nv, full, part):
        i = cuda.grid(1)
        g = i // W
        if api == "sum":
            a = tiles.warp_sum(x[i], warp_size=W)
            p = tiles.warp_sum(x[i], warp_size=W, num_valid=nv[g])
        else:
            a = tiles.warp_reduce(x[i], op, warp_size=W)
            p = tiles.warp_reduce(x[i], op, warp_size=W, num_valid=nv[g])
        if i % W == 0:
            full[g] = a
            part[g] = p

    return kernel


def run_warp_case(dtype, op, warp_size, rng, api="reduce", blocks=4, block_dim=128):
    """Launch the warp kernel on fresh data and compare each logical warp with NumPy."""
    groups = blocks * block_dim // warp_size
    edge = num_valid_per_block(warp_size, rng)
    counts = np.resize(np.concatenate([edge, rng.integers(0, warp_size + 1, groups)]), groups)
    x = random_values(dtype, op, blocks * block_dim, rng)
    full = np.full(groups, 123, dtype=dtype)
    part = np.full(groups, 123, dtype=dtype)
    make_warp_kernel(op, warp_size, api)[blocks, block_dim](x, counts, full, part)
    want_full, want_part = reference(dtype, op, x, counts, warp_size)
    check(dtype, op, full, want_full, x, warp_size)
    check(dtype, op, part, want_part, x, warp_size)


def run_divergent_warp_case(rng, blocks, block_dim=128):
    """Only odd warps call warp_sum (a warp collective needs no other warp); even warps' slots stay 0."""

    @cuda.jit
    def odd_warps(x, out):
        i = cuda.grid(1)
        if (i // 32) % 2 == 1:
            s = tiles.warp_sum(x[i])
            if i % 32 == 0:
                out[i // 32] = s

    warps = blocks * block_dim // 32
    x = rng.integers(-50, 50, 32 * warps).astype(np.int32)
    out = np.zeros(warps, np.int32)
    odd_warps[blocks, block_dim](x, out)
    np.testing.assert_array_equal(out[1::2], x.reshape(warps, 32).sum(axis=1)[1::2])
    np.testing.assert_array_equal(out[0::2], 0)


def reference(dtype, op, x, counts, threads):
    """Per-block results: float64 for floats, exact (wrapping) in the dtype for integers."""
    dtype = np.dtype(dtype)
    ufunc = OPS[op]
    acc = {"f": np.float64, "c": np.complex128}.get(dtype.kind, dtype)
    tiles_ = x.reshape(-1, threads).astype(acc)
    full = ufunc.reduce(tiles_, axis=1, dtype=acc)
    part = np.array(
        [
            ufunc.reduce(row[: min(n, threads)], dtype=acc) if n > 0 else tiles.ops.parse("t", op).identity(dtype)
            for row, n in zip(tiles_, counts)
        ]
    )
    return full, part


def check(dtype, op, got, want, x, threads):
    """Integers exactly; floats within the float64 reference's rounding bound for `threads` terms."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        np.testing.assert_array_equal(got, want.astype(dtype))
        return
    assert not np.isnan(got).any()
    if op in ("min", "max"):
        np.testing.assert_array_equal(got, want.astype(dtype))
        return
    # Summation/product error grows at most ~ threads * eps relative to the magnitudes involved.
    eps = np.finfo(dtype).eps
    scale = np.abs(x.reshape(-1, threads)).astype(np.float64).sum(axis=1) if op == "+" else np.abs(want)
    error = np.abs(got.astype(np.complex128) - want)
    np.testing.assert_array_less(error, threads * eps * scale + np.finfo(dtype).tiny)


def run_case(dtype, op, block_dim, rng, api="reduce"):
    """Launch the kernel on fresh data and compare with NumPy."""
    T = threads_of(block_dim)
    counts = num_valid_per_block(T, rng)
    blocks = len(counts)
    x = random_values(dtype, op, blocks * T, rng)
    full = np.full(blocks, 123, dtype=dtype)  # poison: every block must write its slot
    part = np.full(blocks, 123, dtype=dtype)
    kernel = make_kernel(op, block_dim, api)
    kernel[blocks, block_dim](x, counts, full, part)
    want_full, want_part = reference(dtype, op, x, counts, T)
    check(dtype, op, full, want_full, x, T)
    check(dtype, op, part, want_part, x, T)
