"""Kernels and NumPy references for the neighbor collectives (adjacent difference, discontinuity,
shuffle), shared by the GPU and simulator tests. Each ``run_*`` launches on fresh random data and
checks every thread's result against the reference of the whole tile."""

import numpy as np

import numba_tiles as tiles

from .collectives import absmax, random_array
from .compiler import cuda
from .reference import strides_of, threads_of

DIFFERENCE_OPS = {
    "-": np.subtract,
    "+": np.add,
    "max": np.maximum,
    "absmax": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
}


def adjacent_difference(tile, op, right, neighbor=None, num_valid=None):
    """The tile after the difference: item i is op(x[i], x[i-1]) (op(x[i], x[i+1]) with ``right``) for the
    first ``num_valid`` items; the edge item keeps its value, or takes op(edge, neighbor); with
    ``right`` and ``num_valid`` the last valid item keeps its value; items past num_valid keep theirs."""
    x = np.asarray(tile)
    out = x.copy()
    n = len(x)
    v = n if num_valid is None else min(max(int(num_valid), 0), n)
    cast = lambda a: np.asarray(a).astype(x.dtype)  # noqa: E731
    if not right:
        if v > 1:
            out[1:v] = cast(op(x[1:v], x[: v - 1]))
        if neighbor is not None and v > 0:
            out[0] = cast(op(x[:1], np.asarray([neighbor], x.dtype)))[0]
    else:
        if v > 1:
            out[: v - 1] = cast(op(x[: v - 1], x[1:v]))
        if neighbor is not None and num_valid is None:
            out[n - 1] = cast(op(x[n - 1 :], np.asarray([neighbor], x.dtype)))[0]
    return out


def run_adjacent_difference(dtype, op, block_dim, items, rng, right=False, neighbor=False, num_valid=False):
    T, (BX, BY) = threads_of(block_dim), strides_of(block_dim)
    DT = np.dtype(dtype)
    tile, blocks = T * items, 4
    x = random_array(DT, blocks * tile, rng, "+")
    nv = np.array([tile, 0, tile // 3 + 1, tile + 5], np.int64)
    edge = random_array(DT, blocks, rng, "+")
    fn = absmax if op == "absmax" else op

    @cuda.jit
    def kernel(x, nv, edge, out):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        mine = cuda.local.array(items, DT)
        for j in range(items):
            mine[j] = x[b * tile + t * items + j]
        if neighbor and num_valid:
            tiles.block_adjacent_difference(
                mine, fn, block_dim=block_dim, items_per_thread=items, right=right, neighbor=edge[b], num_valid=nv[b]
            )
        elif neighbor:
            tiles.block_adjacent_difference(
                mine, fn, block_dim=block_dim, items_per_thread=items, right=right, neighbor=edge[b]
            )
        elif num_valid:
            tiles.block_adjacent_difference(
                mine, fn, block_dim=block_dim, items_per_thread=items, right=right, num_valid=nv[b]
            )
        else:
            tiles.block_adjacent_difference(mine, fn, block_dim=block_dim, items_per_thread=items, right=right)
        for j in range(items):
            out[b * tile + t * items + j] = mine[j]

    out = np.zeros_like(x)
    kernel[blocks, block_dim](x, nv, edge, out)
    for b in range(blocks):
        want = adjacent_difference(
            x[b * tile : (b + 1) * tile],
            DIFFERENCE_OPS[op],
            right,
            edge[b] if neighbor else None,
            nv[b] if num_valid else None,
        )
        np.testing.assert_array_equal(out[b * tile : (b + 1) * tile], want, err_msg=f"block {b}")


def discontinuity(tile, differ, predecessor=None, successor=None):
    """(heads, tails): where item i differs from i-1 (i+1); the edges are flagged unless given a neighbor."""
    x = np.asarray(tile)
    heads, tails = np.ones(len(x), bool), np.ones(len(x), bool)
    heads[1:] = differ(x[:-1], x[1:])
    tails[:-1] = heads[1:]
    if predecessor is not None:
        heads[0] = differ(np.asarray([predecessor], x.dtype), x[:1])[0]
    if successor is not None:
        tails[-1] = differ(x[-1:], np.asarray([successor], x.dtype))[0]
    return heads, tails


def run_discontinuity(
    dtype, block_dim, items, rng, flags=("heads", "tails"), neighbors=False, compare="!=", flag_dtype="uint8"
):
    T, (BX, BY) = threads_of(block_dim), strides_of(block_dim)
    DT, FT = np.dtype(dtype), np.dtype(flag_dtype)
    tile, blocks = T * items, 3
    x = rng.integers(0, 3, blocks * tile).astype(DT)  # runs of equal items
    edge = rng.integers(0, 3, 2 * blocks).astype(DT)
    heads_on, tails_on = "heads" in flags, "tails" in flags
    fn = "!=" if compare == "!=" else same_parity_differs

    @cuda.jit
    def kernel(x, edge, heads, tails):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        mine = cuda.local.array(items, DT)
        h = cuda.local.array(items, FT)
        s = cuda.local.array(items, FT)
        for j in range(items):
            mine[j] = x[b * tile + t * items + j]
            h[j] = 7
            s[j] = 7
        if heads_on and tails_on and neighbors:
            tiles.block_discontinuity(
                mine,
                block_dim=block_dim,
                items_per_thread=items,
                heads=h,
                tails=s,
                compare=fn,
                predecessor=edge[2 * b],
                successor=edge[2 * b + 1],
            )
        elif heads_on and tails_on:
            tiles.block_discontinuity(mine, block_dim=block_dim, items_per_thread=items, heads=h, tails=s, compare=fn)
        elif heads_on and neighbors:
            tiles.block_discontinuity(
                mine, block_dim=block_dim, items_per_thread=items, heads=h, compare=fn, predecessor=edge[2 * b]
            )
        elif heads_on:
            tiles.block_discontinuity(mine, block_dim=block_dim, items_per_thread=items, heads=h, compare=fn)
        elif neighbors:
            tiles.block_discontinuity(
                mine, block_dim=block_dim, items_per_thread=items, tails=s, compare=fn, successor=edge[2 * b + 1]
            )
        else:
            tiles.block_discontinuity(mine, block_dim=block_dim, items_per_thread=items, tails=s, compare=fn)
        for j in range(items):
            heads[b * tile + t * items + j] = h[j]
            tails[b * tile + t * items + j] = s[j]

    heads, tails = np.zeros(blocks * tile, FT), np.zeros(blocks * tile, FT)
    kernel[blocks, block_dim](x, edge, heads, tails)
    differ = np.not_equal if compare == "!=" else (lambda a, b: (a % 2) != (b % 2))
    for b in range(blocks):
        part = slice(b * tile, (b + 1) * tile)
        want_h, want_t = discontinuity(
            x[part], differ, edge[2 * b] if neighbors else None, edge[2 * b + 1] if neighbors else None
        )
        untouched = np.full(tile, 7, FT)
        np.testing.assert_array_equal(heads[part], want_h.astype(FT) if heads_on else untouched, err_msg="heads")
        np.testing.assert_array_equal(tails[part], want_t.astype(FT) if tails_on else untouched, err_msg="tails")


@cuda.jit(device=True)
def same_parity_differs(a, b):
    return (a % 2) != (b % 2)


def run_shuffle(dtype, kind, block_dim, items, rng, distances=(1, -1, 3, 1000)):
    """offset/rotate by each run-time distance (one launch per distance), or up/down of a tile."""
    T, (BX, BY) = threads_of(block_dim), strides_of(block_dim)
    DT = np.dtype(dtype)
    blocks = 3
    array = kind in ("up", "down")
    tile = T * items if array else T
    x = random_array(DT, blocks * tile, rng, "+")

    @cuda.jit
    def kernel(x, distance, out, edges):
        t = cuda.threadIdx.x + BX * (cuda.threadIdx.y + BY * cuda.threadIdx.z)
        b = cuda.blockIdx.x
        if array:
            mine = cuda.local.array(items, DT)
            for j in range(items):
                mine[j] = x[b * tile + t * items + j]
            edges[b * T + t] = tiles.block_shuffle(mine, kind, block_dim=block_dim, items_per_thread=items)
            for j in range(items):
                out[b * tile + t * items + j] = mine[j]
        else:
            out[b * T + t] = tiles.block_shuffle(x[b * T + t], kind, block_dim=block_dim, distance=distance[0])

    for d in distances if not array else (0,):
        out, edges = np.zeros_like(x), np.zeros(blocks * T, DT)
        kernel[blocks, block_dim](x, np.array([d], np.int32), out, edges)
        for b in range(blocks):
            seg = x[b * tile : (b + 1) * tile]
            got = out[b * tile : (b + 1) * tile]
            if kind == "offset":
                src = np.arange(T) + d
                want = np.where((src >= 0) & (src < T), seg[np.clip(src, 0, T - 1)], seg)
            elif kind == "rotate":
                want = seg[(np.arange(T) + d) % T]
            else:
                want = seg.copy()
                if kind == "up":
                    want[1:] = seg[:-1]
                else:
                    want[:-1] = seg[1:]
                edge = seg[-1] if kind == "up" else seg[0]
                np.testing.assert_array_equal(edges[b * T : (b + 1) * T], np.repeat(edge, T), err_msg="edge")
            np.testing.assert_array_equal(got, want, err_msg=f"{kind} by {d}, block {b}")
