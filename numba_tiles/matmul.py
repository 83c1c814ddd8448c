"""Matrix products of tiles by cuBLASDx: `matmul` on shared tiles, and the `Matmul` description.

`matmul` is the one-call form: ``c = alpha * a @ b + beta * c`` for tiles in shared memory (see
`numba_tiles.tile` for moving them). `Matmul` describes one product at module level; in kernels its
methods are the register form's steps (``load_a``, ``load_b``, ``multiply``, ``store``, ``wait``) and
two whole calls, ``tile`` (one tile of C) and ``batched`` (a batch of products), whose implementation
it chooses by the GPU, the dtypes and the shape (`Matmul.operands`).
"""

import dataclasses
import math
import os
import threading

import numpy as np
from numba import cuda
from numba.cuda import types

from . import (_callback, _compile, _matrices, _mlir, _numba, _operands, _pipeline, _tensor_maps, _toolchain,
               extending as ext, simulator)
from ._target import Target
from ._operands import Operands
from .extending import MATHDX, Instance, intrinsic
from .tile import wait_rule

MATMUL = MATHDX.header("matmul.cuh")
_STAGES = ext.choice("stages", dict.fromkeys(range(2, 17)))  # shared buffers of A and B in tile and batched
_SHARED = "::numba_tiles::dynamic_shared<unsigned char>()"  # (the C++ argument: the launch's dynamic shared memory)
_BLOCK = {"block_dim": lambda mm: mm.block_dim}  # (the register form's steps run on the description's block)


def _lds(intrinsic, value):
    if value is not None and not (isinstance(value, tuple) and len(value) == 3
                                  and all(isinstance(v, int) and v >= 1 for v in value)):
        raise ext.error(intrinsic, f"ld must be a tuple of 3 positive ints, got {value!r}",
                    "pass ld=(lda, ldb, ldc), the leading dimensions of padded tiles, or leave it out")
    return value


def _arrangement(intrinsic, value):
    if value is not None and not (isinstance(value, tuple) and len(value) == 3 and set(value) <= set(_matrices.ORDERS)):
        raise ext.error(intrinsic, f"arrangement must be a 3-tuple of 'row_major'/'col_major', got {value!r}",
                    "pass arrangement=('row_major', 'col_major', 'row_major') for A, B and C, or leave it "
                    "out for C- or F-contiguous tiles")
    return value


def _order(name, args, param, given):
    """Whether the tile ``param`` is row-major: its Numba layout, or the given arrangement."""
    if given is not None:
        return _matrices.ORDERS[given]
    layout = args[param].layout
    if layout not in "CF":
        raise ext.error(name, f"{param} is a strided view ({args[param]}), whose order is known only at run time",
                    "pass arrangement=('row_major' or 'col_major', ...) for A, B and C")
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
        raise ext.error(name, f"ld={lds} is less than the tiles' {tuple(dense)} (a row-major tile's leading dimension "
                    f"is its row stride, at least its columns; a column-major one's its column stride)",
                    "pass ld= the strides of the padded tiles, or leave it out for unpadded ones")
    align = args["alignment"] or 0
    for param, ld, dtype in zip("abc", lds, (ta, tb, tc)):
        if align and ld * dtype.numpy.itemsize % align:
            raise ext.error(name, f"alignment={align} needs each tile row (or column) to start {align}-byte aligned; "
                        f"{param}'s leading dimension {ld} is {ld * dtype.numpy.itemsize} bytes",
                        f"pad the tiles to a leading dimension of a multiple of {align // dtype.numpy.itemsize} "
                        "items (ld=), or leave alignment out")
    template = MATMUL.template("numba_tiles::matmul", M=m, N=n, K=k, TA=ta.cxx, TB=tb.cxx, TC=tc.cxx, PA=compute,
                               PB=compute, RowA=rows["a"], RowB=rows["b"], RowC=rows["c"], LDA=lds[0], LDB=lds[1],
                               LDC=lds[2], Align=align, **_matrices.block_shape(args))
    return Instance(name, MATMUL, template, types.none,
                    (("a", args["a"], None), ("b", args["b"], None), ("c", args["c"], None),
                     ("alpha", tc.numba, 1), ("beta", tc.numba, 0)))


@intrinsic(consts={"shape": _matrices.shape_mnk, "block_dim": ext.block_dim, "arrangement": _arrangement, "ld": _lds,
                   "alignment": ext.choice("alignment", {None: 0, 16: 16}),
                   "precision": ext.choice("precision", dict.fromkeys([None, *_matrices.NAMED]))},
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




# ---- The description ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Plan:
    """How ``mm.tile`` or ``mm.batched`` runs for a C of one dtype on one GPU: ``implementation`` (see
    `Matmul.operands`), its ``stages``, its ``block`` and dynamic ``shared_bytes`` a block, and its ``grid`` rule
    ("tiles": one block a tile of C; "products": one a product; "resident": as many as run at once;
    "even": as many as run at once, then as few as give each block the same number of products)."""

    implementation: str
    stages: int
    block: tuple
    shared_bytes: int
    grid: str

    @property
    def threads(self):
        return math.prod(self.block)


def _tma_fits(mm):
    """Whether TMA can load ``mm``'s tiles (lines of 32, 64 or a multiple of 128 bytes)."""
    try:
        _tensor_maps.tma_tiles("Matmul", mm.shape, np.dtype(mm.dtype).itemsize, mm.arrangement)
    except ext.TilesError:
        return False
    return True


@ext.description(constants=("a_items", "b_items", "c_items", "accumulator_items", "shared_memory_bytes", "threads"))
class Matmul:
    """A block's tile product ``C = alpha * A @ B + beta * C``, described once at module level and used in kernels.

    ``shape=(M, N, K)``: C's tile is M x N, and A and B move K columns (rows) a step; ``dtype``: A's and
    B's (float16, float32, float64; int16 holding bfloat16 bits with ``precision="bf16"``, as
    ``torch_tensor.view(torch.int16)`` gives them; float32 with ``precision="tf32"``); ``accumulator``:
    the accumulator's (float32 for half-precision operands by default, float16 allowed; else ``dtype``);
    ``arrangement``: A's and B's order in global memory (``("row_major", "row_major")`` by default);
    ``block_dim``: the block of the register form's steps (by default 128 threads for tiles of up to 64
    x 64, else 256); ``stages``: how many K-steps of A and B ``tile`` and ``batched`` keep in flight
    (2 to 16; by default 2 to 4, by K's bytes). Creating one compiles nothing and needs no GPU; it checks
    the description. Its attributes are those arguments, parsed (``shape``, ``dtype``, ``accumulator``,
    ``arrangement``, ``precision``, ``block_dim`` as ``(x, y, z)``, ``stages``), A's and B's tile shapes
    ``a_shape`` (M x K) and ``b_shape`` (K x N), and the sizes a kernel allocates, which are also constants
    inside kernels:

    - ``a_items``, ``b_items``: the items of the shared A and B tiles;
    - ``shared_memory_bytes``: the bytes of both together;
    - ``accumulator_items``: the items of each thread's accumulator;
    - ``c_items``: the items of ``store``'s optional shared stage, in the accumulator's dtype;
    - ``threads``: ``block_dim``'s threads.

    In a kernel, two whole calls, each given ``ops = mm.operands(a, b, c)`` (made on the host), whose
    code `Matmul.operands` chooses for the GPU, and launched by `Matmul.launch`:

    - ``mm.tile(ops, i, j, alpha=1.0, beta=0.0)``: C's tile (i, j), ``c[i*M:(i+1)*M, j*N:(j+1)*N] =
      alpha * a @ b + beta * c`` there, the whole K loop inside, by the whole block; items past C's edges
      are left out, and the call ends with a barrier, so a block may compute any number of tiles;
    - ``mm.batched(ops, alpha=1.0, beta=0.0)``: ``c[i] = alpha * a[i] @ b[i] + beta * c[i]`` for the
      whole batch (each product at most M x N, any K), a persistent loop over the launch's blocks.

    Both take ``epilogue=f, epilogue_args=(x, ...)``: each item of C is stored as ``f(value, row, col,
    x, ...)`` (``batched``: ``f(value, i, row, col, x, ...)``, ``i`` the product), ``value`` being
    ``alpha * A @ B + beta * C`` in the accumulator's dtype and ``(row, col)`` its place in C; ``f`` is a
    ``@cuda.jit(device=True)`` function, inlined into the store, so that ``relu(A @ B + bias)``, row or
    column scaling and activations cost no pass over C.

    And the register form's steps, for a kernel's own loop (every thread of a ``block_dim`` block
    calls each): ``load_a``, ``load_b`` (a tile of A or B into shared memory), ``wait`` (for
    asynchronous loads), ``multiply`` (``acc += A @ B``, the accumulator in registers) and ``store``
    (C from the accumulator), each documented on its own.

    Example::

        import numpy as np
        from numba import cuda, float32
        import numba_tiles as tiles

        MM = tiles.Matmul((64, 64, 32), "float16")

        @cuda.jit
        def gemm(ops, alpha, beta):                  # c = alpha * a @ b + beta * c, any sizes
            MM.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, alpha, beta)

        sig = (MM.operands_type("float32"), float32, float32)
        cubin = tiles.compile(gemm, sig, arch="sm_80")   # no GPU needed (for sm_90a: TMA loads and wgmma)
        if cuda.is_available():
            a = cuda.to_device(np.random.rand(256, 128).astype(np.float16))   # m x k
            b = cuda.to_device(np.random.rand(128, 192).astype(np.float16))   # k x n
            c = cuda.device_array((256, 192), np.float32)                     # m x n
            MM.launch(gemm, MM.operands(a, b, c), 1.0, 0.0)
            expected = a.copy_to_host().astype(np.float32) @ b.copy_to_host().astype(np.float32)
            assert np.allclose(c.copy_to_host(), expected, rtol=1e-2, atol=1e-2)
    """

    def __init__(self, shape, dtype, *, accumulator=None, arrangement=("row_major", "row_major"), precision=None,
                 block_dim=None, stages=None):
        name = "Matmul"
        self._describe(name, shape, dtype, accumulator, arrangement, precision)
        ta, tc = self._types
        m, n, k = self.shape
        self.block_dim = ext.block_dim(name, block_dim if block_dim is not None else (128 if m * n <= 4096 else 256))
        _matrices.whole_warps(name, self.block_dim)
        self.threads = threads = math.prod(self.block_dim)
        if m * n % threads:
            raise ext.error(name, f"the {m} x {n} accumulator does not divide among the block's {threads} threads",
                            f"use a block of a divisor of M*N = {m * n} threads (a multiple of 32), or a larger tile")
        self.stages = stages if stages is None else _STAGES(name, stages)
        self.a_shape, self.b_shape = (m, k), (k, n)
        self.a_items, self.b_items = m * k, k * n
        self.accumulator_items = m * n // threads
        self.c_items = m * (n + 32 // tc.numpy.itemsize)  # rows padded by 32 bytes: stage_pitch in matmul.cuh
        self.shared_memory_bytes = (self.a_items + self.b_items) * ta.numpy.itemsize
        _compile_ahead(self)

    def _describe(self, name, shape, dtype, accumulator, arrangement, precision):
        """Check and keep what the product is, the block aside."""
        self.shape = _matrices.shape_mnk(name, tuple(shape) if isinstance(shape, list) else shape)
        self.precision = ext.choice("precision", dict.fromkeys([None, *_matrices.NAMED]))(name, precision)
        self.arrangement = _matrices.arrangement2(name, tuple(arrangement) if isinstance(arrangement, list)
                                                  else arrangement)
        ta = ext.named(name, "dtype", dtype)
        half = ta.name == "float16" or self.precision == "bf16"
        tc = ext.named(name, "accumulator", accumulator or ("float32" if half else ta.name))
        self._compute = _matrices.compute_type(name, ta, tc, self.precision)
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
        row_a, row_b = (str(_matrices.ORDERS[a]).lower() for a in probe.arrangement)
        packed = _compile.constant(f"numba_tiles::suggested_block_dim<{m}, {n}, {k}, {probe._compute}, "
                                   f"{probe._compute}, {probe._types[1].cxx}, {row_a}, {row_b}>()", MATMUL, arch)
        return packed & 0xFFFF, packed >> 16 & 0xFFFF, packed >> 32 & 0xFFFF

    # ---- the host side of tile and batched ----

    def _implementations(self, cc, c_dtype, ndim):
        """The implementations that compute ``tile`` (``ndim`` 2) or ``batched`` (3) into a C of ``c_dtype`` on a GPU
        of compute capability ``cc`` (None: the simulator, where they compute alike), the fastest first."""
        tma = cc is not None and cc >= (9, 0) and _tma_fits(self)
        wgmma = cc == (9, 0) and tma and _pipeline.wgmma_takes(self, c_dtype, self._stages("wgmma"))
        if ndim == 2:
            libmathdx = cc == (9, 0) and _pipeline.libmathdx_takes(self, c_dtype)
            return ("wgmma",) * wgmma + ("libmathdx",) * libmathdx + ("cp.async",)
        if cc is None:
            return "cp.async", "tma", "wgmma"
        if self._types[0].numpy.itemsize > 2:  # (float32 and float64 load faster by cp.async)
            return ("cp.async",) + ("tma",) * tma
        # (with 64 rows the register form's TMA loop was faster than wgmma's on an H200)
        order = ("wgmma", "tma", "cp.async") if self.shape[0] == 128 else ("tma", "wgmma", "cp.async")
        return tuple(i for i in order if {"wgmma": wgmma, "tma": tma}.get(i, True))

    def _plan(self, name, cc, c_dtype, ndim, implementation=None):
        """The `_Plan` of ``tile`` (``ndim`` 2) or ``batched`` (3) for a C of ``c_dtype`` on a GPU of compute
        capability ``cc`` (None: the simulator's): ``implementation``'s, or the fastest."""
        possible = self._implementations(cc, c_dtype, ndim)
        chosen = implementation or possible[0]
        if chosen not in possible:
            where = "the simulator" if cc is None else f"sm_{cc[0]}{cc[1]}"
            raise ext.error(name, f"implementation={chosen!r} does not compute this {'batch' if ndim == 3 else 'tile'} "
                            f"on {where} (C of {c_dtype}); {', '.join(map(repr, possible))} do",
                            "leave implementation out (the fastest is chosen), or pass one of those")
        stages = self._stages(chosen)
        if chosen == "libmathdx":
            return _Plan(chosen, stages, (_pipeline.pipeline_threads(self), 1, 1),
                         _pipeline.pipeline_shared_bytes(name, self, stages), "tiles")
        if chosen == "wgmma":
            return _Plan(chosen, stages, (_pipeline.wgmma_threads(self), 1, 1),
                         _pipeline.wgmma_shared_bytes(self, c_dtype, stages), "tiles" if ndim == 2 else "resident")
        if chosen == "tma":
            return _Plan(chosen, stages, self.block_dim, self._tma_bytes(stages, c_dtype), "products")
        return _Plan(chosen, stages, self.block_dim, self._copied_bytes(stages, c_dtype),
                     "tiles" if ndim == 2 else "even")

    def _stages(self, implementation):
        """The description's stages, or by default: libmathdx's tested 2, else 2 to 4, as many as keep about 256
        bytes of each line of A and B in flight."""
        if self.stages or implementation == "libmathdx":
            return self.stages or 2
        return max(2, min(4, 256 // (self.shape[2] * self._types[0].numpy.itemsize)))

    def _copied_bytes(self, stages, c_dtype):
        """The dynamic shared memory of the cp.async loop (batched_shared_bytes in matmul.cuh): ``stages`` tiles
        of A and of B, and C's stage."""
        return stages * self.shared_memory_bytes + self._stage_bytes(c_dtype)

    def _tma_bytes(self, stages, c_dtype):
        """The dynamic shared memory of the TMA loop (matmul_batched_tma in matmul.cuh): ``stages`` tiles of A
        and of B (each a whole number of KiB, as TMA's swizzle wants them aligned), up to 1 KiB to align them,
        C's stage and the buffers' barriers. A stage that fits in one buffer's A and B tiles and goes out by
        the threads' copy (a C other than float32) takes no bytes of its own: it is written over the buffer
        the block has just multiplied (batched_tma_aliased)."""
        tiles = sum(box[2] for box in _tensor_maps.tma_tiles("Matmul", self.shape, self._types[0].numpy.itemsize,
                                                             self.arrangement))
        stage = self._stage_bytes(c_dtype)
        tc, td = self._types[1].numpy.itemsize, np.dtype(c_dtype).itemsize
        if not (td == 4 and td <= tc) and stage <= tiles:  # (a bulk copy of a float C reads the stage late)
            stage = 0
        return 1008 + stages * tiles + stage + stages * 8

    def _stage_bytes(self, c_dtype):
        """The bytes of the batched loop's stage of C (batched_stage and staged_pitch in matmul.cuh): C's own
        items, rows padded by 16 bytes, when C is narrower than the accumulator; else ``c_items``."""
        tc, td = self._types[1].numpy.itemsize, np.dtype(c_dtype).itemsize
        if td < tc:
            m, n, _ = self.shape
            return m * (n + 16 // td) * td
        return self.c_items * tc

    def operands(self, a, b, c, stream=0, implementation=None):
        """A, B and C described to ``mm.tile`` (2-D arrays: A is m x k, B k x n, C m x n) or ``mm.batched``
        (3-D: count x m x k, count x k x n, count x m x n, each product at most M x N), as an `Operands`: the
        first argument of the kernel, of a Numba type of this description's own. Made on the host for the
        current GPU, from device arrays (any strides; numpy arrays on the simulator); C holds the
        accumulator's dtype or A's (rounded to it). Make it again for other arrays.

        It chooses the code the kernel's call runs (``ops.implementation``), by the GPU, the dtypes and the
        shape, as fast as this library knows:

        - ``tile`` on Hopper (sm_90) for fp16 or bf16 operands with a float32 accumulator, tiles of 64 or 128
          rows and a multiple of 64 columns: ``"wgmma"``, a warp-specialized block of TMA loads and ``wgmma``
          (its first compile takes seconds);
        - ``tile`` on sm_90 for other fp16, bf16 or tf32 (A row-major, B column-major) tiles of multiples of
          64 x 16 x 16: ``"libmathdx"``, cuBLASDx's pipelined GEMM (TMA loads, ``wgmma``), made by libmathdx
          the first time (15 to 60 s, then the disk cache answers);
        - ``batched`` on sm_90 for 16-bit operands in 128-row tiles: ``"wgmma"``, the same block in a
          persistent loop whose blocks take products in a dynamic order (one such launch of an ``ops`` at a
          time, in one stream);
        - ``batched`` on sm_90 and later for other 16-bit tiles whose lines TMA loads: ``"tma"``, the
          register form's loop with A and B loaded by TMA;
        - otherwise ``"cp.async"``: the register form's loop, A and B copied by the threads (any GPU).

        All but ``"cp.async"`` load A and B by TMA, which takes arrays whose lines are contiguous, with their
        other strides multiples of 16 bytes and their data 16-byte aligned, and ``"wgmma"`` stores C so
        (row-major, C of A's dtype or float32); for other arrays the next in that list is chosen.
        ``implementation=`` takes one of those where it computes the product (a TilesError names those that
        do): the kernel compiles for it, whatever the GPU it runs on.

        Example, continuing `Matmul`'s::

            if cuda.is_available():
                ops = MM.operands(a, b, c)          # device arrays
                print(ops.implementation)           # "wgmma" on an H100, "cp.async" on an A100
                MM.launch(gemm, ops, 1.0, 0.0)      # a kernel whose first argument is ops
        """
        name = "Matmul.operands"
        ndim = getattr(a, "ndim", None)
        if ndim not in (2, 3):
            raise ext.error(name, f"a must be a 2-D or a 3-D array, got {type(a).__name__} {getattr(a, 'shape', '')}",
                            "pass 2-D arrays (mm.tile) or 3-D batches of them (mm.batched), on the GPU")
        for param, array, dtypes in (("a", a, (self.dtype,)), ("b", b, (self.dtype,)),
                                     ("c", c, tuple(dict.fromkeys((self.accumulator, self.dtype))))):
            if getattr(array, "ndim", None) != ndim or str(array.dtype) not in dtypes:
                raise ext.error(name, f"{param} must be a {ndim}-D array of {' or '.join(dtypes)} like a, got "
                                f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}",
                                f"pass {param} of {dtypes[0]}, {ndim}-D like a")
        lead = a.shape[:1] if ndim == 3 else ()
        (m, k), (bk, n) = a.shape[-2:], b.shape[-2:]
        if (k, *lead) != (bk, *b.shape[:ndim - 2]) or tuple(c.shape) != (*lead, m, n):
            raise ext.error(name, f"A is {tuple(a.shape)}, B {tuple(b.shape)} and C {tuple(c.shape)}; they must be "
                            + ("count x m x k, count x k x n and count x m x n" if ndim == 3
                               else "m x k, k x n and m x n"),
                            "pass A, B and C of one product, A's columns B's rows")
        if ndim == 3 and (m > self.shape[0] or n > self.shape[1]):
            raise ext.error(name, f"C is {tuple(c.shape)}: each product of a batch is one {self.shape[0]} x "
                            f"{self.shape[1]} tile of this Matmul", "make the Matmul with a larger shape, or compute "
                            "each product's tiles with mm.tile")
        if _numba.simulator_enabled():  # (the twins read A, B and C)
            plan = self._plan(name, None, str(c.dtype), ndim, implementation)
            return Operands(self, plan, np.zeros(_operands.PIPE.itemsize, np.uint8), a, b, c)
        for param, array in (("a", a), ("b", b), ("c", c)):
            if not hasattr(array, "__cuda_array_interface__"):
                raise ext.error(name, f"{param} is a host array", f"pass device arrays: cuda.to_device({param})")
        # numba-cuda's own device arrays, once: a launch then passes them as they are (another library's arrays,
        # PyTorch's tensors say, are converted at every launch, which took longer than a 64^3 batch's kernel;
        # numba-cuda-mlir's are typed as its own types, which numba-cuda's kernels here do not take).
        a, b, c = (x if _numba.is_device_array(x) else cuda.as_cuda_array(x) for x in (a, b, c))
        cc = tuple(cuda.get_current_device().compute_capability)
        if implementation is None:  # (the fastest whose copies take these arrays' strides)
            implementation = next(i for i in self._implementations(cc, str(c.dtype), ndim) if self._takes(i, a, b, c))
        plan = self._plan(name, cc, str(c.dtype), ndim, implementation)
        if plan.implementation == "libmathdx":
            pipe = _pipeline.prepare(name, self, plan.stages, a, b, stream)
        elif plan.implementation in ("tma", "wgmma"):
            pipe = _tensor_maps.prepare(name, self, a, b, c if plan.implementation == "wgmma" else None, stream)
        else:
            pipe = cuda.device_array(_operands.PIPE.itemsize, np.uint8, stream=stream)
        return Operands(self, plan, pipe, a, b, c)

    def _takes(self, implementation, a, b, c):
        """Whether ``implementation``'s copies take the device arrays ``a``, ``b`` and ``c``: TMA and libmathdx
        load A and B by their lines (`_tensor_maps.fits`), and the wgmma loop stores C by TMA, row-major."""
        if implementation == "cp.async":
            return True
        return (all(_tensor_maps.fits(x, order) for x, order in zip((a, b), self.arrangement))
                and (implementation != "wgmma" or _tensor_maps.fits(c, "row_major")))

    def operands_type(self, c="float32", batched=False, implementation=None):
        """The Numba type of this description's `Operands` with a C of ``c``'s dtype (``batched``: 3-D arrays; an
        ``implementation`` as `operands` takes it, else the fastest for the arch the kernel compiles for): what a
        ``tiles.compile`` signature names for the kernel's ``ops``.

        Example, continuing `Matmul`'s::

            sig = (MM.operands_type("float32"), float32, float32)   # gemm's ops, alpha and beta
            cubin = tiles.compile(gemm, sig, arch="sm_80")
            batch = MM.operands_type("float32", batched=True)         # the ops of 3-D arrays, for mm.batched
        """
        return _operands.handle_type(self, self.dtype, ext.named("Matmul.operands_type", "c", c).name,
                                     3 if batched else 2, implementation)

    def launch_config(self, kernel, *args, grid=None):
        """``(grid, block, shared)`` for launching ``kernel`` with ``args``, one of which is an `Operands` of this
        description, after letting the kernel take that much dynamic shared memory (see `launch`; a numba-cuda-mlir
        kernel takes ``ops`` as `launch` passes it, so launch those with `launch`).

        Example, continuing `Matmul`'s::

            if cuda.is_available():
                ops = MM.operands(a, b, c)
                grid, block, shared = MM.launch_config(gemm, ops, 1.0, 0.0)
                gemm[grid, block, 0, shared](ops, 1.0, 0.0)
        """
        name = "Matmul.launch"
        found = [a for a in args if isinstance(a, Operands)]
        if len(found) != 1 or found[0].mm != self:
            raise ext.error(name, f"it needs one Operands of {self!r} among the kernel's arguments, got "
                            f"{[repr(a) for a in found] or 'none'}", "pass ops = mm.operands(a, b, c) of this "
                            "Matmul to the kernel")
        ops = found[0]
        plan, shared = ops.plan, ops.plan.shared_bytes
        from ._shared_memory import allow_dynamic_shared_memory

        mlir = _mlir.is_kernel(kernel)
        allow_dynamic_shared_memory(kernel, shared, *args)
        if grid is None and plan.grid == "tiles":
            m, n, _ = self.shape
            rows, cols = ops.c.shape
            grid = (max(-(-cols // n), 1), max(-(-rows // m), 1))
        elif grid is None and plan.grid == "products":
            grid = max(ops.c.shape[0], 1)
        elif grid is None or grid == "resident":
            resident = (2 * 132 if _numba.simulator_enabled() else
                        _mlir.resident_blocks(kernel, args, plan.threads, shared) if mlir
                        else _numba.resident_blocks(kernel, args, plan.threads, shared))
            work = ops.c.shape[0] if ops.c.ndim == 3 else math.prod(-(-s // t) for s, t in
                                                                    zip(ops.c.shape, self.shape))
            grid = max(min(resident, work), 1)
            if plan.grid == "even":  # (4096 products on 132 blocks: 128 blocks of 32 each leave no GPU idle)
                grid = -(-work // -(-work // grid)) if work else 1
        return grid, plan.block, shared

    def launch(self, kernel, *args, grid=None, stream=0):
        """Launch ``kernel`` with ``args``, one of which is ``ops = mm.operands(a, b, c)``: with the block and the
        dynamic shared memory its ``mm.tile`` or ``mm.batched`` needs, the kernel let to take it, and ``grid``:

        - by default, for ``mm.tile``, one block a tile of C, ``(tile columns, tile rows)``: the kernel calls
          ``mm.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, ...)``; for ``mm.batched``, the grid its
          implementation runs best with;
        - ``"resident"``: as many blocks as the GPU runs at once (the driver's occupancy query), at most one
          a tile or product: for a kernel's own persistent loop over C's tiles (``cuda.gridDim.x`` apart);
        - or a grid of your own.

        A numba-cuda-mlir kernel launches so too (its launcher passes ``ops`` as a tuple of its arrays, which
        ``launch`` makes).

        Example, continuing `Matmul`'s::

            if cuda.is_available():
                MM.launch(gemm, MM.operands(a, b, c), 1.0, 0.0)   # c = a @ b
        """
        grid, block, shared = self.launch_config(kernel, *args, grid=grid)
        kernel[grid, block, stream, shared](*(_mlir.launch_arguments(args) if _mlir.is_kernel(kernel) else args))

    def _key(self):
        return (self.shape, self.dtype, self.accumulator, self.block_dim, self.arrangement, self.precision, self.stages)

    def __eq__(self, other):
        return isinstance(other, Matmul) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"Matmul(shape={self.shape}, dtype={self.dtype}, accumulator={self.accumulator}, "
                f"block_dim={self.block_dim}, arrangement={self.arrangement}, precision={self.precision}"
                + (f", stages={self.stages})" if self.stages else ")"))

    # ---- what the kernels' calls check and instantiate ----

    def _template(self, function, **more):
        m, n, k = self.shape
        ta, tc = self._types
        bx, by, bz = self.block_dim
        row_a, row_b = (_matrices.ORDERS[a] for a in self.arrangement)
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

    # ---- in kernels ----

    @ext.method(consts={"asynchronous": ext.flag("asynchronous")}, fixed=_BLOCK, rule=lambda n, a: _load_rule(n, a, 0),
                simulate=lambda i, a: simulator.matmul_load(i, {**a, "operand": 0}))
    def load_a(self, src, tile, row, col, fill=0, *, asynchronous=False):
        """Copy A's tile of the 2-D array ``src`` at ``src[row, col]`` (M x K items, ``fill`` past ``src``'s
        edges) into ``tile``, a shared array of ``mm.a_items`` items of ``dtype`` (``alignment=16``), in
        cuBLASDx's layout, by the whole block: 16-byte ``cp.async`` copies inside the matrix. It ends with a
        barrier, unless ``asynchronous=True``: then it returns at once and ``mm.wait`` completes it.

        Example, continuing `Matmul`'s::

            from numba.cuda.types import float16

            @cuda.jit
            def first_a(a, row):
                sa = cuda.shared.array(MM.a_items, float16, alignment=16)
                MM.load_a(a, sa, row, 0)     # A's tile at a[row, 0], zeros past a's edges

            cubin = tiles.compile(first_a, "void(float16[:, :], int64)", arch="sm_80")
        """

    @ext.method(consts={"asynchronous": ext.flag("asynchronous")}, fixed=_BLOCK, rule=lambda n, a: _load_rule(n, a, 1),
                simulate=lambda i, a: simulator.matmul_load(i, {**a, "operand": 1}))
    def load_b(self, src, tile, row, col, fill=0, *, asynchronous=False):
        """Copy B's tile of ``src`` at ``src[row, col]`` (K x N items) into ``tile`` (``mm.b_items`` items): as
        `load_a`.

        Example, continuing `Matmul`'s::

            from numba.cuda.types import float16

            @cuda.jit
            def first_b(b, col):
                sb = cuda.shared.array(MM.b_items, float16, alignment=16)
                MM.load_b(b, sb, 0, col)     # B's tile at b[0, col]

            cubin = tiles.compile(first_b, "void(float16[:, :], int64)", arch="sm_80")
        """

    @ext.method(fixed=_BLOCK, rule=lambda n, a: wait_rule(n, a, a["mm"].threads),
                simulate=simulator.tile_wait)
    def wait(self, pending=0):
        """Wait for this block's asynchronous `load_a`\\ s and `load_b`\\ s (all, or all but the last ``pending``),
        then a barrier, so the tiles they fill are ready.

        Example, continuing `Matmul`'s::

            from numba.cuda.types import float16

            @cuda.jit
            def first_tiles(a, b, row, col):
                sa = cuda.shared.array(MM.a_items, float16, alignment=16)
                sb = cuda.shared.array(MM.b_items, float16, alignment=16)
                MM.load_a(a, sa, row, 0, asynchronous=True)
                MM.load_b(b, sb, 0, col, asynchronous=True)   # both copies in flight
                MM.wait()                                     # both tiles ready

            cubin = tiles.compile(first_tiles, "void(float16[:, :], float16[:, :], int64, int64)", arch="sm_80")
        """

    @ext.method(fixed=_BLOCK, rule=lambda n, a: _multiply_rule(n, a), simulate=simulator.matmul_multiply)
    def multiply(self, a, b, acc):
        """``acc += a @ b`` for the shared tiles ``a`` and ``b`` (`load_a`, `load_b`) and ``acc``, each thread's
        ``cuda.local.array(mm.accumulator_items, accumulator)`` (zero it first), by the whole block on tensor
        cores for fp16, bf16, tf32 and fp64; ends with a barrier, so the tiles may be refilled.

        Example, continuing `Matmul`'s (the register form's loop)::

            from numba.cuda.types import float16

            @cuda.jit
            def gemm_steps(a, b, c):          # C's tile (blockIdx.y, blockIdx.x) = a @ b
                sa = cuda.shared.array(MM.a_items, float16, alignment=16)
                sb = cuda.shared.array(MM.b_items, float16, alignment=16)
                acc = cuda.local.array(MM.accumulator_items, float32)
                for i in range(MM.accumulator_items):
                    acc[i] = 0
                row, col = cuda.blockIdx.y * 64, cuda.blockIdx.x * 64
                for k in range(0, a.shape[1], 32):
                    MM.load_a(a, sa, row, k)
                    MM.load_b(b, sb, k, col)
                    MM.multiply(sa, sb, acc)
                MM.store(acc, c, row, col)

            cubin = tiles.compile(gemm_steps, "void(float16[:, :], float16[:, :], float32[:, :])", arch="sm_80")
            if cuda.is_available():
                gemm_steps[(3, 4), MM.threads](a, b, c)   # c (256 x 192) = a @ b, 64 x 64 a block
                assert np.allclose(c.copy_to_host(), expected, rtol=1e-2, atol=1e-2)
        """

    @ext.method(consts=_callback.CONSTS, fixed=_BLOCK, rule=lambda n, a: _store_rule(n, a),
                simulate=simulator.matmul_store)
    def store(self, acc, dst, row, col, alpha=1.0, beta=0.0, stage=None, *, epilogue=None, epilogue_args=None):
        """``dst[row:row+M, col:col+N] = alpha * acc + beta * dst[...]`` from the block's accumulators, items past
        ``dst``'s edge dropped (``beta=0``: dst is not read); ``dst`` holds the accumulator's dtype or A's
        (rounded to it, as cuBLAS does for half precision). Each thread stores its own items; with ``stage``
        (``cuda.shared.array(mm.c_items, accumulator, alignment=16)``) C goes through shared memory and out in
        16-byte vectors: faster, and it ends with a barrier. ``epilogue=f, epilogue_args=(x, ...)``: each item
        stored as ``f(value, row, col, x, ...)`` (see `Matmul`).

        Example, continuing `Matmul`'s::

            @cuda.jit
            def fill(c, value):         # C's tile (0, 0) = value
                acc = cuda.local.array(MM.accumulator_items, float32)
                for i in range(MM.accumulator_items):
                    acc[i] = value
                MM.store(acc, c, 0, 0)

            cubin = tiles.compile(fill, "void(float32[:, :], float32)", arch="sm_80")
        """

    @ext.method(consts=_callback.CONSTS, rule=lambda n, a: _tile_rule(n, a), simulate=simulator.matmul_tile)
    def tile(self, ops, i, j, alpha=1.0, beta=0.0, *, epilogue=None, epilogue_args=None):
        """C's tile (i, j) = ``alpha * A @ B + beta * C`` for ``ops = mm.operands(a, b, c)`` of 2-D arrays, the
        whole K loop inside, by the whole block; see `Matmul` and `Matmul.operands`.

        Example, continuing `Matmul`'s (a persistent loop over C's tiles)::

            from numba import int64

            @cuda.jit
            def gemm_loop(ops, tiles_n, count):
                for t in range(cuda.blockIdx.x, count, cuda.gridDim.x):
                    MM.tile(ops, t // tiles_n, t % tiles_n)

            cubin = tiles.compile(gemm_loop, (MM.operands_type("float32"), int64, int64), arch="sm_80")
            if cuda.is_available():
                tiles_m, tiles_n = -(-c.shape[0] // 64), -(-c.shape[1] // 64)
                MM.launch(gemm_loop, MM.operands(a, b, c), tiles_n, tiles_m * tiles_n, grid="resident")
                assert np.allclose(c.copy_to_host(), expected, rtol=1e-2, atol=1e-2)
        """

    @ext.method(consts=_callback.CONSTS, rule=lambda n, a: _batched_rule(n, a), simulate=simulator.matmul_batched)
    def batched(self, ops, alpha=1.0, beta=0.0, *, epilogue=None, epilogue_args=None):
        """``c[i] = alpha * a[i] @ b[i] + beta * c[i]`` for the whole batch of ``ops = mm.operands(a, b, c)`` (3-D
        arrays), a persistent loop over the launch's blocks; see `Matmul` and `Matmul.operands`.

        Example, continuing `Matmul`'s::

            @cuda.jit
            def bmm(ops):
                MM.batched(ops)             # c[i] = a[i] @ b[i]

            cubin = tiles.compile(bmm, (MM.operands_type("float32", batched=True),), arch="sm_80")
            if cuda.is_available():
                a = cuda.to_device(np.random.rand(1000, 64, 32).astype(np.float16))
                b = cuda.to_device(np.random.rand(1000, 32, 64).astype(np.float16))
                c = cuda.device_array((1000, 64, 64), np.float32)
                MM.launch(bmm, MM.operands(a, b, c))
                product = a.copy_to_host().astype(np.float32) @ b.copy_to_host().astype(np.float32)
                assert np.allclose(c.copy_to_host(), product, rtol=1e-2, atol=1e-2)
        """

    @ext.method(consts={"stages": _STAGES}, rule=lambda n, a: _pipeline.prepare_instance(n, a["mm"], a["stages"], a),
                simulate=None)
    def _prepare_pipeline(self, pipe, a, b, stages):
        """Fill ``pipe``, libmathdx's device-pipeline object, for A and B (one thread): `Matmul.operands`."""


def _load_rule(name, args, operand):
    mm = args["mm"]
    ta = mm._shared_tile(name, args, "tile", "ab"[operand] + "_items")
    _matrices.matrix(name, args, "src", like=("tile", ta))
    _matrices.origin(name, args)
    template = mm._template("numba_tiles::matmul_load", Operand=operand, Async=args["asynchronous"], T=ta.cxx)
    return Instance(name, MATMUL, template, types.none,
                    (("src", args["src"], None), ("row", types.int64, None), ("col", types.int64, None),
                     ("tile", args["tile"], None), ("fill", ta.numba, 0)), threads=mm.threads)


def _multiply_rule(name, args):
    mm = args["mm"]
    ta = mm._shared_tile(name, args, "a", "a_items")
    mm._shared_tile(name, args, "b", "b_items")
    tc = mm._accumulator(name, args)
    template = mm._template("numba_tiles::matmul_multiply", TA=ta.cxx, TB=ta.cxx, TC=tc.cxx)
    return Instance(name, MATMUL, template, types.none,
                    (("a", args["a"], None), ("b", args["b"], None), ("acc", args["acc"], None)), threads=mm.threads)


def _store_rule(name, args):
    mm = args["mm"]
    tc = mm._accumulator(name, args)
    td, result = mm._result(name, "dst", _matrices.matrix(name, args, "dst"))
    _matrices.origin(name, args)
    _matrices.scales(name, args)
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
                    params + fused, prelude=prelude, threads=mm.threads)


def _operands_of(name, args, ndim):
    """The description, its `_Plan` for the kernel's GPU and C's `Dtype`, of the call's ``ops``: `Operands` of this
    description (``ndim``: 2 for tile, 3 for batched)."""
    mm, ops = args["mm"], args["ops"]
    made = ops.info if isinstance(ops, _numba.Handle) else None
    call = {2: "tile", 3: "batched"}[ndim]
    if made is None:
        raise ext.error(name, f"ops must be what mm.operands(a, b, c) returns, got {ops}",
                        "pass ops = mm.operands(a, b, c), made on the host, to the kernel")
    if made["mm"] != mm:
        raise ext.error(name, f"ops were made by another description, {made['mm']!r}; this is {mm!r}",
                        "make them with this description's operands(a, b, c)")
    if made["ndim"] != ndim:
        raise ext.error(name, f"ops describe {'a batch (3-D arrays)' if made['ndim'] == 3 else '2-D arrays'}",
                        f"call mm.{'batched' if made['ndim'] == 3 else 'tile'}(ops, ...), or make ops of "
                        f"{ndim}-D arrays for mm.{call}")
    _matrices.scales(name, args)
    td = ext.scalar(name, "c", made["c"], verb="holds")
    mm._result(name, "c", td)
    cc = None if _numba.simulator_enabled() else _compile.typing_cc()
    if cc is not None and cc < (8, 0):
        raise ext.error(name, f"it needs sm_80 or later (cp.async copies); this kernel compiles for sm_{cc[0]}{cc[1]}",
                        "compile for sm_80 or later, or write the loop of load_a, load_b, multiply and store with "
                        "tiles.matmul")
    return mm, mm._plan(name, cc, td.name, ndim, made["implementation"]), td


def _register_params(mm, ndim, td, coordinates):
    """The cp.async loop's parameters: the operands' arrays, the launch's dynamic shared memory, the scales."""
    ta, tc = mm._types
    arrays = tuple((f"ops.{p}", types.Array(t.numba, ndim, "A"), None) for p, t in (("a", ta), ("b", ta), ("c", td)))
    return arrays + coordinates + (("shared", _SHARED, None), ("alpha", tc.numba, 1), ("beta", tc.numba, 0))


def _tile_rule(name, args):
    mm, plan, td = _operands_of(name, args, 2)
    _matrices.origin(name, args, ("i", "j"))
    return _tile_instance(name, mm, plan, td, args)


def _tile_instance(name, mm, plan, td, args):
    """``mm.tile``'s `Instance` by ``plan`` for a C of ``td`` (``args``: its epilogue's)."""
    if plan.implementation == "libmathdx":
        if _numba.simulator_enabled():
            return Instance(name, MATMUL, "", types.none, ())
        return _pipeline.tile_instance(name, mm, plan.stages, td, args)
    if plan.implementation == "wgmma":
        return _pipeline.wgmma_instance(name, mm, plan.stages, td, args, 2)
    ta, tc = mm._types
    _, result = mm._result(name, "c", td)
    fused, prelude = _callback.fused(name, args, tc.numba, 2)
    template = mm._template("numba_tiles::matmul_tile", Stages=plan.stages, SharedBytes=plan.shared_bytes, T=ta.cxx,
                            TC=tc.cxx, PD=result, TD=td.cxx, TS="unsigned char")
    params = _register_params(mm, 2, td, (("i", types.int64, None), ("j", types.int64, None)))
    return Instance(name, MATMUL, template, types.none, params + fused, prelude=prelude, threads=plan.threads)


def _batched_rule(name, args):
    mm, plan, td = _operands_of(name, args, 3)
    return _batched_instance(name, mm, plan, td, args)


def _batched_instance(name, mm, plan, td, args):
    """``mm.batched``'s `Instance` by ``plan`` for a C of ``td`` (``args``: its epilogue's)."""
    if plan.implementation == "wgmma":
        return _pipeline.wgmma_instance(name, mm, plan.stages, td, args, 3)
    ta, tc = mm._types
    _, result = mm._result(name, "c", td)
    fused, prelude = _callback.fused(name, args, tc.numba, 3)
    if plan.implementation == "tma":
        template = mm._template("numba_tiles::matmul_batched_tma", Stages=plan.stages, SharedBytes=plan.shared_bytes,
                                TC=tc.cxx, PD=result, TD=td.cxx, TS="unsigned char")
        params = (("ops.pipe", types.Array(types.uint8, 1, "C"), None), ("ops.c", types.Array(td.numba, 3, "A"), None),
                  ("shared", _SHARED, None), ("alpha", tc.numba, 1), ("beta", tc.numba, 0))
        return Instance(name, MATMUL, template, types.none, params + fused,
                        prelude=_operands.CHECKS["batched_maps"] + "\n" + prelude, threads=plan.threads)
    template = mm._template("numba_tiles::matmul_batched", Stages=plan.stages, SharedBytes=plan.shared_bytes,
                            T=ta.cxx, TC=tc.cxx, PD=result, TD=td.cxx, TS="unsigned char")
    params = _register_params(mm, 3, td, ())
    return Instance(name, MATMUL, template, types.none, params + fused, prelude=prelude, threads=plan.threads)


# Programs compiled ahead at once, at most: each NVRTC of cuBLASDx takes about 2.2 GB while it runs, and a
# module may define many descriptions.
_AHEAD = threading.BoundedSemaphore(2)


def _compile_ahead(mm):
    """Start making the C++ of ``mm.tile`` and ``mm.batched`` (into a C of the accumulator's dtype, with no
    epilogue) for this machine's GPU, in background threads, NVRTC and libmathdx in worker processes: a kernel
    that calls them finds their LTO-IR made, or waits for what is left (`_compile.build` says so). Nothing on a
    machine with no GPU, on the simulator, or with ``NUMBA_TILES_BACKGROUND=0``."""
    if _numba.simulator_enabled() or os.environ.get("NUMBA_TILES_BACKGROUND", "1") == "0":
        return

    def make(cc, ndim, instance_of):
        name = f"Matmul.{'tile' if ndim == 2 else 'batched'}"
        td = ext.named(name, "c", mm.accumulator)
        try:
            with _AHEAD:
                plan = mm._plan(name, cc, td.name, ndim)
                instance = instance_of(name, mm, plan, td, {"epilogue": None, "epilogue_args": None})
                _compile.build([instance], Target.for_lowering(cc, lineinfo=False), isolated=True,
                               announce=lambda *_: None)
        except Exception:  # (a kernel that calls it compiles it itself, and raises what is wrong there)
            pass

    def start():
        cc = _toolchain.current_device_cc()
        if cc is not None and "sm_%d%d" % cc in _toolchain.supported_archs():
            for ndim, instance_of in ((2, _tile_instance), (3, _batched_instance)):
                # (daemons: a process that ends meanwhile does not wait for them; NVRTC runs in a child)
                threading.Thread(target=make, args=(cc, ndim, instance_of), daemon=True,
                                 name="numba_tiles ahead").start()

    threading.Thread(target=start, daemon=True, name="numba_tiles ahead").start()
