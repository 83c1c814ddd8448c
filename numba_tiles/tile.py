"""Cooperative 2-D tile movement between global and shared memory, the tiles a block's matrix product works on.

A block-level GEMM step is: `tile_load` tiles of A and B from global into shared memory,
`numba_tiles.matmul` them into a shared C tile (accumulating over K), `tile_store` C's tile back.
Sizes and block shape are compile-time; the tiles are ordinary ``cuda.shared.array``\\ s.
"""

from numba.cuda import types

from . import _matrices, simulator
from . import extending as ext
from .extending import CUB, Arg, Instance, intrinsic

TILE = CUB.header("tile.cuh")
_shape = _matrices.block_shape


def _move(name, args, matrix):
    """The tile's `Dtype`, after checking the tile, the global ``matrix`` (same dtype) and the origin."""
    dtype = _matrices.matrix(name, args, "tile")
    _matrices.matrix(name, args, matrix, like=("tile", dtype))
    _matrices.origin(name, args)
    return dtype


def _load_rule(name, args):
    dtype = _move(name, args, "src")
    return Instance(
        intrinsic=name,
        header=TILE,
        template=TILE.template("numba_tiles::tile_load", T=dtype.cxx, **_shape(args), Async=args["asynchronous"]),
        result=types.none,
        params=_matrices.copy_params(args, dtype.numba),
    )


@intrinsic(
    consts={"block_dim": ext.block_dim, "asynchronous": ext.flag("asynchronous")},
    rule=_load_rule,
    simulate=simulator.tile_load,
)
def tile_load(src, tile, row, col, fill=0, *, block_dim, asynchronous=False):
    """Copy the tile of the 2-D array ``src`` whose top-left item is ``src[row, col]`` into ``tile``, by the
    whole block.

    ``tile`` is a 2-D array (usually ``cuda.shared.array((rows, cols), dtype)``, row- or
    column-major, padded or not) that gets ``tile.shape`` items; ``src`` is any 2-D array of the
    same dtype, with any strides (a transposed view too). Items outside ``src`` become ``fill``,
    so a tile may overhang the matrix's edge. Every thread of the block must call it; it ends
    with a barrier, so the tile is ready for the block when it returns. A tile inside the matrix
    whose rows (or columns) both store contiguously in aligned 16-byte vectors moves 16 bytes per
    thread a step, otherwise one item at a time.

    With ``asynchronous=True`` it returns at once, without a barrier: the vector copies run in
    the background (sm_80's ``cp.async``) while the block works on other tiles, and the tile may
    be read only after `tile_wait` (double buffering: load the next K-tile, compute on this one).

    {{block_dim}}

    Example::

        from numba import cuda, float32
        import numba_tiles as tiles

        @cuda.jit
        def tile_sums(x, out):
            tile = cuda.shared.array((32, 32), float32)
            tiles.tile_load(x, tile, 32 * cuda.blockIdx.y, 32 * cuda.blockIdx.x, block_dim=256)
            if cuda.threadIdx.x < 32:
                s = 0.0
                for j in range(32):
                    s += tile[cuda.threadIdx.x, j]
                out[32 * cuda.blockIdx.y + cuda.threadIdx.x, cuda.blockIdx.x] = s

        cubin = tiles.compile(tile_sums, "void(float32[:, :], float32[:, :])")
    """


def wait_rule(name, args, threads=0):
    """`tile_wait`'s rule, which `Matmul.wait` shares (``threads``: the description's block, its launch bound)."""
    pending = args["pending"]
    if pending is not None:
        ext.integer(name, "pending", pending)
        if isinstance(pending, types.IntegerLiteral) and pending.literal_value < 0:
            raise ext.error(
                name,
                f"pending must be a non-negative int, got {pending.literal_value}",
                "pass how many of the last asynchronous loads may still run, e.g. pending=2, or 0",
            )
    return Instance(
        intrinsic=name,
        header=TILE,
        template=TILE.template("numba_tiles::tile_wait", **_shape(args)),
        result=types.none,
        params=(Arg("pending", types.int32, 0),),
        threads=threads,
    )


@intrinsic(consts={"block_dim": ext.block_dim}, rule=wait_rule, simulate=simulator.tile_wait)
def tile_wait(pending=0, *, block_dim):
    """Wait for this block's ``asynchronous=True`` `tile_load`\\ s: all of them, or all but the last ``pending``,
    then a barrier, so the tiles they filled are ready for the block.

    ``pending`` is an int, a constant or a run-time value (the loads still ahead of a pipeline's
    last steps); past 7 it waits as for 7, for more loads than asked, never fewer.

    {{block_dim}}

    Example::

        from numba import cuda, float32
        import numba_tiles as tiles

        @cuda.jit
        def sums_of_two_tiles(x, out):
            first = cuda.shared.array((16, 16), float32)
            second = cuda.shared.array((16, 16), float32)
            tiles.tile_load(x, first, 0, 0, block_dim=256, asynchronous=True)
            tiles.tile_load(x, second, 16, 0, block_dim=256, asynchronous=True)
            tiles.tile_wait(1, block_dim=256)              # the first is ready; the second may not be
            t = cuda.threadIdx.x
            out[t // 16, t % 16] = first[t // 16, t % 16]
            tiles.tile_wait(block_dim=256)
            out[16 + t // 16, t % 16] = second[t // 16, t % 16]

        cubin = tiles.compile(sums_of_two_tiles, "void(float32[:, ::1], float32[:, ::1])")
    """


def _store_rule(name, args):
    dtype = _move(name, args, "dst")
    return Instance(
        intrinsic=name,
        header=TILE,
        template=TILE.template("numba_tiles::tile_store", T=dtype.cxx, **_shape(args)),
        result=types.none,
        params=(Arg("tile", args["tile"]), Arg("dst", args["dst"]), Arg("row", types.int64), Arg("col", types.int64)),
    )


@intrinsic(consts={"block_dim": ext.block_dim}, rule=_store_rule, simulate=simulator.tile_store)
def tile_store(tile, dst, row, col, *, block_dim):
    """Copy ``tile`` into the 2-D array ``dst`` at ``dst[row, col]``, by the whole block; items past ``dst``'s
    edge are dropped.

    ``tile`` and ``dst`` are as for `tile_load` (``dst`` writable). Every thread of the block
    must call it; it ends with a barrier, so the tile may be refilled when it returns.

    {{block_dim}}

    Example::

        from numba import cuda, float64
        import numba_tiles as tiles

        @cuda.jit
        def transpose(x, out):
            tile = cuda.shared.array((16, 16), float64)
            r, c = 16 * cuda.blockIdx.y, 16 * cuda.blockIdx.x
            tiles.tile_load(x, tile, r, c, block_dim=(16, 16))
            tiles.tile_store(tile, out.T, r, c, block_dim=(16, 16))   # out.T: a strided view

        cubin = tiles.compile(transpose, "void(float64[:, :], float64[:, :])")
    """
