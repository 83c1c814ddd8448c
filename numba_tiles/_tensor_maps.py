"""TMA tensor maps of a batch's A and B (``Matmul.batched`` by TMA), and of its C (by the wgmma block), made on
the host by the CUDA driver, in the ``pipe`` bytes of `PIPE`.

A map describes its array as 3-D (the arrangement's contiguous side, the other side, the batch) with boxes of
one tile's lines, at most 128 bytes of each, swizzled as ``tma_tile`` (``lto_libs/matmul.cuh``) lays them out.
"""

import numpy as np

from . import extending as ext

# The bytes of ``pipe`` for the TMA forms, as lto_libs declares them (batched_maps in tma.cuh, wgmma_pipe in
# wgmma.cuh): A's and B's CUtensorMap (64-byte aligned), the batch's sizes, C's map (the wgmma block) and the
# counters of its products' order, zero between launches. Built here (`prepare`); the C++ checks it (`CHECKS`,
# by struct: each member's bytes, in declaration order, and no padding between them).
PIPE = np.dtype(
    {
        "names": ["a", "b", "count", "m", "k", "n", "c", "tickets", "finished"],
        "formats": [
            (np.uint8, 128),
            (np.uint8, 128),
            np.int64,
            np.int64,
            np.int64,
            np.int64,
            (np.uint8, 128),
            np.uint32,
            np.uint32,
        ],
        "offsets": [0, 128, 256, 264, 272, 280, 320, 448, 452],
        "itemsize": 512,
    }
)


def _start(field):
    return PIPE.fields[field][1]


def _end(field):
    return _start(field) + PIPE.fields[field][0].itemsize


def _checks(struct, members):
    """The static_assert that the C++ ``struct``'s ``members`` ((name, first byte, byte past it), in
    declaration order) lie where PIPE puts them."""
    assert members[0][1] == 0 and all(a[2] == b[1] for a, b in zip(members, members[1:]))
    sizes = [f"sizeof(::numba_tiles::{struct}::{m}) == {end - start}" for m, start, end in members]
    return (
        f"static_assert({' && '.join(sizes)} && sizeof(::numba_tiles::{struct}) == {members[-1][2]}, "
        f'"numba_tiles/_tensor_maps.py\'s PIPE: {struct}");'
    )


CHECKS = {
    "batched_maps": _checks("batched_maps", [(f, _start(f), _end(f)) for f in ("a", "b", "count", "m", "k", "n")]),
    "wgmma_pipe": _checks(
        "wgmma_pipe",
        [
            ("ab", 0, _end("n")),
            ("pad", _end("n"), _start("c")),
            ("c", _start("c"), _end("c")),
            ("tickets", _start("tickets"), _end("tickets")),
            ("finished", _start("finished"), _end("finished")),
        ],
    ),
}

_SWIZZLE = {32: "CU_TENSOR_MAP_SWIZZLE_32B", 64: "CU_TENSOR_MAP_SWIZZLE_64B", 128: "CU_TENSOR_MAP_SWIZZLE_128B"}
_DATA_TYPE = {
    2: "CU_TENSOR_MAP_DATA_TYPE_UINT16",
    4: "CU_TENSOR_MAP_DATA_TYPE_UINT32",
    8: "CU_TENSOR_MAP_DATA_TYPE_FLOAT64",
}


def tma_tiles(name, shape, itemsize, arrangement):
    """A's and B's tiles of an (M, N, K) ``shape`` as TMA loads them: ``(box items, lines, bytes a buffer)`` each
    (tma_tile in matmul.cuh), or a TilesError saying why TMA cannot."""
    m, n, k = shape
    tiles = []
    for operand, (rows, cols), order in (("A", (m, k), arrangement[0]), ("B", (k, n), arrangement[1])):
        lines, line = (rows, cols) if order == "row_major" else (cols, rows)
        if line * itemsize not in (32, 64) and line * itemsize % 128 or lines > 256:
            raise ext.error(
                name,
                f"{operand}'s {rows} x {cols} {order} tile has lines of {line * itemsize} "
                f"bytes; TMA's swizzled boxes take lines of 32, 64 or a multiple of 128 bytes",
                "use mm.batched (cp.async copies), or a tile whose contiguous side is 32, 64 or "
                "a multiple of 128 bytes",
            )
        box = min(line * itemsize, 128) // itemsize
        tiles.append((box, lines, -(-line * lines * itemsize // 1024) * 1024))
    return tiles


class _BatchOfOne:
    """A 2-D device array seen as a batch of one product (a map's third dimension)."""

    ndim = 3

    def __init__(self, array):
        self.shape, self.strides, self.dtype = (1, *array.shape), (0, *array.strides), array.dtype
        self.__cuda_array_interface__ = array.__cuda_array_interface__


def fits(array, order):
    """Whether TMA can describe the 2-D or 3-D device ``array`` as ``order`` ("row_major" or "col_major"): its
    lines contiguous, its other strides multiples of 16 bytes and its data 16-byte aligned."""
    if array.ndim == 2:
        array = _BatchOfOne(array)
    inner, outer = (2, 1) if order == "row_major" else (1, 2)
    return (
        array.strides[inner] == array.dtype.itemsize
        and array.__cuda_array_interface__["data"][0] % 16 == 0
        and array.strides[outer] > 0
        and array.strides[outer] % 16 == 0
        and (array.shape[0] == 1 or array.strides[0] > 0 and array.strides[0] % 16 == 0)
    )


def prepare(name, mm, a, b, c=None, stream=0):
    """``pipe`` (`PIPE`) over the device arrays ``a`` and ``b`` (and ``c``, for the wgmma block) of ``mm``'s
    batch (3-D) or matrix product (2-D, a batch of one), whose shapes the caller has checked."""
    from numba import cuda

    if a.ndim == 2:
        a, b, c = (x if x is None else _BatchOfOne(x) for x in (a, b, c))
    tiles = tma_tiles(name, mm.shape, np.dtype(mm.dtype).itemsize, mm.arrangement)
    if 0 in a.shape or 0 in b.shape:
        raise ext.error(
            name,
            f"A is {a.shape} and B {b.shape}: TMA cannot describe an empty array",
            "skip the launch (there is nothing to compute)",
        )
    host = np.zeros(1, PIPE)
    host["a"], host["b"] = (
        _tensor_map(name, param, array, order, tile)
        for param, array, order, tile in zip("ab", (a, b), mm.arrangement, tiles)
    )
    (count, m, k), n = a.shape, b.shape[2]
    host["count"], host["m"], host["k"], host["n"] = count, m, k, n
    if c is not None:  # (boxes of 64 rows x 128 bytes: the stores of wgmma.cuh)
        host["c"] = _tensor_map(name, "c", c, "row_major", (128 // c.dtype.itemsize, 64, 0))
    return cuda.to_device(host.view(np.uint8), stream=stream)


def _tensor_map(name, param, array, order, tile):
    """The 128 bytes of ``array``'s CUtensorMap with boxes of ``tile`` = (box items, lines, _)."""
    from cuda.bindings import driver

    itemsize = array.dtype.itemsize
    inner, outer = (2, 1) if order == "row_major" else (1, 2)
    data = array.__cuda_array_interface__["data"][0]
    if not fits(array, order):
        raise ext.error(
            name,
            f"{param} ({array.shape}, strides {array.strides} bytes) is not {order} with its other "
            "strides multiples of 16 bytes and 16-byte aligned data, as TMA needs",
            f"pass a {order} array whose lines start every multiple of {16 // itemsize} items (pad it, "
            "then take a view of the part you use)",
        )
    box, lines, _ = tile
    dims = [array.shape[inner], array.shape[outer], array.shape[0]]
    byte_strides = [array.strides[outer], array.strides[0] if array.shape[0] > 1 else array.strides[outer] * dims[1]]
    u64, u32 = (
        [kind(x) for x in values]
        for kind, values in ((driver.cuuint64_t, dims + byte_strides), (driver.cuuint32_t, [box, lines, 1, 1, 1, 1]))
    )
    # 256-byte L2 promotion: a K-tile's narrow lines (64 bytes of a 256-byte row of A) bring the whole
    # row into L2 for the next K-tiles; none, 64 or 128 bytes made the bf16 kernel slower on an H200.
    err, tensor_map = driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, _DATA_TYPE[itemsize]),
        3,
        data,
        u64[:3],
        u64[3:],
        u32[:3],
        u32[3:],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, _SWIZZLE[box * itemsize]),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    if err != driver.CUresult.CUDA_SUCCESS:
        raise ext.error(
            name,
            f"the CUDA driver could not describe {param} ({array.shape}, strides {array.strides} "
            f"bytes) to TMA: {err.name}",
            "pass a contiguous array",
        )
    return np.array(tensor_map.opaque, np.uint64).view(np.uint8)
