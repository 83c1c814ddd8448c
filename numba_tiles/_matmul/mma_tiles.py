"""``tiles.matmul`` and `Matmul`'s register form by the block's warps on CuTe's MMA atoms (``lto_libs/mma.cuh`` and
``mma_steps.cuh``, sm_80 and later): fp16, bf16, tf32 and fp64 tiles of whole atoms, no cuBLASDx GEMM instantiated
(their compile takes a fraction of cuBLASDx's)."""

import os

from .. import _matrices
from .._library import CUTE

MMA = CUTE.header("mma.cuh")
STEPS = CUTE.header("mma_steps.cuh")  # the register form's steps
# The atoms (PTX's mma.sync shapes) by the C++ precision A and B are computed in: (M, N, K) of C's warp tiles'
# steps, N counting the atoms side by side that one load of B feeds (mma.cuh's nb: two, one for fp64), and the
# tag mma.cuh takes.
ATOMS = {
    "__half": ((16, 16, 16), "__half"),
    "__nv_bfloat16": ((16, 16, 16), "__nv_bfloat16"),
    "cublasdx::tfloat32_t": ((16, 16, 8), "::numba_tiles::tf32"),
    "double": ((8, 8, 4), "double"),
}
REGISTERS = 65536  # an SM's 32-bit registers, which a block's threads share (255 at most a thread)
# NUMBA_TILES_MATMUL_ATOMS=0 leaves every product to cuBLASDx: the reference the tests and benchmarks compare with,
# and a way around a fault of this form.
ENABLED = "NUMBA_TILES_MATMUL_ATOMS"


def _serves(compute, cc):
    """Whether the atoms may multiply in ``compute`` for compute capability ``cc`` (None: the simulator's)."""
    return os.environ.get(ENABLED) != "0" and cc is not None and cc >= (8, 0) and compute in ATOMS


def warp_tile(compute, shape, threads, cc):
    """The ``(TM, TN)`` of C each warp multiplies at a time when `mma.cuh` computes ``shape`` in ``compute`` (a C++
    precision) with ``threads`` a block for compute capability ``cc``; None where it does not (cuBLASDx does).

    Of the warp tiles that fit the shape and leave half a thread's registers to the rest, the one that moves least
    from shared memory to the slowest warp: its rounds of tiles times each tile's products and fragment loads.
    """
    if not _serves(compute, cc) or threads % 32:
        return None
    (am, an, ak), _ = ATOMS[compute]
    m, n, k = shape
    if m % am or n % an or k % ak:
        return None
    warps = threads // 32
    per_item = 2 if compute == "double" else 1  # (registers an accumulator takes)
    budget = min(255, REGISTERS // threads) // 2
    fits = [
        (tm, tn)
        for tm in range(am, min(m, 64) + 1, am)
        for tn in range(an, min(n, 64) + 1, an)
        if m % tm == 0 and n % tn == 0 and tm * tn * per_item // 32 <= budget
    ]
    if not fits:
        return None

    def cost(tile):
        tm, tn = tile
        rounds = -(-(m // tm) * (n // tn) // warps)
        return rounds * (tm * tn + 8 * (tm + tn)), -tm * tn

    return min(fits, key=cost)


def template(m, n, k, storage, layout, block, compute, tile):
    """``mma_matmul``'s template for the product in ``compute`` by warp tiles of ``tile``: ``storage`` (TA, TB and
    TC), ``layout`` (the arrangements, leading dimensions and alignment) and ``block`` as matmul.cuh's ``matmul``
    takes them."""
    _, tag = ATOMS[compute]
    tm, tn = tile
    return MMA.template("numba_tiles::mma_matmul", M=m, N=n, K=k, **storage, **layout, **block, P=tag, TM=tm, TN=tn)


def warp_grid(mm, cc):
    """The ``(WM, WN)`` grid of warps over C's tile by which `mma_steps.cuh` computes the register form's steps of
    the `Matmul` ``mm`` for compute capability ``cc``; None where it does not (cuBLASDx does: a half-precision
    accumulator, other precisions, tiles not of whole atoms a warp).

    Each warp holds an equal share of C (``mm.accumulator_items`` a thread, as the host counts it), of whole atoms;
    of the grids that give one, the one whose warps load the fewest fragments a K-step (TM + TN), rows first.
    """
    accumulates = "float64" if mm._compute == "double" else "float32"
    if not _serves(mm._compute, cc) or mm.accumulator != accumulates:
        return None
    (am, an, ak), _ = ATOMS[mm._compute]
    m, n, k = mm.shape
    warps = mm.threads // 32
    if k % ak:
        return None
    grids = [
        (wm, warps // wm)
        for wm in range(1, warps + 1)
        if warps % wm == 0 and m % (wm * am) == 0 and n % (warps // wm * an) == 0
    ]
    return min(grids, key=lambda g: (m // g[0] + n // g[1], -g[0]), default=None)


def steps_template(mm, function, grid, **more):
    """The template of ``function`` in `mma_steps.cuh` for ``mm``'s register form on the warp ``grid``, then
    ``more``: as `base.instantiate` spells matmul.cuh's, with the atoms' tag for the precisions."""
    m, n, k = mm.shape
    bx, by, bz = mm.block_dim
    row_a, row_b = (_matrices.ORDERS[a] for a in mm.arrangement)
    items = dict(AItems=mm.a_items, BItems=mm.b_items, CItems=mm.accumulator_items)
    shape = dict(M=m, N=n, K=k, P=ATOMS[mm._compute][1], RowA=row_a, RowB=row_b, BX=bx, BY=by, BZ=bz)
    return STEPS.template(function, **shape, **items, WM=grid[0], WN=grid[1], **more)
