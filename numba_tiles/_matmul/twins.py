"""NumPy twins of the matrix products on the simulator: ``tiles.matmul`` on shared tiles, and `Matmul`'s steps and
whole calls. Products are computed in float64 (complex128) from the operands as the tensor cores read them
(bfloat16 bits widened, tf32 rounded), then rounded to C's dtype once, as cuBLASDx accumulates in C's precision.
"""

import numpy as np

from .._backends import simulated
from .._entry import Function
from ..extending import error
from ..simulator import block_thread, by_first_thread, tile_window


def _operand(tile, precision):
    """A or B as float64 (complex128) values: bfloat16 bits widened to float32's, tf32 rounded to 10 mantissa bits."""
    if precision == "bf16":
        return (tile.astype(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if precision == "tf32":
        bits = tile.astype(np.float32).view(np.uint32)
        return ((bits + 0x1000 + ((bits >> 13) & 1) - 1) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    return tile.astype(np.complex128 if tile.dtype.kind == "c" else np.float64)


def matmul(instance, args):
    m, n, k = args["shape"]
    a, b, c = args["a"], args["b"], args["c"]
    for name, tile, shape in (("a", a, (m, k)), ("b", b, (k, n)), ("c", c, (m, n))):
        if tile.shape != shape:
            raise error(
                instance.intrinsic,
                f"{name} is {tile.shape[0]} x {tile.shape[1]}; shape={args['shape']} needs {shape[0]} x {shape[1]}",
                "pass tiles of the sizes shape=(M, N, K) names",
            )

    def work():
        # float64 products and sums, rounded to C's dtype once (cuBLASDx accumulates in C's precision)
        product = _operand(a, args["precision"]) @ _operand(b, args["precision"])
        c[...] = (args["alpha"] * product + args["beta"] * c.astype(product.dtype)).astype(c.dtype)

    by_first_thread(instance, args, work)


# The register form (tiles.Matmul). Here a shared tile holds its operand row-major and thread t's
# accumulator holds items t*n ... t*n+n-1 of C in row-major order: the layouts are cuBLASDx's
# business on the GPU, and a kernel only passes these arrays between the calls.


def matmul_load(instance, args):
    mm = args["mm"]
    shape = (mm.a_shape, mm.b_shape)[args["operand"]]

    def work():
        src = args["src"]
        tile = np.full(shape, args["fill"], dtype=src.dtype)
        inside, part = tile_window(src, args["row"], args["col"], shape)
        if inside is not None:
            tile[part] = src[inside]
        args["tile"][: tile.size] = tile.ravel()

    by_first_thread(instance, args, work)


def _bf16_bits(value):
    """A float's bfloat16 rounding (to nearest even), as the 16 bits an int16 tile holds."""
    bits = int(np.float32(value).view(np.uint32))
    return np.uint16((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 & 0xFFFF).view(np.int16)


def _rounded(value, dtype):
    """Values as a C of ``dtype`` holds them: 16-bit integers hold bfloat16 bits."""
    if dtype.kind in "iu":
        return np.vectorize(_bf16_bits, otypes=[np.int16])(value).astype(dtype)
    return value.astype(dtype)


def _accumulator_items(thread, mm):
    first = thread.thread_id * mm.accumulator_items
    return np.unravel_index(np.arange(first, first + mm.accumulator_items), (mm.shape[0], mm.shape[1]))


def matmul_multiply(instance, args):
    mm, acc = args["mm"], args["acc"]
    thread = block_thread(instance.intrinsic, mm.block_dim)
    thread.syncthreads()  # the tiles are complete
    m, n, k = mm.shape
    a = _operand(args["a"][: m * k].reshape(m, k), mm.precision)
    b = _operand(args["b"][: k * n].reshape(k, n), mm.precision)
    product = (a @ b)[_accumulator_items(thread, mm)]
    acc[: mm.accumulator_items] = (acc[: mm.accumulator_items].astype(np.float64) + product).astype(acc.dtype)
    thread.syncthreads()  # as on the GPU, the call ends with a barrier


def _epilogue(instance, args, precision):
    """The call's epilogue as ``finish(value, *coordinates)`` on one item, computed in NumPy ``precision``
    (the accumulator's, as on the GPU), or None."""
    callback = next(
        (p.callback for p in instance.params if isinstance(p, Function) and p.name == "epilogue_args"), None
    )
    if callback is None:
        return None
    extras = args["epilogue_args"] or ()
    return lambda value, *at: precision.type(callback.simulate(precision.type(value), at, extras))


def _epilogued(finish, value, lead=(), origin=(0, 0)):
    """The 2-D array ``value`` with ``finish`` applied to each item (None: as it is), whose coordinates are
    ``lead`` then its row and column from ``origin``."""
    if finish is None:
        return value
    out = np.array(value)
    for (r, c), item in np.ndenumerate(out):
        out[r, c] = finish(item, *lead, origin[0] + r, origin[1] + c)
    return out


def matmul_store(instance, args):
    mm, acc, dst = args["mm"], args["acc"], args["dst"]
    thread = block_thread(instance.intrinsic, mm.block_dim)
    rows, cols = _accumulator_items(thread, mm)
    finish = _epilogue(instance, args, mm._types[1].numpy)
    for i, (r, c) in enumerate(zip(rows + int(args["row"]), cols + int(args["col"]))):
        if 0 <= r < dst.shape[0] and 0 <= c < dst.shape[1]:
            value = args["alpha"] * np.float64(acc[i])
            bits = mm.precision == "bf16" and dst.dtype.kind in "iu"
            if args["beta"] != 0:
                value += args["beta"] * (_operand(np.asarray(dst[r, c]), "bf16") if bits else np.float64(dst[r, c]))
            if finish is not None:
                value = np.float64(finish(value, r, c))
            dst[r, c] = _bf16_bits(value) if bits else value


def _ops(instance, args):
    """The description, A, B and C of the call's ``ops`` (`Matmul.operands`), and the call's arguments with the
    block its plan runs on (`Matmul.launch` gives it; the twins check the launch's against it)."""
    ops = args["ops"]
    block = ops.plan.block
    return args["mm"], ops.a, ops.b, ops.c, {**args, "block_dim": block + (1,) * (3 - len(block))}


def _product(mm, a, b, c, rows, cols, alpha, beta, finish, lead=(), origin=(0, 0)):
    """alpha * A[rows, :] @ B[:, cols] + beta * C[rows, cols], with the epilogue, as C holds it."""
    precision = mm.precision
    value = alpha * (_operand(np.asarray(a[rows, :]), precision) @ _operand(np.asarray(b[:, cols]), precision))
    if beta != 0:
        value = value + beta * _operand(np.asarray(c[rows, cols]), precision if c.dtype.kind in "iu" else None)
    return _rounded(_epilogued(finish, value, lead, origin), c.dtype)


def _launch_block(instance, args):
    """(this thread's block's index in the grid, the grid's blocks), as a persistent loop counts them."""
    return simulated.simulated_linear_block(block_thread(instance.intrinsic, args["block_dim"]))


def _tile(mm, a, b, c, i, j, args, finish):
    """C's tile (i, j) = alpha * A @ B + beta * C there, with the epilogue (none past C's edges)."""
    m, n, _ = mm.shape
    r0, c0 = i * m, j * n
    rows, cols = slice(r0, min(r0 + m, c.shape[0])), slice(c0, min(c0 + n, c.shape[1]))
    if rows.start < rows.stop and cols.start < cols.stop:
        c[rows, cols] = _product(mm, a, b, c, rows, cols, args["alpha"], args["beta"], finish, origin=(r0, c0))


def matmul_tile(instance, args):
    mm, a, b, c, args = _ops(instance, args)
    finish = _epilogue(instance, args, mm._types[1].numpy)
    by_first_thread(instance, args, lambda: _tile(mm, a, b, c, int(args["i"]), int(args["j"]), args, finish))


GEMM_GROUP = 8  # (GemmGroup in common.cuh)


def gemm_tile(t, tiles_m, tiles_n):
    """Tile ``t`` of a C of ``tiles_m`` x ``tiles_n`` tiles in ``mm.gemm``'s order (gemm_tile in common.cuh): groups
    of GEMM_GROUP tile rows, down a group's column before its next column."""
    first = t // (GEMM_GROUP * tiles_n) * GEMM_GROUP
    height = min(tiles_m - first, GEMM_GROUP)
    in_group = t - first * tiles_n
    return first + in_group % height, in_group // height


def matmul_gemm(instance, args):
    mm, a, b, c, args = _ops(instance, args)
    block, blocks = _launch_block(instance, args)
    finish = _epilogue(instance, args, mm._types[1].numpy)
    tiles_m, tiles_n = (-(-size // side) for size, side in zip(c.shape, mm.shape))

    def work():
        for t in range(block, tiles_m * tiles_n, blocks):
            _tile(mm, a, b, c, *gemm_tile(t, tiles_m, tiles_n), args, finish)

    by_first_thread(instance, args, work)


def matmul_batched(instance, args):
    mm, a, b, c, args = _ops(instance, args)
    block, blocks = _launch_block(instance, args)
    finish = _epilogue(instance, args, mm._types[1].numpy)

    def work():
        whole = slice(None)
        for i in range(block, a.shape[0], blocks):
            c[i] = _product(mm, a[i], b[i], c[i], whole, whole, args["alpha"], args["beta"], finish, (i,))

    by_first_thread(instance, args, work)
