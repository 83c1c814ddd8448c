"""Tile matrix products (cuBLASDx) and the cooperative 2-D tile movement that feeds them.

A block-level GEMM step is: `tile_load` tiles of A and B from global into shared memory,
`matmul` them into a shared C tile (accumulating over K), `tile_store` C's tile back. Sizes,
arrangement and block shape are compile-time; the tiles are ordinary ``cuda.shared.array``\\ s.
"""

import math
import types as pytypes

from numba.cuda import types

from . import _callback, _compile, _numba, _tensor_maps, extending as ext, simulator
from .extending import CUB, MATHDX, Instance, intrinsic

TILE = CUB.header("tile.cuh")
MATMUL = MATHDX.header("matmul.cuh")

_ORDERS = {"row_major": True, "col_major": False}
_STAGES = ext.choice("stages", dict.fromkeys(range(2, 17)))  # Matmul.batched's shared buffers of A and B
# cuBLASDx's real precisions numba_tiles offers: (A and B's dtype) → the dtypes C may have.
_PRECISIONS = {"float16": ("float16", "float32"), "float32": ("float32",), "float64": ("float64",),
               "complex64": ("complex64",), "complex128": ("complex128",)}
# precision= names: the C++ type A and B are computed in, the dtypes that may store them, and C's.
# bfloat16 travels as its bits in 16-bit integers, since numba-cuda 0.30 has no bfloat16 arrays.
_NAMED = {"tf32": ("cublasdx::tfloat32_t", ("float32",), ("float32",)),
          "bf16": ("__nv_bfloat16", ("int16", "uint16"), ("float32",))}


# What a matrix argument must be, and the fix, by its dimensions: a matrix, or a batch of them.
_ARRAYS = {2: ("a 2-D array", "pass a 2-D array as {} (a shared tile: cuda.shared.array((rows, cols), dtype))"),
           3: ("a 3-D array (count x rows x cols)", "pass the batch of matrices as one 3-D array ({}[i] is product i's)")}


def _matrix(name, args, param, like=None, ndim=2):
    """The `Dtype` of the 2-D (``ndim=3``: 3-D) array argument ``param``; ``like``: (the other argument, the
    dtype it must share)."""
    ty = args[param]
    if not (isinstance(ty, types.Array) and ty.ndim == ndim):
        what, fix = _ARRAYS[ndim]
        raise ext.error(name, f"{param} must be {what}, got {ty}", fix.format(param))
    dtype = ext.scalar(name, param, ty.dtype, verb="holds")
    if like is not None and dtype != like[1]:
        raise ext.error(name, f"{param} holds {dtype.name} but {like[0]} holds {like[1].name}",
                    f"use {param} and {like[0]} of one dtype")
    return dtype


def _shape(args):
    return dict(zip(("BX", "BY", "BZ"), args["block_dim"]))


def _origin(name, args):
    """Check the run-time tile origin ``row``, ``col``: integers."""
    for param in ("row", "col"):
        ext.integer(name, param, args[param])


def _scales(name, args):
    """Check the run-time ``alpha``, ``beta`` (when given): numbers."""
    for param in ("alpha", "beta"):
        if args[param] is not None and not isinstance(types.unliteral(args[param]), types.Number):
            raise ext.error(name, f"{param} must be a number, got {args[param]}", f"pass {param} as a float")


def _move(name, args, matrix):
    """The tile's `Dtype`, after checking the tile, the global ``matrix`` (same dtype) and the origin."""
    dtype = _matrix(name, args, "tile")
    _matrix(name, args, matrix, like=("tile", dtype))
    _origin(name, args)
    return dtype


def _load_rule(name, args):
    dtype = _move(name, args, "src")
    return Instance(name, TILE, TILE.template("numba_tiles::tile_load", T=dtype.cxx, **_shape(args),
                                              Async=args["asynchronous"]), types.none,
                    (("src", args["src"], None), ("row", types.int64, None), ("col", types.int64, None),
                     ("tile", args["tile"], None), ("fill", dtype.numba, 0)))


@intrinsic(consts={"block_dim": ext.block_dim, "asynchronous": ext.flag("asynchronous")},
           rule=_load_rule, simulate=simulator.tile_load)
def tile_load(src, tile, row, col, fill=0, *, block_dim, asynchronous=False):
    """Copy the tile of the 2-D array ``src`` whose top-left item is ``src[row, col]`` into ``tile``, by the whole block.

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


def _wait_rule(name, args):
    pending = args["pending"]
    if pending is not None:
        ext.integer(name, "pending", pending)
        if isinstance(pending, types.IntegerLiteral) and pending.literal_value < 0:
            raise ext.error(name, f"pending must be a non-negative int, got {pending.literal_value}",
                            "pass how many of the last asynchronous loads may still run, e.g. pending=2, or 0")
    return Instance(name, TILE, TILE.template("numba_tiles::tile_wait", **_shape(args)), types.none,
                    (("pending", types.int32, 0),))


@intrinsic(consts={"block_dim": ext.block_dim}, rule=_wait_rule, simulate=simulator.tile_wait)
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
    return Instance(name, TILE, TILE.template("numba_tiles::tile_store", T=dtype.cxx, **_shape(args)), types.none,
                    (("tile", args["tile"], None), ("dst", args["dst"], None), ("row", types.int64, None),
                     ("col", types.int64, None)))


@intrinsic(consts={"block_dim": ext.block_dim}, rule=_store_rule, simulate=simulator.tile_store)
def tile_store(tile, dst, row, col, *, block_dim):
    """Copy ``tile`` into the 2-D array ``dst`` at ``dst[row, col]``, by the whole block; items past ``dst``'s edge are dropped.

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


def _shape_mnk(intrinsic, value):
    if not (isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, int) and v >= 1 for v in value)):
        raise ext.error(intrinsic, f"shape must be a tuple (M, N, K) of positive ints, got {value!r}",
                    "pass shape=(M, N, K): A is M x K, B is K x N, C is M x N, e.g. shape=(64, 64, 32)")
    return value


def _lds(intrinsic, value):
    if value is not None and not (isinstance(value, tuple) and len(value) == 3
                                  and all(isinstance(v, int) and v >= 1 for v in value)):
        raise ext.error(intrinsic, f"ld must be a tuple of 3 positive ints, got {value!r}",
                    "pass ld=(lda, ldb, ldc), the leading dimensions of padded tiles, or leave it out")
    return value


def _arrangement(intrinsic, value):
    if value is not None and not (isinstance(value, tuple) and len(value) == 3 and set(value) <= set(_ORDERS)):
        raise ext.error(intrinsic, f"arrangement must be a 3-tuple of 'row_major'/'col_major', got {value!r}",
                    "pass arrangement=('row_major', 'col_major', 'row_major') for A, B and C, or leave it "
                    "out for C- or F-contiguous tiles")
    return value


def _order(name, args, param, given):
    """Whether the tile ``param`` is row-major: its Numba layout, or the given arrangement."""
    if given is not None:
        return _ORDERS[given]
    layout = args[param].layout
    if layout not in "CF":
        raise ext.error(name, f"{param} is a strided view ({args[param]}), whose order is known only at run time",
                    "pass arrangement=('row_major' or 'col_major', ...) for A, B and C")
    return layout == "C"


def _compute_type(name, ta, tc, named):
    """The C++ type A and B are computed in, for A and B stored as ``ta`` and C as ``tc`` (`Dtype`\\ s)."""
    if named is not None:
        computed, storage, accumulators = _NAMED[named]
        if ta.name not in storage or tc.name not in accumulators:
            raise ext.error(name, f"precision={named!r} takes A and B of {' or '.join(storage)} and C of "
                        f"{' or '.join(accumulators)}, got {ta.name} and {tc.name}",
                        f"store A and B as {storage[0]} and C as {accumulators[0]}, or leave precision out")
        return computed
    if ta.name not in _PRECISIONS or tc.name not in _PRECISIONS[ta.name]:
        combos = "; ".join(f"{a} A and B with {' or '.join(c)} C" for a, c in _PRECISIONS.items())
        raise ext.error(name, f"{ta.name} A and B with {tc.name} C is not a supported precision",
                    f"use {combos}; or precision='tf32' (float32) or 'bf16' (bfloat16 bits in int16)")
    return ta.cxx


def _whole_warps(name, block_dim):
    x, y, z = block_dim
    if x * y * z < 32:
        raise ext.error(name, f"cuBLASDx computes with whole warps; block_dim={block_dim} has {x * y * z} threads",
                    "launch blocks of 32 to 1024 threads (128 or 256 suit most tiles)")


def _matmul_rule(name, args):
    ta = _matrix(name, args, "a")
    tb = _matrix(name, args, "b", like=("a", ta))
    tc = _matrix(name, args, "c")
    compute = _compute_type(name, ta, tc, args["precision"])
    _scales(name, args)
    _whole_warps(name, args["block_dim"])
    m, n, k = args["shape"]
    given = args["arrangement"] or (None, None, None)
    rows = {p: _order(name, args, p, g) for p, g in zip("abc", given)}
    dense = [cols if rows[p] else rows_ for p, (rows_, cols) in zip("abc", ((m, k), (k, n), (m, n)))]
    lds = args["ld"] or tuple(dense)
    if any(ld < least for ld, least in zip(lds, dense)):
        raise ext.error(name, f"ld={lds} is less than the tiles' {tuple(dense)} (a row-major tile's leading dimension "
                    f"is its row stride, at least its columns; a column-major one's its column stride)",
                    f"pass ld= the strides of the padded tiles, or leave it out for unpadded ones")
    align = args["alignment"] or 0
    for param, ld, dtype in zip("abc", lds, (ta, tb, tc)):
        if align and ld * dtype.numpy.itemsize % align:
            raise ext.error(name, f"alignment={align} needs each tile row (or column) to start {align}-byte aligned; "
                        f"{param}'s leading dimension {ld} is {ld * dtype.numpy.itemsize} bytes",
                        f"pad the tiles to a leading dimension of a multiple of {align // dtype.numpy.itemsize} "
                        "items (ld=), or leave alignment out")
    template = MATMUL.template("numba_tiles::matmul", M=m, N=n, K=k, TA=ta.cxx, TB=tb.cxx, TC=tc.cxx, PA=compute,
                               PB=compute, RowA=rows["a"], RowB=rows["b"], RowC=rows["c"], LDA=lds[0], LDB=lds[1],
                               LDC=lds[2], Align=align, **_shape(args))
    return Instance(name, MATMUL, template, types.none,
                    (("a", args["a"], None), ("b", args["b"], None), ("c", args["c"], None),
                     ("alpha", tc.numba, 1), ("beta", tc.numba, 0)))


@intrinsic(consts={"shape": _shape_mnk, "block_dim": ext.block_dim, "arrangement": _arrangement, "ld": _lds,
                   "alignment": ext.choice("alignment", {None: 0, 16: 16}),
                   "precision": ext.choice("precision", dict.fromkeys([None, *_NAMED]))},
           rule=_matmul_rule, simulate=simulator.matmul)
def matmul(a, b, c, alpha=1.0, beta=0.0, *, shape, block_dim, arrangement=None, ld=None, precision=None,
           alignment=None):
    """``c = alpha * a @ b + beta * c`` for shared-memory tiles, by the whole block with cuBLASDx.

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
    alignment=16)``, rows of whole 16 bytes; checked when the call runs): cuBLASDx then moves A
    and B with ``ldmatrix`` and C with ``stmatrix``, much faster than item by item. (Numba's
    simulator has no ``alignment=``: leave it out there.) Every
    thread of the block must call it; the tiles must be complete (`tile_load` ends with a
    barrier) and the call ends with one, so ``c`` is ready when it returns. Implemented by
    cuBLASDx's block ``execute`` (MathDx 25.6); its first compile takes about 10 s, then
    the LTO-IR comes from the disk cache.

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


# ---- The register form: a module-level description, its intrinsics bound to it -------------

def _arrangement2(intrinsic, value):
    if not (isinstance(value, tuple) and len(value) == 2 and set(value) <= set(_ORDERS)):
        raise ext.error(intrinsic, f"arrangement must be a 2-tuple of 'row_major'/'col_major' (A's, B's), got {value!r}",
                    "pass arrangement=('row_major', 'col_major') for A and B as they lie in global memory, "
                    "or leave it out (both row-major)")
    return value


class Matmul:
    """A block's tile product ``acc += A @ B``, described once at module level and used in kernels.

    ``shape=(M, N, K)``: A is M x K, B is K x N, the accumulator M x N; ``dtype``: A's and B's
    (float16, float32, float64; int16 holding bfloat16 bits with ``precision="bf16"``; float32
    with ``precision="tf32"``), ``accumulator``: the accumulator's and C's (float32 for
    half-precision operands by default, float16 allowed; else ``dtype``); ``arrangement``: A's
    and B's order in global memory, which cuBLASDx's shared layouts follow (a global matrix of
    the other order still loads, slower). This is cuBLASDx's register form: A and B tiles live in
    shared memory in cuBLASDx's suggested (swizzled) layouts, the accumulator in each thread's
    registers (a ``cuda.local.array``), and C goes from the registers to global memory.
    Creating one compiles nothing and needs no GPU; it checks the description and tells the
    sizes the kernel allocates:

    - ``a_items``, ``b_items``: items of the shared A and B tiles (``cuda.shared.array(mm.a_items,
      dtype, alignment=16)``), ``shared_memory_bytes`` both together;
    - ``accumulator_items``: items of each thread's accumulator (``cuda.local.array``);
    - ``c_items``: items (of the accumulator's dtype) of the optional shared stage of ``store``;
    - ``threads``: the block's threads.

    `Matmul.suggested_block_dim` gives cuBLASDx's own choice of block for a product.

    In a kernel (every thread of the block calls each; ``block_dim`` is the description's):

    - ``mm.load_a(src, tile, row, col, fill=0, asynchronous=False)`` / ``mm.load_b(...)``: the
      tile of the 2-D global ``src`` at ``src[row, col]`` into the shared tile (``fill`` past the
      edges); 16-byte ``cp.async`` copies inside the matrix. With ``asynchronous=True`` it returns
      at once and ``mm.wait(pending=0)`` completes it (overlap the next K-tile's loads with this
      product); else it ends with a barrier.
    - ``mm.multiply(a_tile, b_tile, acc)``: ``acc += A @ B`` (tensor cores for fp16, bf16, tf32
      and fp64); ends with a barrier, so the tiles may be refilled.
    - ``mm.store(acc, dst, row, col, alpha=1.0, beta=0.0, stage=None)``: ``dst[row:row+M,
      col:col+N] = alpha * acc + beta * dst[...]``, items past ``dst``'s edge dropped (``beta=0``:
      dst is not read); ``dst`` holds the accumulator's dtype or A's (rounded to it, as cuBLAS
      does for half precision). Each thread stores its own items; with ``stage``
      (``cuda.shared.array(mm.c_items, accumulator dtype, alignment=16)``) C goes through shared
      memory and out in 16-byte vectors: faster, and it ends with a barrier.
      ``epilogue=f, epilogue_args=(x, ...)`` fuses an epilogue: each item of C is stored as ``f(value,
      row, col, x, ...)``, ``value`` being ``alpha * acc + beta * dst`` in the accumulator's dtype and
      ``(row, col)`` the item's place in ``dst``; ``f`` is a ``@cuda.jit(device=True)`` function (inlined
      into the store) and ``epilogue_args`` a tuple of run-time values (arrays, scalars), so that
      ``relu(A @ B + bias)``, row or column scaling and activations cost no pass over C.

    The accumulator starts as whatever the local array holds: zero it first.

    A batch of small products is one call, the loop in C++ (persistent: launch about as many
    blocks as fit at once):

    - ``mm.batched(a, b, c, shared, alpha=1.0, beta=0.0, stages=2)``: ``c[i] = alpha * a[i] @ b[i]
      + beta * c[i]`` for ``i`` = the block's linear index, plus the grid's blocks, and so on.
      ``a``/``b``/``c`` are 3-D (count x m x k, count x k x n, count x m x n; m, n at most M, N,
      any k: it steps over K-tiles of K); ``c`` holds the accumulator's dtype or A's; ``shared``
      a dynamic shared array of ``mm.batched_shared_memory_bytes(stages, c.dtype)`` bytes, 16-byte
      aligned, where ``stages`` (2 to 16) buffers of A and B tiles load ahead of the product.
      ``epilogue=f, epilogue_args=(...)`` as for ``store``, with the product's index first:
      ``f(value, i, row, col, ...)``.
    - ``mm.batched_tma(pipe, c, shared, alpha=1.0, beta=0.0, stages=2)``: the same, A and B loaded by
      TMA (sm_90 or later) from ``pipe = mm.prepare_batched(a, b)``, made on the host; ``shared`` of
      ``mm.batched_tma_shared_memory_bytes(stages, c.dtype)`` bytes. Faster where the loads bound the loop.

    Example::

        from numba import cuda, float32
        from numba.cuda.types import float16
        import numba_tiles as tiles

        MM = tiles.Matmul((64, 64, 32), float16, block_dim=128)

        @cuda.jit
        def gemm(a, b, c):                      # c = a @ b, any sizes; a 64 x 64 tile of c per block
            sa = cuda.shared.array(MM.a_items, float16, alignment=16)
            sb = cuda.shared.array(MM.b_items, float16, alignment=16)
            acc = cuda.local.array(MM.accumulator_items, float32)
            for i in range(MM.accumulator_items):
                acc[i] = 0
            row, col = 64 * cuda.blockIdx.y, 64 * cuda.blockIdx.x
            for k in range(0, a.shape[1], 32):
                MM.load_a(a, sa, row, k)
                MM.load_b(b, sb, k, col)
                MM.multiply(sa, sb, acc)
            MM.store(acc, c, row, col)

        assert MM.shared_memory_bytes == 8192 and MM.accumulator_items == 32
        cubin = tiles.compile(gemm, "void(float16[:, ::1], float16[:, ::1], float32[:, ::1])")
    """

    def __init__(self, shape, dtype, *, block_dim, accumulator=None, arrangement=("row_major", "row_major"),
                 precision=None):
        name = "Matmul"
        self._describe(name, shape, dtype, accumulator, arrangement, precision)
        self.block_dim = ext.block_dim(name, block_dim)
        _whole_warps(name, self.block_dim)
        ta, tc = self._types
        m, n, k = self.shape
        self.threads = threads = math.prod(self.block_dim)
        if m * n % threads:
            raise ext.error(name, f"the {m} x {n} accumulator does not divide among the block's {threads} threads",
                        f"use a block of a divisor of M*N = {m * n} threads (a multiple of 32), or a larger tile")
        self.a_shape, self.b_shape = (m, k), (k, n)
        self.a_items, self.b_items = m * k, k * n
        self.accumulator_items = m * n // threads
        self.c_items = m * (n + 32 // tc.numpy.itemsize)  # rows padded by 32 bytes: stage_pitch in matmul.cuh
        self.shared_memory_bytes = (self.a_items + self.b_items) * ta.numpy.itemsize
        self.load_a = _bind(_load_operand, self, "load_a", operand=0)
        self.load_b = _bind(_load_operand, self, "load_b", operand=1)
        self.multiply = _bind(_multiply, self)
        self.store = _bind(_store, self)
        self.wait = _bind(_wait, self)
        self.batched = _bind(_batched, self)
        self.batched_tma = _bind(_batched_tma, self)

    def _describe(self, name, shape, dtype, accumulator, arrangement, precision):
        """Check and keep what the product is, the block aside."""
        self.shape = _shape_mnk(name, tuple(shape) if isinstance(shape, list) else shape)
        self.precision = ext.choice("precision", dict.fromkeys([None, *_NAMED]))(name, precision)
        self.arrangement = _arrangement2(name, tuple(arrangement) if isinstance(arrangement, list) else arrangement)
        ta = ext.named(name, "dtype", dtype)
        half = ta.name == "float16" or self.precision == "bf16"
        tc = ext.named(name, "accumulator", accumulator or ("float32" if half else ta.name))
        self._compute = _compute_type(name, ta, tc, self.precision)
        if ta.kind == "c":
            raise ext.error(name, f"the register form takes real types, got {ta.name}",
                            "use tiles.matmul (shared-memory tiles) for complex64 and complex128 products")
        self._types = (ta, tc)
        self.dtype, self.accumulator = ta.name, tc.name

    @classmethod
    def suggested_block_dim(cls, shape, dtype, *, accumulator=None, arrangement=("row_major", "row_major"),
                            precision=None, arch="sm_90"):
        """cuBLASDx's suggested block shape for this product on ``arch``, as ``(x, y, z)``: no GPU needed.

        NVRTC evaluates cuBLASDx's own choice (a few seconds the first time, then the disk cache
        answers). Example::

            import numba_tiles as tiles

            block = tiles.Matmul.suggested_block_dim((64, 64, 32), "float16")
            mm = tiles.Matmul((64, 64, 32), "float16", block_dim=block)
        """
        probe = cls.__new__(cls)
        probe._describe("Matmul.suggested_block_dim", shape, dtype, accumulator, arrangement, precision)
        m, n, k = probe.shape
        row_a, row_b = (str(_ORDERS[a]).lower() for a in probe.arrangement)
        packed = _compile.constant(f"numba_tiles::suggested_block_dim<{m}, {n}, {k}, {probe._compute}, {probe._compute}, "
                                   f"{probe._types[1].cxx}, {row_a}, {row_b}>()", MATMUL, arch)
        return packed & 0xFFFF, packed >> 16 & 0xFFFF, packed >> 32 & 0xFFFF

    def batched_shared_memory_bytes(self, stages=2, c=None):
        """The dynamic shared memory ``mm.batched(..., stages=stages)`` takes: ``stages`` tiles of A and of B,
        and C's stage. ``c``: C's dtype; a C narrower than the accumulator (fp16 or bf16 of a float32
        accumulator) is staged in its own items, half the bytes (by default the accumulator's are counted,
        enough for any C). Example::

            import numba_tiles as tiles

            mm = tiles.Matmul((64, 64, 64), "float16", block_dim=128)
            assert mm.batched_shared_memory_bytes(3) == 3 * 16384 + 64 * 72 * 4
            assert mm.batched_shared_memory_bytes(3, c="float16") == 3 * 16384 + 64 * 72 * 2
        """
        name = "Matmul.batched_shared_memory_bytes"
        return _STAGES(name, stages) * self.shared_memory_bytes + self._batched_stage_bytes(name, c)

    def batched_tma_shared_memory_bytes(self, stages=2, c=None):
        """The dynamic shared memory ``mm.batched_tma(..., stages=stages)`` takes: ``stages`` tiles of A and
        of B (each a whole number of KiB, as TMA's swizzle wants them aligned), up to 1 KiB to align them,
        C's stage (``c``: C's dtype, as in `batched_shared_memory_bytes`) and the buffers' barriers. A stage
        that fits in one buffer's A and B tiles and goes out by the threads' copy (a C other than float32)
        takes no bytes of its own: it is written over the buffer the block has just multiplied (a sixth
        block an SM for fp16 64^3 tiles of 2 stages). Without ``c`` the stage is counted, enough for any
        C. Example::

            import numba_tiles as tiles

            mm = tiles.Matmul((64, 64, 64), "float16", block_dim=128)
            assert mm.batched_tma_shared_memory_bytes(3) == 1008 + 3 * 2 * 8192 + 64 * 72 * 4 + 3 * 8
            assert mm.batched_tma_shared_memory_bytes(3, c="float16") == 1008 + 3 * 2 * 8192 + 3 * 8
        """
        name = "Matmul.batched_tma_shared_memory_bytes"
        stages = _STAGES(name, stages)
        tiles = sum(box[2] for box in self._tma_tiles(name))
        stage = self._batched_stage_bytes(name, c)
        if c is not None:
            tc, td = self._types[1].numpy.itemsize, ext.named(name, "c", c).numpy.itemsize
            bulk = td == 4 and td <= tc  # (batched_tma_aliased in matmul.cuh: a bulk copy reads the stage late)
            if not bulk and stage <= tiles:
                stage = 0
        return 1008 + stages * tiles + stage + stages * 8

    def _batched_stage_bytes(self, name, c):
        """The bytes of a batched call's stage of C (batched_stage and staged_pitch in matmul.cuh): C's own
        items, rows padded by 16 bytes, when ``c`` is narrower than the accumulator; else ``c_items``."""
        tc = self._types[1].numpy.itemsize
        td = tc if c is None else ext.named(name, "c", c).numpy.itemsize
        if td < tc:
            m, n, _ = self.shape
            return m * (n + 16 // td) * td
        return self.c_items * tc

    def _tma_tiles(self, name):
        """A's and B's tiles as TMA loads them (`_tensor_maps.tma_tiles`)."""
        return _tensor_maps.tma_tiles(name, self.shape, self._types[0].numpy.itemsize, self.arrangement)

    def prepare_batched(self, a, b, stream=0):
        """The device array ``pipe`` describing the 3-D device arrays ``a`` (count x m x k) and ``b``
        (count x k x n) to the GPU's copy engine (TMA tensor maps), for ``mm.batched_tma``: made on the
        host, needs a GPU of sm_90 or later. A's and B's strides: the arrangement's contiguous side
        contiguous, the others multiples of 16 bytes, the data 16-byte aligned. Example::

            pipe = MM.prepare_batched(a, b)       # a, b: device arrays
            batched_kernel[blocks, MM.threads, 0, nbytes](pipe, c, 1.0, 0.0)
        """
        return _tensor_maps.prepare("Matmul.prepare_batched", self, a, b, stream=stream)

    def _key(self):
        return (self.shape, self.dtype, self.accumulator, self.block_dim, self.arrangement, self.precision)

    def __eq__(self, other):
        return isinstance(other, Matmul) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"Matmul(shape={self.shape}, dtype={self.dtype}, accumulator={self.accumulator}, "
                f"block_dim={self.block_dim}, arrangement={self.arrangement}, precision={self.precision})")

    def _template(self, function, **more):
        m, n, k = self.shape
        ta, tc = self._types
        bx, by, bz = self.block_dim
        row_a, row_b = (_ORDERS[a] for a in self.arrangement)
        return MATMUL.template(function, M=m, N=n, K=k, PA=self._compute, PB=self._compute, PC=tc.cxx, RowA=row_a,
                               RowB=row_b, BX=bx, BY=by, BZ=bz, AItems=self.a_items, BItems=self.b_items,
                               CItems=self.accumulator_items, **more)

    def _shared_tile(self, name, args, param, items):
        """Check that ``param`` is a 1-D array of A's and B's dtype (the shared tile)."""
        ta = ext.element(name, param, args[param])
        if ta != self._types[0]:
            raise ext.error(name, f"{param} holds {ta.name}; this Matmul's tiles hold {self.dtype}",
                        f"allocate cuda.shared.array(mm.{items}, {self.dtype}, alignment=16)")
        return ta

    def _result(self, name, param, td):
        """``(td, the C++ precision C is rounded to)`` for a C of dtype ``td``: the accumulator's, or A's
        (the result rounded to A's precision, bfloat16 for int16 bits)."""
        ta, tc = self._types
        if td not in (tc, ta):
            raise ext.error(name, f"{param} holds {td.name}; this Matmul stores its {tc.name} accumulator as {tc.name}"
                            + (f" or rounded to {ta.name}" if ta.kind == "f" or self.precision == "bf16" else ""),
                            f"store into an array of {tc.name}" + (f" or {ta.name}" if ta != tc else ""))
        return td, tc.cxx if td == tc else ("__nv_bfloat16" if self.precision == "bf16" else ta.cxx)

    def _accumulator(self, name, args):
        tc = ext.element(name, "acc", args["acc"])
        if tc != self._types[1] or not isinstance(args["acc"], types.Array):
            raise ext.error(name, f"acc must be an array of {self.accumulator}, got {args['acc']}",
                        f"allocate cuda.local.array(mm.accumulator_items, {self.accumulator})")
        return tc


def _bind(declaration, mm, name=None, **fixed):
    """The intrinsic ``declaration`` with the description ``mm`` (and ``fixed``) bound, named ``Matmul.<name>``
    (the description's class, and by default the declaration's name): ``mm.load_a`` etc."""
    consts = {"mm": lambda intrinsic, value: value, "block_dim": ext.block_dim, **declaration.consts}
    for param in fixed:
        consts.setdefault(param, lambda intrinsic, value: value)
    function = pytypes.FunctionType(declaration.__code__, declaration.__globals__, None, declaration.__defaults__)
    function.__kwdefaults__, function.__doc__ = declaration.__kwdefaults__, declaration.__doc__
    function.__name__ = function.__qualname__ = f"{type(mm).__name__}.{name or declaration.__name__.lstrip('_')}"
    return intrinsic(consts=consts, rule=declaration.rule, simulate=declaration.simulate,
                     fixed={"mm": mm, "block_dim": mm.block_dim, **fixed})(function)


def _declares(consts, rule, simulate):
    def mark(declaration):
        declaration.consts, declaration.rule, declaration.simulate = consts, rule, simulate
        return declaration
    return mark


def _load_operand_rule(name, args):
    mm, operand = args["mm"], args["operand"]
    ta = mm._shared_tile(name, args, "tile", "ab"[operand] + "_items")
    _matrix(name, args, "src", like=("tile", ta))
    _origin(name, args)
    template = mm._template("numba_tiles::matmul_load", Operand=operand, Async=args["asynchronous"], T=ta.cxx)
    return Instance(name, MATMUL, template, types.none,
                    (("src", args["src"], None), ("row", types.int64, None), ("col", types.int64, None),
                     ("tile", args["tile"], None), ("fill", ta.numba, 0)))


@_declares({"asynchronous": ext.flag("asynchronous")}, _load_operand_rule, simulator.matmul_load)
def _load_operand(src, tile, row, col, fill=0, *, asynchronous=False):
    """Copy the tile of the 2-D array ``src`` at ``src[row, col]`` into the shared tile for this Matmul; see `Matmul`."""


def _multiply_rule(name, args):
    mm = args["mm"]
    ta = mm._shared_tile(name, args, "a", "a_items")
    mm._shared_tile(name, args, "b", "b_items")
    tc = mm._accumulator(name, args)
    template = mm._template("numba_tiles::matmul_multiply", TA=ta.cxx, TB=ta.cxx, TC=tc.cxx)
    return Instance(name, MATMUL, template, types.none,
                    (("a", args["a"], None), ("b", args["b"], None), ("acc", args["acc"], None)))


@_declares({}, _multiply_rule, simulator.matmul_multiply)
def _multiply(a, b, acc):
    """``acc += a @ b`` for this Matmul's shared tiles, by the whole block; see `Matmul`."""


def _store_rule(name, args):
    mm = args["mm"]
    tc = mm._accumulator(name, args)
    td, result = mm._result(name, "dst", _matrix(name, args, "dst"))
    _origin(name, args)
    _scales(name, args)
    params = (("acc", args["acc"], None), ("dst", args["dst"], None), ("row", types.int64, None),
              ("col", types.int64, None), ("alpha", tc.numba, 1), ("beta", tc.numba, 0))
    function = "numba_tiles::matmul_store"
    if args["stage"] is not None:
        if ext.element(name, "stage", args["stage"]) != tc or not isinstance(args["stage"], types.Array):
            raise ext.error(name, f"stage must be a shared array of {tc.name}, got {args['stage']}",
                        f"allocate cuda.shared.array(mm.c_items, {tc.name}, alignment=16)")
        function, params = "numba_tiles::matmul_store_staged", params + (("stage", args["stage"], None),)
    fused, prelude = _callback.fused(name, args, tc.numba, 2)
    return Instance(name, MATMUL, mm._template(function, TC=tc.cxx, PD=result, TD=td.cxx), types.none,
                    params + fused, prelude=prelude)


def _batched_c_and_shared(name, args, nbytes):
    """Check ``c``, ``shared`` (whose size ``mm.<nbytes>(stages)`` gives), ``alpha`` and ``beta`` of a batched
    call; their template arguments."""
    td, result = args["mm"]._result(name, "c", _matrix(name, args, "c", ndim=3))
    if not (isinstance(args["shared"], types.Array) and args["shared"].ndim == 1):
        raise ext.error(name, f"shared must be a 1-D array, got {args['shared']}",
                        "pass cuda.shared.array(0, uint8, alignment=16) and launch with "
                        f"mm.{nbytes}(stages) bytes of dynamic shared memory")
    _scales(name, args)
    return {"PD": result, "TD": td.cxx, "TS": ext.element(name, "shared", args["shared"]).cxx}


def _batched_rule(name, args):
    mm = args["mm"]
    ta, tc = mm._types
    if _matrix(name, args, "a", ndim=3) != ta:
        raise ext.error(name, f"a holds {args['a'].dtype}; this Matmul multiplies {mm.dtype}",
                        f"pass A and B of {mm.dtype}")
    _matrix(name, args, "b", like=("a", ta), ndim=3)
    template = mm._template("numba_tiles::matmul_batched", Stages=args["stages"], T=ta.cxx, TC=tc.cxx,
                            **_batched_c_and_shared(name, args, "batched_shared_memory_bytes"))
    fused, prelude = _callback.fused(name, args, tc.numba, 3)
    return Instance(name, MATMUL, template, types.none,
                    (("a", args["a"], None), ("b", args["b"], None), ("c", args["c"], None),
                     ("shared", args["shared"], None), ("alpha", tc.numba, 1), ("beta", tc.numba, 0)) + fused,
                    prelude=prelude)


def _batched_tma_rule(name, args):
    mm = args["mm"]
    ta, tc = mm._types
    _hopper_or_later(name)
    mm._tma_tiles(name)
    pipe = _pipe(name, args, "prepare_batched")
    template = mm._template("numba_tiles::matmul_batched_tma", Stages=args["stages"], TC=tc.cxx,
                            **_batched_c_and_shared(name, args, "batched_tma_shared_memory_bytes"))
    fused, prelude = _callback.fused(name, args, tc.numba, 3)
    return Instance(name, MATMUL, template, types.none,
                    (("pipe", pipe, None), ("c", args["c"], None), ("shared", args["shared"], None),
                     ("alpha", tc.numba, 1), ("beta", tc.numba, 0)) + fused, prelude=prelude)


def _pipe(name, args, prepare, arrays="a, b"):
    """``args["pipe"]``, which must be the 1-D uint8 array ``mm.<prepare>(<arrays>)`` made on the host."""
    pipe = args["pipe"]
    if not (isinstance(pipe, types.Array) and pipe.ndim == 1 and pipe.dtype == types.uint8):
        raise ext.error(name, f"pipe must be the uint8 array mm.{prepare}({arrays}) returned, got {pipe}",
                        f"pass pipe = mm.{prepare}({arrays}), made on the host, to the kernel")
    return pipe


def _hopper_or_later(name):
    if _numba.simulator_enabled():
        return
    cc = _numba.target_flags()[0]
    if cc < (9, 0):
        raise ext.error(name, f"TMA copies need sm_90 or later; this kernel compiles for sm_{cc[0]}{cc[1]}",
                        "use mm.batched (cp.async copies) on this GPU")


@_declares({"stages": _STAGES, **_callback.CONSTS}, _batched_tma_rule, simulator.matmul_batched_tma)
def _batched_tma(pipe, c, shared, alpha=1.0, beta=0.0, *, stages=2, epilogue=None, epilogue_args=None):
    """``c[i] = alpha * a[i] @ b[i] + beta * c[i]`` for this block's share of the batch, A and B by TMA; see `Matmul`."""


@_declares({"stages": _STAGES, **_callback.CONSTS}, _batched_rule, simulator.matmul_batched)
def _batched(a, b, c, shared, alpha=1.0, beta=0.0, *, stages=2, epilogue=None, epilogue_args=None):
    """``c[i] = alpha * a[i] @ b[i] + beta * c[i]`` for this block's share of the batch; see `Matmul`."""


@_declares(_callback.CONSTS, _store_rule, simulator.matmul_store)
def _store(acc, dst, row, col, alpha=1.0, beta=0.0, stage=None, *, epilogue=None, epilogue_args=None):
    """``dst[row:row+M, col:col+N] = alpha * acc + beta * dst[...]`` from the block's accumulators; see `Matmul`."""


@_declares({}, _wait_rule, simulator.tile_wait)
def _wait(pending=0):
    """Wait for this block's asynchronous loads (all but the last ``pending``), then a barrier; see `Matmul`."""


def _kernel_attribute(mm, name):
    """What ``mm.<name>`` is inside a kernel: a size (an int constant) or a bound intrinsic."""
    if name in ("a_items", "b_items", "c_items", "accumulator_items", "shared_memory_bytes", "threads", "load_a",
                "load_b", "multiply", "store", "wait", "batched", "batched_tma"):
        return getattr(mm, name)
    return None


if not _numba.simulator_enabled():
    _numba.register_description(Matmul, _kernel_attribute)
