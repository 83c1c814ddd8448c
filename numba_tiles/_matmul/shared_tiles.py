"""``tiles.matmul``: ``c = alpha * a @ b + beta * c`` for tiles in shared memory, by the block's warps on MMA atoms
(`mma_tiles`) where they serve, else by cuBLASDx's block ``execute`` (the one-call form; `numba_tiles.tile` moves
the tiles)."""

import math

from numba.cuda import types

from .. import _compile, _matrices
from .. import extending as ext
from ..extending import Arg, Instance, intrinsic
from . import mma_tiles, twins
from .base import MATMUL


def _lds(intrinsic, value):
    if value is not None and not (
        isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, int) and v >= 1 for v in value)
    ):
        raise ext.error(
            intrinsic,
            f"ld must be a tuple of 3 positive ints, got {value!r}",
            "pass ld=(lda, ldb, ldc), the leading dimensions of padded tiles, or leave it out",
        )
    return value


def _arrangement(intrinsic, value):
    if value is None:  # (each tile's order from its layout)
        return value
    return _matrices.arrangement(intrinsic, value, "ABC", left_out="for C- or F-contiguous tiles")


def _order(name, args, param, given):
    """Whether the tile ``param`` is row-major: its Numba layout, or the given arrangement."""
    if given is not None:
        return _matrices.ORDERS[given]
    layout = args[param].layout
    if layout not in "CF":
        raise ext.error(
            name,
            f"{param} is a strided view ({args[param]}), whose order is known only at run time",
            "pass arrangement=('row_major' or 'col_major', ...) for A, B and C",
        )
    return layout == "C"


def _matmul_rule(name, args):
    ta = _matrices.matrix(name, args, "a")
    tb = _matrices.matrix(name, args, "b", like=("a", ta))
    tc = _matrices.matrix(name, args, "c")
    compute = _matrices.compute_type(name, ta, tc, args["precision"])
    _matrices.scales(name, args)
    _matrices.whole_warps(name, args["block_dim"])
    m, n, k = args["shape"]
    given = args["arrangement"] or (None, None, None)
    rows = {p: _order(name, args, p, g) for p, g in zip("abc", given)}
    dense = [cols if rows[p] else rows_ for p, (rows_, cols) in zip("abc", ((m, k), (k, n), (m, n)))]
    lds = args["ld"] or tuple(dense)
    if any(ld < least for ld, least in zip(lds, dense)):
        raise ext.error(
            name,
            f"ld={lds} is less than the tiles' {tuple(dense)} (a row-major tile's leading dimension "
            f"is its row stride, at least its columns; a column-major one's its column stride)",
            "pass ld= the strides of the padded tiles, or leave it out for unpadded ones",
        )
    align = args["alignment"] or 0
    for param, ld, dtype in zip("abc", lds, (ta, tb, tc)):
        if align and ld * dtype.numpy.itemsize % align:
            raise ext.error(
                name,
                f"alignment={align} needs each tile row (or column) to start {align}-byte aligned; "
                f"{param}'s leading dimension {ld} is {ld * dtype.numpy.itemsize} bytes",
                f"pad the tiles to a leading dimension of a multiple of {align // dtype.numpy.itemsize} "
                "items (ld=), or leave alignment out",
            )
    storage = dict(TA=ta.cxx, TB=tb.cxx, TC=tc.cxx)
    layout = dict(RowA=rows["a"], RowB=rows["b"], RowC=rows["c"], LDA=lds[0], LDB=lds[1], LDC=lds[2], Align=align)
    block = _matrices.block_shape(args)
    cc = _compile.typing_cc()
    tile = mma_tiles.warp_tile(compute, (m, n, k), math.prod(args["block_dim"]), cc)
    if tile is not None:
        header, template = mma_tiles.MMA, mma_tiles.template(m, n, k, storage, layout, block, compute, tile)
    else:
        header = MATMUL
        template = MATMUL.template(
            "numba_tiles::matmul", M=m, N=n, K=k, **storage, PA=compute, PB=compute, **layout, **block
        )
    scales = (Arg("alpha", tc.numba, 1), Arg("beta", tc.numba, 0))
    params = (Arg("a", args["a"]), Arg("b", args["b"]), Arg("c", args["c"]), *scales)
    return Instance(intrinsic=name, header=header, template=template, result=types.none, params=params)


@intrinsic(
    consts={
        "shape": _matrices.shape_mnk,
        "block_dim": ext.block_dim,
        "arrangement": _arrangement,
        "ld": _lds,
        "alignment": ext.choice("alignment", {None: 0, 16: 16}),
        "precision": ext.choice("precision", dict.fromkeys([None, *_matrices.NAMED])),
    },
    rule=_matmul_rule,
    simulate=twins.matmul,
)
def matmul(
    a, b, c, alpha=1.0, beta=0.0, *, shape, block_dim, arrangement=None, ld=None, precision=None, alignment=None
):
    """``c = alpha * a @ b + beta * c`` for shared-memory tiles, by the whole block on tensor cores.

    ``shape=(M, N, K)``: ``a`` is M x K, ``b`` K x N, ``c`` M x N, each a 2-D array in shared
    memory, row- or column-major: a C- or F-contiguous ``cuda.shared.array`` (a transposed one is
    column-major), or a view of a padded one, with ``arrangement=`` (a 3-tuple of ``"row_major"``
    / ``"col_major"``) and ``ld=`` (the three leading dimensions: a row-major tile's row stride,
    a column-major one's column stride, in items). Shapes and strides are checked when the call
    runs (a message and a stop if they differ; for ``cuda.shared.array`` tiles the check folds
    away). Precisions, by
    the tiles' dtypes: float16 A and B with float16 or float32 C (tensor cores), float32,
    float64, complex64, complex128; or ``precision="tf32"`` (float32 tiles, tensor cores) or ``"bf16"`` (A and B
    holding bfloat16 bits in int16 or uint16 tiles, as ``torch_tensor.view(torch.int16)``
    gives them; float32 C). ``alpha`` and
    ``beta`` (run-time values, cast to C's dtype, complex for complex tiles) default to 1 and 0: C is overwritten.
    ``alignment=16`` promises 16-byte-aligned tiles (``cuda.shared.array(shape, dtype,
    alignment=16)``, rows of whole 16 bytes; checked when the call runs): A and B then move with
    ``ldmatrix``, much faster than item by item. (Numba's simulator has no ``alignment=``: leave it
    out there.) Every thread of the block must call it; the tiles must be complete (`tile_load`
    ends with a barrier) and the call ends with one, so ``c`` is ready when it returns. On sm_80
    and later, fp16, bf16, tf32 and fp64 tiles of whole MMA atoms (M and N multiples of 16, K of
    16 for 16-bit tiles, of 8 for tf32; 8, 8 and 4 for fp64) are multiplied by the block's warps
    on CuTe's ``mma.sync`` atoms, which compiles in seconds; everything else (complex, float32,
    other sizes, older GPUs) by cuBLASDx's block ``execute`` (MathDx 25.6), whose first compile is
    long (its notice says how long it took on a small machine). ``NUMBA_TILES_MATMUL_ATOMS=0``
    leaves every product to cuBLASDx. Either way the LTO-IR then comes from the disk cache.

    {{block_dim}}

    Example::

        from numba import cuda, float32
        from numba.cuda.types import float16
        import numba_tiles as tiles

        @cuda.jit
        def gemm_64(a, b, c):   # one 64 x 64 x 64 product per block
            sa = cuda.shared.array((64, 64), float16)
            sb = cuda.shared.array((64, 64), float16)
            sc = cuda.shared.array((64, 64), float32)
            tiles.tile_load(a, sa, 0, 0, block_dim=128)
            tiles.tile_load(b, sb, 0, 0, block_dim=128)
            tiles.matmul(sa, sb, sc, shape=(64, 64, 64), block_dim=128)
            tiles.tile_store(sc, c, 0, 0, block_dim=128)

        cubin = tiles.compile(gemm_64, "void(float16[:, :], float16[:, :], float32[:, :])")
    """
