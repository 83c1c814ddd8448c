"""Kernels and NumPy references for load/store, scans, exchange, histogram and radix sort,
shared by the GPU and simulator tests. Each ``run_*`` builds its kernel for the compile-time
parameters, launches it on fresh random data and checks every output."""

import numpy as np

import numba_tiles as tiles

from .compiler import cuda
from .reference import OPS, random_values, strides_of, threads_of

# Every dtype a thread-local array can hold (numba-cuda has no bfloat16 arrays).
ARRAY_DTYPES = [
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]
SORT_DTYPES = [d for d in ARRAY_DTYPES if not d.startswith("complex")]  # what the block sorts take
SHAPES = [128, (16, 8), (8, 4, 4)]
ITEMS_PER_THREAD = [1, 2, 4, 7, 16]
MOVE_ALGORITHMS = ["direct", "striped", "vectorize", "transpose", "warp_transpose", "warp_transpose_timesliced"]
SCAN_ALGORITHMS = ["raking", "raking_memoize", "warp_scans"]


def random_array(dtype, n, rng, op="+"):
    return random_values(dtype, op, n, rng)


def positions(kind, threads, items):
    """positions[t, j]: the tile rank of thread t's item j in the arrangement ``kind``, as the tile's ranks laid
    out: blocked, each thread's items in a row; striped, item j of every thread before item j + 1 of any;
    warp-striped, striped within each warp's 32 * items ranks."""
    ranks = np.arange(threads * items)
    if kind == "striped":
        return ranks.reshape(items, threads).T
    if kind == "warp_striped":  # [warp, item, lane] → [warp, lane, item]
        return ranks.reshape(threads // 32, items, 32).transpose(0, 2, 1).reshape(threads, items)
    return ranks.reshape(threads, items)


def run_load_store(dtype, block_dim, items, algorithm, rng, num_valid=False, oob_default=False):
    """Load tiles (the last one partial), dump what each thread got, store them back; check both,
    that nothing past the valid items is written, and that the store left the items as they were."""
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    tile = T * items
    blocks = 5
    n = tile * (blocks - 1) + tile // 3 + 1  # the last tile runs off the array
    nv = np.array([tile, 0, 1, tile // 2, tile], np.int64)
    DT = np.dtype(dtype)
    x = random_array(DT, n, rng)
    keep, default = 7, 3  # Python ints: numba-cuda cannot emit float16 constants (it writes `i16 7.0`)

    @cuda.jit
    def kernel(x, nv, dump, out, after):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        mine = cuda.local.array(items, DT)
        for j in range(items):
            mine[j] = keep
        start = b * tile
        if num_valid and oob_default:
            tiles.block_load(
                x[start:],
                mine,
                block_dim=block_dim,
                items_per_thread=items,
                algorithm=algorithm,
                num_valid=nv[b],
                oob_default=default,
            )
        elif num_valid:
            tiles.block_load(
                x[start:], mine, block_dim=block_dim, items_per_thread=items, algorithm=algorithm, num_valid=nv[b]
            )
        elif oob_default:
            tiles.block_load(
                x[start:], mine, block_dim=block_dim, items_per_thread=items, algorithm=algorithm, oob_default=default
            )
        else:
            tiles.block_load(x[start:], mine, block_dim=block_dim, items_per_thread=items, algorithm=algorithm)
        for j in range(items):
            dump[(b * T + t) * items + j] = mine[j]
        if num_valid:
            tiles.block_store(
                out[start : x.size],
                mine,
                block_dim=block_dim,
                items_per_thread=items,
                algorithm=algorithm,
                num_valid=nv[b],
            )
        else:
            tiles.block_store(
                out[start : x.size], mine, block_dim=block_dim, items_per_thread=items, algorithm=algorithm
            )
        for j in range(items):
            after[(b * T + t) * items + j] = mine[j]

    poison = DT.type(5)
    dump = np.full(blocks * tile, poison, DT)
    out = np.full(n + tile, poison, DT)  # room past the end: a stray write would show there
    after = np.zeros_like(dump)
    kernel[blocks, block_dim](x, nv, dump, out, after)

    kind = "striped" if algorithm == "striped" else "blocked"
    where = positions(kind, T, items).ravel()
    want_out = np.full(n + tile, poison, DT)
    for b in range(blocks):
        start = b * tile
        valid = max(min(int(nv[b]) if num_valid else tile, n - start), 0)
        got = dump[b * tile : (b + 1) * tile]
        want = np.where(where < valid, x[np.minimum(start + where, n - 1)], DT.type(default if oob_default else keep))
        np.testing.assert_array_equal(got, want, err_msg=f"block {b} load (valid {valid})")
        want_out[start : start + valid] = x[start : start + valid]
    np.testing.assert_array_equal(out, want_out, err_msg="store")
    np.testing.assert_array_equal(after, dump, err_msg="items after the store")


def scan_reference(dtype, op, flat, exclusive, initial):
    """Inclusive/exclusive scan in float64 (floats) or the dtype (integers, wrapping), and the total."""
    dtype = np.dtype(dtype)
    acc = np.float64 if dtype.kind == "f" else (np.complex128 if dtype.kind == "c" else dtype)
    ufunc = OPS[op]
    values = np.asarray(flat).astype(acc)
    seeded = values if initial is None else np.concatenate([np.array([initial]).astype(acc), values])
    scanned = ufunc.accumulate(seeded, dtype=acc)
    if exclusive:
        scanned = scanned[:-1]
    elif initial is not None:
        scanned = scanned[1:]
    return scanned, ufunc.reduce(values, dtype=acc)


def with_seed(flat, seed):
    """The terms a seeded scan adds up: the seed, then the items."""
    return flat if seed is None else np.concatenate([np.asarray([seed], dtype=flat.dtype), flat])


def check_scan(dtype, op, got, want, flat):
    """Integers exactly; floats/complex within the rounding of a running sum (or product) of ``flat``,
    every term the scan combined (with_seed for a seeded scan)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" or op in ("min", "max"):
        np.testing.assert_array_equal(got, np.asarray(want).astype(dtype))
        return
    eps = np.finfo(dtype).eps
    magnitude = np.abs(np.asarray(flat).astype(np.complex128))
    scale = (magnitude.sum() if op == "+" else np.abs(want).max()) + 1
    np.testing.assert_array_less(np.abs(np.asarray(got).astype(np.complex128) - want), len(flat) * eps * scale)


def run_block_scan(dtype, op, block_dim, items, rng, algorithm="raking", exclusive=False, initial=False):
    """Array form (in place, with the aggregate), scalar form and the running prefix over 3 tiles."""
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    DT = np.dtype(dtype)
    tile = T * items
    blocks, rounds = 3, 3
    x = random_array(DT, blocks * rounds * tile, rng, op)
    init = x[0] if initial else None  # any value of the dtype

    @cuda.jit
    def kernel(x, scanned, totals, scalars, running):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        mine = cuda.local.array(items, DT)
        base = b * rounds * tile
        for j in range(items):
            mine[j] = x[base + t * items + j]
        if initial:
            total = tiles.block_scan(
                mine,
                op,
                block_dim=block_dim,
                items_per_thread=items,
                algorithm=algorithm,
                exclusive=exclusive,
                initial_value=x[0],
                aggregate=True,
            )
            s = tiles.block_scan(
                x[base + t], op, block_dim=block_dim, algorithm=algorithm, exclusive=exclusive, initial_value=x[0]
            )
        else:
            total = tiles.block_scan(
                mine,
                op,
                block_dim=block_dim,
                items_per_thread=items,
                algorithm=algorithm,
                exclusive=exclusive,
                aggregate=True,
            )
            s = tiles.block_scan(x[base + t], op, block_dim=block_dim, algorithm=algorithm, exclusive=exclusive)
        for j in range(items):
            scanned[base + t * items + j] = mine[j]
        totals[b * T + t] = total
        scalars[b * T + t] = s
        # The running prefix: the segment is `rounds` tiles, scanned tile by tile.
        prefix = cuda.local.array(1, DT)
        prefix[0] = x[0]
        for r in range(rounds):
            for j in range(items):
                mine[j] = x[base + r * tile + t * items + j]
            tiles.block_scan(
                mine,
                op,
                block_dim=block_dim,
                items_per_thread=items,
                algorithm=algorithm,
                exclusive=exclusive,
                prefix=prefix,
            )
            for j in range(items):
                running[base + r * tile + t * items + j] = mine[j]

    scanned = np.zeros_like(x)
    running = np.zeros_like(x)
    totals = np.zeros(blocks * T, DT)
    scalars = np.zeros(blocks * T, DT)
    kernel[blocks, block_dim](x, scanned, totals, scalars, running)
    identity = tiles.ops.parse("test", op).identity(DT)
    for b in range(blocks):
        seg = x[b * rounds * tile : (b + 1) * rounds * tile]
        seed = init if initial else (identity if exclusive else None)
        want, total = scan_reference(DT, op, seg[:tile], exclusive, seed)
        check_scan(DT, op, scanned[b * rounds * tile :][:tile], want, with_seed(seg[:tile], seed))
        check_scan(DT, op, totals[b * T : (b + 1) * T], np.repeat(total, T), seg[:tile])
        want, _ = scan_reference(DT, op, seg[:T], exclusive, seed)
        check_scan(DT, op, scalars[b * T : (b + 1) * T], want, with_seed(seg[:T], seed))
        want, _ = scan_reference(DT, op, seg, exclusive, x[0])
        check_scan(DT, op, running[b * rounds * tile : (b + 1) * rounds * tile], want, with_seed(seg, x[0]))


def run_warp_scan(dtype, op, warp_size, rng, exclusive=False, initial=False, blocks=2, block_dim=128, num_valid=None):
    """num_valid: None, or the lanes of each logical warp that count (the others take the op's identity)."""
    DT = np.dtype(dtype)
    W = warp_size
    x = random_array(DT, blocks * block_dim, rng, op)
    nv = np.array([-1 if num_valid is None else num_valid], np.int32)

    @cuda.jit
    def kernel(x, nv, scanned, totals):
        i = cuda.grid(1)
        if initial and num_valid is not None:
            s, total = tiles.warp_scan(
                x[i], op, warp_size=W, exclusive=exclusive, initial_value=x[0], aggregate=True, num_valid=nv[0]
            )
        elif initial:
            s, total = tiles.warp_scan(x[i], op, warp_size=W, exclusive=exclusive, initial_value=x[0], aggregate=True)
        elif num_valid is not None:
            s, total = tiles.warp_scan(x[i], op, warp_size=W, exclusive=exclusive, aggregate=True, num_valid=nv[0])
        else:
            s, total = tiles.warp_scan(x[i], op, warp_size=W, exclusive=exclusive, aggregate=True)
        scanned[i] = s
        totals[i] = total

    scanned = np.zeros_like(x)
    totals = np.zeros_like(x)
    kernel[blocks, block_dim](x, nv, scanned, totals)
    identity = tiles.ops.parse("test", op).identity(DT)
    for g in range(len(x) // W):
        seg = x[g * W : (g + 1) * W].copy()
        if num_valid is not None:
            seg[max(num_valid, 0) :] = identity
        seed = x[0] if initial else (identity if exclusive else None)
        want, total = scan_reference(DT, op, seg, exclusive, seed)
        check_scan(DT, op, scanned[g * W : (g + 1) * W], want, with_seed(seg, seed))
        check_scan(DT, op, totals[g * W : (g + 1) * W], np.repeat(total, W), seg)


_EXCHANGES = {
    "striped_to_blocked": ("striped", "blocked"),
    "blocked_to_striped": ("blocked", "striped"),
    "warp_striped_to_blocked": ("warp_striped", "blocked"),
    "blocked_to_warp_striped": ("blocked", "warp_striped"),
}


def run_exchange(dtype, arrangement, block_dim, items, rng):
    """Thread t holds x[t*N:(t+1)*N]; after the exchange, item j must be the tile item at its target rank
    whose source position was (t', j')."""
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    DT = np.dtype(dtype)
    tile = T * items
    blocks = 3
    x = random_array(DT, blocks * tile, rng)

    @cuda.jit
    def kernel(x, out):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        mine = cuda.local.array(items, DT)
        for j in range(items):
            mine[j] = x[(b * T + t) * items + j]
        tiles.block_exchange(mine, arrangement, block_dim=block_dim, items_per_thread=items)
        for j in range(items):
            out[(b * T + t) * items + j] = mine[j]

    out = np.zeros_like(x)
    kernel[blocks, block_dim](x, out)
    source, target = _EXCHANGES[arrangement]
    # Held (thread, item) → rank in the source arrangement; the thread then holds target ranks.
    by_rank = np.empty(tile, np.int64)
    by_rank[positions(source, T, items).ravel()] = np.arange(tile)
    gather = by_rank[positions(target, T, items).ravel()]
    for b in range(blocks):
        np.testing.assert_array_equal(out[b * tile : (b + 1) * tile], x[b * tile : (b + 1) * tile][gather])


def run_histogram_tiles(x, bins, block_dim, items, algorithm):
    """One histogram of all of ``x`` (bin indices, a whole number of tiles) by 3 blocks that each count every third
    tile into shared counters (``accumulate=True``) and add them to the global ones, against NumPy's."""
    T = threads_of(block_dim)
    tile = T * items
    DT = x.dtype

    @cuda.jit
    def kernel(x, out):
        mine = cuda.local.array(items, DT)
        counts = cuda.shared.array(bins, np.uint32)
        for k in range(cuda.threadIdx.x, bins, T):
            counts[k] = 0
        cuda.syncthreads()
        for t in range(cuda.blockIdx.x, x.size // tile, cuda.gridDim.x):
            tiles.block_load(x[t * tile :], mine, block_dim=block_dim, items_per_thread=items)
            tiles.block_histogram(
                mine,
                counts,
                block_dim=block_dim,
                items_per_thread=items,
                bins=bins,
                algorithm=algorithm,
                accumulate=True,
            )
        for k in range(cuda.threadIdx.x, bins, T):
            cuda.atomic.add(out, k, counts[k])

    out = np.zeros(bins, np.uint32)
    kernel[3, block_dim](x, out)
    np.testing.assert_array_equal(out, np.bincount(x, minlength=bins))


def run_histogram(dtype, counter, bins, block_dim, items, algorithm, rng, accumulate=False, x=None):
    """Histograms of 3 blocks' tiles of ``x`` (by default random bin indices) against NumPy's."""
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    DT, CT = np.dtype(dtype), np.dtype(counter)
    tile = T * items
    blocks = 3
    x = rng.integers(0, bins, blocks * tile).astype(DT) if x is None else x.astype(DT)

    @cuda.jit
    def kernel(x, out):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        mine = cuda.local.array(items, DT)
        for j in range(items):
            mine[j] = x[(b * T + t) * items + j]
        counts = cuda.shared.array(bins, CT)
        if accumulate:
            for k in range(t, bins, T):
                counts[k] = 1000
            cuda.syncthreads()
            tiles.block_histogram(
                mine,
                counts,
                block_dim=block_dim,
                items_per_thread=items,
                bins=bins,
                algorithm=algorithm,
                accumulate=True,
            )
        else:
            tiles.block_histogram(
                mine, counts, block_dim=block_dim, items_per_thread=items, bins=bins, algorithm=algorithm
            )
        for k in range(t, bins, T):
            out[b * bins + k] = counts[k]

    out = np.zeros(blocks * bins, CT)
    kernel[blocks, block_dim](x, out)
    for b in range(blocks):
        want = np.bincount(x[b * tile : (b + 1) * tile], minlength=bins) + (1000 if accumulate else 0)
        np.testing.assert_array_equal(out[b * bins : (b + 1) * bins], want)


def sort_keys(dtype, n, rng):
    """Keys with many duplicates (stability shows), and for floats ±0.0, infinities and negatives."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        keys = rng.integers(-8, 8, n).astype(dtype) / 2
        keys[rng.integers(0, n, 8)] = [np.inf, -np.inf, -0.0, 0.0, -0.0, 1.5, -7.5, 0.0]
        return keys
    info = np.iinfo(dtype)
    pool = rng.integers(info.min, info.max, 16, dtype=dtype, endpoint=True)
    return pool[rng.integers(0, 16, n)]


def ordered_digits(dtype, keys, begin, end):
    """Bits [begin, end) of the unsigned key CUB's radix sort orders by, key by key: an integer's bits with its sign
    bit flipped (unsigned ones as they are); a float's with every bit flipped where it is negative, else its sign
    bit set (-0.0 counting as +0.0)."""
    dtype = np.dtype(dtype)
    width = 8 * dtype.itemsize
    top, every = 1 << (width - 1), (1 << width) - 1
    digits = []
    for key in np.asarray(keys, dtype):
        bits = 0 if dtype.kind == "f" and key == 0 else int.from_bytes(key.tobytes(), "little")
        if dtype.kind == "f":
            bits = ~bits & every if bits & top else bits | top
        elif dtype.kind == "i":
            bits ^= top
        digits.append(bits >> begin & (1 << (end - begin)) - 1)
    return np.array(digits, np.uint64)


def run_radix_sort(dtype, block_dim, items, rng, descending=False, striped=False, with_values=True, bits=None):
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    DT = np.dtype(dtype)
    tile = T * items
    blocks = 3
    keys = sort_keys(DT, blocks * tile, rng)
    begin, end = bits if bits is not None else (0, 8 * DT.itemsize)

    @cuda.jit
    def kernel(keys, out_keys, out_values):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        k = cuda.local.array(items, DT)
        v = cuda.local.array(items, np.int32)
        for j in range(items):
            k[j] = keys[(b * T + t) * items + j]
            v[j] = t * items + j
        if with_values and bits is not None:
            tiles.block_radix_sort(
                k,
                values=v,
                block_dim=block_dim,
                items_per_thread=items,
                descending=descending,
                striped=striped,
                begin_bit=begin,
                end_bit=end,
            )
        elif with_values:
            tiles.block_radix_sort(
                k, values=v, block_dim=block_dim, items_per_thread=items, descending=descending, striped=striped
            )
        else:
            tiles.block_radix_sort(
                k, block_dim=block_dim, items_per_thread=items, descending=descending, striped=striped
            )
        for j in range(items):
            out_keys[(b * T + t) * items + j] = k[j]
            out_values[(b * T + t) * items + j] = v[j]

    out_keys = np.zeros_like(keys)
    out_values = np.full(keys.size, -1, np.int32)
    kernel[blocks, block_dim](keys, out_keys, out_values)
    where = positions("striped" if striped else "blocked", T, items).ravel()
    for b in range(blocks):
        mine = keys[b * tile : (b + 1) * tile]
        digits = ordered_digits(DT, mine, begin, end)
        order = sorted(range(tile), key=lambda i: int(digits[i]), reverse=descending)  # stable
        got_keys = out_keys[b * tile : (b + 1) * tile]
        bits = f"u{DT.itemsize}"  # bitwise: the sort moves keys, -0.0 stays -0.0
        np.testing.assert_array_equal(got_keys.view(bits), mine[order][where].view(bits))
        if with_values:
            np.testing.assert_array_equal(out_values[b * tile : (b + 1) * tile], np.array(order)[where])


@cuda.jit(device=True)
def absmax(a, b):
    """A user op: associative and commutative, exact in every dtype (for values that do not overflow abs)."""
    return max(abs(a), abs(b))


@cuda.jit(device=True)
def by_magnitude(a, b):
    """A user comparison: by absolute value only, so that stability shows."""
    return abs(a) < abs(b)


def run_user_ops(dtype, block_dim, items, rng):
    """block_reduce, block_scan (inclusive, and exclusive from initial_value), warp_reduce and
    warp_scan with a @cuda.jit(device=True) op, against the same op in NumPy."""
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    DT = np.dtype(dtype)
    tile = T * items
    blocks = 3
    x = (rng.integers(-1000, 1000, blocks * tile) / (4 if DT.kind == "f" else 1)).astype(DT)

    @cuda.jit
    def kernel(x, reduced, scanned, excl, warp_red, warp_scanned):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        mine = cuda.local.array(items, DT)
        for j in range(items):
            mine[j] = x[(b * T + t) * items + j]
        r = tiles.block_reduce(mine, absmax, block_dim=block_dim, items_per_thread=items)
        e = tiles.block_scan(x[b * T + t], absmax, block_dim=block_dim, exclusive=True, initial_value=x[0] * 0)
        tiles.block_scan(mine, absmax, block_dim=block_dim, items_per_thread=items)
        w = tiles.warp_reduce(x[b * T + t], absmax, warp_size=8)
        warp_scanned[b * T + t] = tiles.warp_scan(x[b * T + t], absmax, warp_size=16)
        for j in range(items):
            scanned[(b * T + t) * items + j] = mine[j]
        excl[b * T + t] = e
        if t % 8 == 0:
            warp_red[(b * T + t) // 8] = w
        if t == 0:
            reduced[b] = r

    reduced = np.zeros(blocks, DT)
    scanned = np.zeros_like(x)
    excl = np.zeros(blocks * T, DT)
    warp_red = np.zeros(blocks * T // 8, DT)
    warp_scanned = np.zeros(blocks * T, DT)
    kernel[blocks, block_dim](x, reduced, scanned, excl, warp_red, warp_scanned)

    def inclusive(rows):  # the op's scan: the first item as it is, then max(|a|, |b|)
        want = np.maximum.accumulate(np.abs(rows), axis=1)
        want[:, 0] = rows[:, 0]
        return want.ravel()

    np.testing.assert_array_equal(reduced, np.abs(x).reshape(blocks, tile).max(axis=1))
    np.testing.assert_array_equal(scanned, inclusive(x.reshape(blocks, tile)))
    per_thread = x[: blocks * T].reshape(blocks, T)
    want_excl = np.concatenate(
        [np.zeros((blocks, 1)), np.maximum.accumulate(np.abs(per_thread), axis=1)[:, :-1]], axis=1
    )
    np.testing.assert_array_equal(excl, want_excl.ravel().astype(DT))
    np.testing.assert_array_equal(warp_red, np.abs(per_thread).reshape(-1, 8).max(axis=1))
    np.testing.assert_array_equal(warp_scanned, inclusive(per_thread.reshape(-1, 16)))


def run_merge_sort(dtype, compare, block_dim, items, rng, with_values=True):
    """compare: "<", ">" or "magnitude" (the by_magnitude device function)."""
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    DT = np.dtype(dtype)
    tile = T * items
    blocks = 3
    low = 0 if DT.kind == "u" else -50  # (the reference orders in float64: keep keys exact there)
    keys = (rng.integers(low, 50, blocks * tile) / (2 if DT.kind == "f" else 1)).astype(DT)
    less = by_magnitude if compare == "magnitude" else compare

    @cuda.jit
    def kernel(keys, out_keys, out_values):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        k = cuda.local.array(items, DT)
        v = cuda.local.array(items, np.int32)
        for j in range(items):
            k[j] = keys[(b * T + t) * items + j]
            v[j] = t * items + j
        if with_values:
            tiles.block_merge_sort(k, less, values=v, block_dim=block_dim, items_per_thread=items)
        else:
            tiles.block_merge_sort(k, less, block_dim=block_dim, items_per_thread=items)
        for j in range(items):
            out_keys[(b * T + t) * items + j] = k[j]
            out_values[(b * T + t) * items + j] = v[j]

    out_keys = np.zeros_like(keys)
    out_values = np.full(keys.size, -1, np.int32)
    kernel[blocks, block_dim](keys, out_keys, out_values)
    sort_key = {"<": lambda v: v, ">": lambda v: -v, "magnitude": np.abs}[compare]
    for b in range(blocks):
        mine = keys[b * tile : (b + 1) * tile]
        order = np.argsort(sort_key(mine.astype(np.float64)), kind="stable")
        np.testing.assert_array_equal(out_keys[b * tile : (b + 1) * tile], mine[order])
        if with_values:
            np.testing.assert_array_equal(out_values[b * tile : (b + 1) * tile], order)


def shared_temp_bytes(dtype, block_dim, items):
    """The largest temp any block intrinsic of run_shared_temp needs (tiles.temp_bytes of each call)."""
    from numba import from_dtype, int32, uint32

    tile = from_dtype(np.dtype(dtype))[::1]
    kw = {"block_dim": block_dim, "items_per_thread": items}
    return max(
        tiles.temp_bytes(tiles.block_load, tile, tile, algorithm="transpose", **kw),
        tiles.temp_bytes(tiles.block_merge_sort, tile, ">", **kw),
        tiles.temp_bytes(tiles.block_histogram, int32[::1], uint32[::1], bins=32, **kw),
        tiles.temp_bytes(tiles.block_radix_sort, tile, values=int32[::1], **kw),
        tiles.temp_bytes(tiles.block_reduce, tile, "max", broadcast=True, **kw),
        tiles.temp_bytes(tiles.block_scan, tile, aggregate=True, **kw),
        tiles.temp_bytes(tiles.block_store, tile, tile, algorithm="warp_transpose", **kw),
        tiles.temp_bytes(tiles.block_exchange, tile, "blocked_to_striped", **kw),
    )


def run_shared_temp(dtype, block_dim, items, rng):
    """Every block intrinsic in one kernel, one after the other, all in one ``temp`` buffer of the
    largest size they need; each step's output is checked."""
    T = threads_of(block_dim)
    BX, BY = strides_of(block_dim)
    DT = np.dtype(dtype)
    tile = T * items
    blocks = 3
    need = shared_temp_bytes(DT, block_dim, items)
    # small values with many repeats: sums exact in every dtype, and stability shows
    low = 0 if DT.kind == "u" else -50
    x = (rng.integers(low, 50, blocks * tile) / (2 if DT.kind == "f" else 1)).astype(DT)

    @cuda.jit
    def kernel(x, descending, counts_out, scanned, striped, ranks, maxes, totals):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        start = b * tile
        temp = cuda.shared.array(need, np.uint8)
        counts = cuda.shared.array(32, np.uint32)
        k = cuda.local.array(items, DT)
        v = cuda.local.array(items, np.int32)
        bins = cuda.local.array(items, np.int32)
        tiles.block_load(x[start:], k, block_dim=block_dim, items_per_thread=items, algorithm="transpose", temp=temp)
        tiles.block_merge_sort(k, ">", block_dim=block_dim, items_per_thread=items, temp=temp)
        for j in range(items):
            descending[start + t * items + j] = k[j]
            v[j] = t * items + j
            bins[j] = np.int32(k[j] * 2) & 31
        tiles.block_histogram(bins, counts, block_dim=block_dim, items_per_thread=items, bins=32, temp=temp)
        tiles.block_radix_sort(k, values=v, block_dim=block_dim, items_per_thread=items, temp=temp)
        m = tiles.block_reduce(k, "max", block_dim=block_dim, items_per_thread=items, broadcast=True, temp=temp)
        total = tiles.block_scan(k, block_dim=block_dim, items_per_thread=items, aggregate=True, temp=temp)
        tiles.block_store(
            scanned[start:], k, block_dim=block_dim, items_per_thread=items, algorithm="warp_transpose", temp=temp
        )
        tiles.block_exchange(k, "blocked_to_striped", block_dim=block_dim, items_per_thread=items, temp=temp)
        for j in range(items):
            striped[start + t * items + j] = k[j]
            ranks[start + t * items + j] = v[j]
        for c in range(t, 32, T):
            counts_out[b * 32 + c] = counts[c]
        maxes[b * T + t] = m
        totals[b * T + t] = total

    descending, scanned, striped = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    ranks = np.zeros(x.size, np.int32)
    counts = np.zeros(blocks * 32, np.uint32)
    maxes, totals = np.zeros(blocks * T, DT), np.zeros(blocks * T, DT)
    kernel[blocks, block_dim](x, descending, counts, scanned, striped, ranks, maxes, totals)
    for b in range(blocks):
        part = slice(b * tile, (b + 1) * tile)
        mine = x[part]
        np.testing.assert_array_equal(descending[part], np.sort(mine)[::-1], err_msg="merge sort")
        want_counts = np.bincount(
            (mine.astype(np.int64 if DT.kind != "f" else np.float64) * 2).astype(np.int64) & 31, minlength=32
        )
        np.testing.assert_array_equal(counts[b * 32 : (b + 1) * 32], want_counts, err_msg="histogram")
        np.testing.assert_array_equal(ranks[part], np.argsort(descending[part], kind="stable"), err_msg="radix sort")
        np.testing.assert_array_equal(maxes[b * T : (b + 1) * T], np.repeat(mine.max(), T), err_msg="reduce")
        want = np.cumsum(np.sort(mine), dtype=DT)
        np.testing.assert_array_equal(totals[b * T : (b + 1) * T], np.repeat(want[-1], T), err_msg="scan total")
        np.testing.assert_array_equal(scanned[part], want, err_msg="scan, store")
        np.testing.assert_array_equal(striped[part], want[positions("striped", T, items).ravel()], err_msg="exchange")
