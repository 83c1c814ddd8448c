"""Matrix products of tiles on tensor cores (CuTe's MMA atoms, cuBLASDx, Hopper's wgmma): `matmul` on shared tiles, and
the `Matmul` description.

`matmul` is the one-call form: ``c = alpha * a @ b + beta * c`` for tiles in shared memory (see
`numba_tiles.tile` for moving them). `Matmul` describes one product at module level; in kernels its
methods are the register form's steps (``load_a``, ``load_b``, ``multiply``, ``store``, ``wait``) and
three whole calls, ``tile`` (one tile of C), ``gemm`` (all of C) and ``batched`` (a batch of products), whose
implementation it chooses by the GPU, the dtypes and the shape (`Matmul.operands`).
"""

import math

import numpy as np
from numba import cuda

from . import _backends, _callback, _matmul, _matrices, _programs, _tensor_maps, simulator
from . import extending as ext
from ._backends import numba_cuda, simulated
from ._matmul import calls, twins
from ._matmul.ahead import compile_ahead
from ._matmul.base import MATMUL, STAGES
from ._matmul.shared_tiles import matmul
from ._operands import Operands, handle_type
from .tile import wait_rule

__all__ = ["Matmul", "matmul"]
_BLOCK = {"block_dim": lambda mm: mm.block_dim}  # (the register form's steps run on the description's block)


def _load(operand):
    """The declaration of `Matmul.load_a` (``operand`` 0) or `Matmul.load_b` (1)."""
    return ext.method(
        consts={"asynchronous": ext.flag("asynchronous")},
        fixed=_BLOCK,
        rule=lambda n, a: calls.load_rule(n, a, operand),
        simulate=lambda i, a: twins.matmul_load(i, {**a, "operand": operand}),
    )


# ---- The description ------------------------------------------------------------------------------


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
    (2 to 16; by default 2 to 4, by K's bytes). Creating one needs no GPU: it checks the description, and
    reading its sizes never compiles anything; on a machine with a GPU it also starts compiling ``tile`` and
    ``batched`` for that GPU in the background, so that a kernel calling them finds them compiled
    (``NUMBA_TILES_BACKGROUND=0`` turns that off). Its attributes are those arguments, parsed (``shape``,
    ``dtype``, ``accumulator``, ``arrangement``, ``precision``, ``block_dim`` as ``(x, y, z)``, ``stages``),
    A's and B's tile shapes ``a_shape`` (M x K) and ``b_shape`` (K x N), and the sizes a kernel allocates,
    which are also constants inside kernels:

    - ``a_items``, ``b_items``: the items of the shared A and B tiles;
    - ``shared_memory_bytes``: the bytes of both together;
    - ``accumulator_items``: the items of each thread's accumulator;
    - ``c_items``: the items of ``store``'s optional shared stage, in the accumulator's dtype;
    - ``threads``: ``block_dim``'s threads.

    In a kernel, three whole calls, each given ``ops = mm.operands(a, b, c)`` (made on the host), whose
    code `Matmul.operands` chooses for the GPU, and launched by `Matmul.launch`:

    - ``mm.tile(ops, i, j, alpha=1.0, beta=0.0)``: C's tile (i, j), ``c[i*M:(i+1)*M, j*N:(j+1)*N] =
      alpha * a @ b + beta * c`` there, the whole K loop inside, by the whole block; items past C's edges
      are left out, and the call ends with a barrier, so a block may compute any number of tiles;
    - ``mm.gemm(ops, alpha=1.0, beta=0.0)``: all of C, the launch's blocks sharing its tiles (launched with
      ``grid="resident"``, a persistent loop: on Hopper one pipeline across the block's tiles);
    - ``mm.batched(ops, alpha=1.0, beta=0.0)``: ``c[i] = alpha * a[i] @ b[i] + beta * c[i]`` for the
      whole batch (each product at most M x N, any K), a persistent loop over the launch's blocks.

    Each takes ``epilogue=f, epilogue_args=(x, ...)``: each item of C is stored as ``f(value, row, col,
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
        cubin = tiles.compile(gemm, sig, arch="sm_80")   # no GPU needed (or sm_90a: Hopper's own code)
        if cuda.is_available():
            a = cuda.to_device(np.random.rand(256, 128).astype(np.float16))   # m x k
            b = cuda.to_device(np.random.rand(128, 192).astype(np.float16))   # k x n
            c = cuda.device_array((256, 192), np.float32)                     # m x n
            MM.launch(gemm, MM.operands(a, b, c), 1.0, 0.0)
            expected = a.copy_to_host().astype(np.float32) @ b.copy_to_host().astype(np.float32)
            assert np.allclose(c.copy_to_host(), expected, rtol=1e-2, atol=1e-2)
    """

    def __init__(
        self,
        shape,
        dtype,
        *,
        accumulator=None,
        arrangement=("row_major", "row_major"),
        precision=None,
        block_dim=None,
        stages=None,
    ):
        name = "Matmul"
        self._describe(name, shape, dtype, accumulator, arrangement, precision)
        ta, tc = self._types
        m, n, k = self.shape
        self.block_dim = ext.block_dim(name, block_dim if block_dim is not None else (128 if m * n <= 4096 else 256))
        _matrices.whole_warps(name, self.block_dim)
        self.threads = threads = math.prod(self.block_dim)
        if m * n % threads:
            raise ext.error(
                name,
                f"the {m} x {n} accumulator does not divide among the block's {threads} threads",
                f"use a block of a divisor of M*N = {m * n} threads (a multiple of 32), or a larger tile",
            )
        self.stages = stages if stages is None else STAGES(name, stages)
        self.a_shape, self.b_shape = (m, k), (k, n)
        self.a_items, self.b_items = m * k, k * n
        self.accumulator_items = m * n // threads
        self.c_items = m * (n + 32 // tc.numpy.itemsize)  # rows padded by 32 bytes: stage_pitch in matmul.cuh
        self.shared_memory_bytes = (self.a_items + self.b_items) * ta.numpy.itemsize
        compile_ahead(self)

    def _describe(self, name, shape, dtype, accumulator, arrangement, precision):
        """Check and keep what the product is, the block aside."""
        self.shape = _matrices.shape_mnk(name, tuple(shape) if isinstance(shape, list) else shape)
        self.precision = ext.choice("precision", dict.fromkeys([None, *_matrices.NAMED]))(name, precision)
        self.arrangement = _matrices.arrangement(name, arrangement)
        ta = ext.named(name, "dtype", dtype)
        half = ta.name == "float16" or self.precision == "bf16"
        tc = ext.named(name, "accumulator", accumulator or ("float32" if half else ta.name))
        self._compute = _matrices.compute_type(name, ta, tc, self.precision)
        if ta.kind == "c":
            raise ext.error(
                name,
                f"the register form takes real types, got {ta.name}",
                "use tiles.matmul (shared-memory tiles) for complex64 and complex128 products",
            )
        self._types = (ta, tc)
        self.dtype, self.accumulator = ta.name, tc.name

    @classmethod
    def suggested_block_dim(
        cls, shape, dtype, *, accumulator=None, arrangement=("row_major", "row_major"), precision=None, arch="sm_90"
    ):
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
        packed = _programs.constant(
            f"numba_tiles::suggested_block_dim<{m}, {n}, {k}, {probe._compute}, "
            f"{probe._compute}, {probe._types[1].cxx}, {row_a}, {row_b}>()",
            MATMUL,
            arch,
        )
        return packed & 0xFFFF, packed >> 16 & 0xFFFF, packed >> 32 & 0xFFFF

    # ---- the host side of tile and batched ----

    def _implementations(self, cc, c_dtype, ndim):
        """The implementations that compute ``tile`` (``ndim`` 2) or ``batched`` (3) into a C of ``c_dtype`` on a GPU
        of compute capability ``cc`` (None: the simulator, where they compute alike), the fastest first."""
        return _matmul.computing(self, cc, c_dtype, ndim)

    def _plan(self, name, cc, c_dtype, ndim, implementation=None):
        """The `_matmul.Plan` of ``tile`` (``ndim`` 2) or ``batched`` (3) for a C of ``c_dtype`` on a GPU of compute
        capability ``cc`` (None: the simulator's): ``implementation``'s, or the fastest."""
        possible = self._implementations(cc, c_dtype, ndim)
        chosen = implementation or possible[0]
        if chosen not in possible:
            where = "the simulator" if cc is None else f"sm_{cc[0]}{cc[1]}"
            raise ext.error(
                name,
                f"implementation={chosen!r} does not compute this {'batch' if ndim == 3 else 'tile'} "
                f"on {where} (C of {c_dtype}); {', '.join(map(repr, possible))} do",
                "leave implementation out (the fastest is chosen), or pass one of those",
            )
        code = _matmul.IMPLEMENTATIONS[chosen]
        return code.plan(name, self, code.stages(self), c_dtype, ndim)

    def operands(self, a, b, c, stream=0, implementation=None):
        """A, B and C described to ``mm.tile`` and ``mm.gemm`` (2-D arrays: A is m x k, B k x n, C m x n) or
        ``mm.batched`` (3-D: count x m x k, count x k x n, count x m x n, each product at most M x N), as an
        `Operands`: the
        first argument of the kernel, of a Numba type of this description's own. Made on the host for the
        current GPU, from device arrays (any strides; numpy arrays on the simulator); C holds the
        accumulator's dtype or A's (rounded to it). Make it again for other arrays.

        It chooses the code the kernel's call runs (``ops.implementation``), by the GPU, the dtypes and the
        shape, as fast as this library knows:

        {{implementations}}

        All but the last load A and B through tensor maps, which take arrays whose lines are contiguous, with
        their other strides multiples of 16 bytes and their data 16-byte aligned; for other arrays the next in
        that list is chosen. ``implementation=`` takes one of those where it computes the product (a TilesError
        names those that do): the kernel compiles for it, whatever the GPU it runs on.

        Example, continuing `Matmul`'s::

            if cuda.is_available():
                ops = MM.operands(a, b, c)          # device arrays
                print(ops.implementation)           # the code this GPU runs (Hopper's or the register form's)
                MM.launch(gemm, ops, 1.0, 0.0)      # a kernel whose first argument is ops
        """
        name = "Matmul.operands"
        ndim = getattr(a, "ndim", None)
        if ndim not in (2, 3):
            raise ext.error(
                name,
                f"a must be a 2-D or a 3-D array, got {type(a).__name__} {getattr(a, 'shape', '')}",
                "pass 2-D arrays (mm.tile) or 3-D batches of them (mm.batched), on the GPU",
            )
        for param, array, dtypes in (
            ("a", a, (self.dtype,)),
            ("b", b, (self.dtype,)),
            ("c", c, tuple(dict.fromkeys((self.accumulator, self.dtype)))),
        ):
            if getattr(array, "ndim", None) != ndim or str(array.dtype) not in dtypes:
                raise ext.error(
                    name,
                    f"{param} must be a {ndim}-D array of {' or '.join(dtypes)} like a, got "
                    f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}",
                    f"pass {param} of {dtypes[0]}, {ndim}-D like a",
                )
        lead = a.shape[:1] if ndim == 3 else ()
        (m, k), (bk, n) = a.shape[-2:], b.shape[-2:]
        if (k, *lead) != (bk, *b.shape[: ndim - 2]) or tuple(c.shape) != (*lead, m, n):
            raise ext.error(
                name,
                f"A is {tuple(a.shape)}, B {tuple(b.shape)} and C {tuple(c.shape)}; they must be "
                + ("count x m x k, count x k x n and count x m x n" if ndim == 3 else "m x k, k x n and m x n"),
                "pass A, B and C of one product, A's columns B's rows",
            )
        if ndim == 3 and (m > self.shape[0] or n > self.shape[1]):
            raise ext.error(
                name,
                f"C is {tuple(c.shape)}: each product of a batch is one {self.shape[0]} x "
                f"{self.shape[1]} tile of this Matmul",
                "make the Matmul with a larger shape, or compute each product's tiles with mm.tile",
            )
        if simulated.simulator_enabled():  # (the twins read A, B and C)
            plan = self._plan(name, None, str(c.dtype), ndim, implementation)
            return Operands(self, plan, np.zeros(_tensor_maps.PIPE.itemsize, np.uint8), a, b, c)
        for param, array in (("a", a), ("b", b), ("c", c)):
            if not hasattr(array, "__cuda_array_interface__"):
                raise ext.error(name, f"{param} is a host array", f"pass device arrays: cuda.to_device({param})")
        # numba-cuda's own device arrays, once: a launch then passes them as they are (another library's arrays,
        # PyTorch's tensors say, are converted at every launch, which took longer than a 64^3 batch's kernel;
        # numba-cuda-mlir's are typed as its own types, which numba-cuda's kernels here do not take).
        a, b, c = (x if numba_cuda.is_device_array(x) else cuda.as_cuda_array(x) for x in (a, b, c))
        cc = tuple(cuda.get_current_device().compute_capability)
        if implementation is None:  # (the fastest whose copies take these arrays' strides)
            implementation = next(
                i
                for i in self._implementations(cc, str(c.dtype), ndim)
                if _matmul.IMPLEMENTATIONS[i].takes(self, a, b, c)
            )
        plan = self._plan(name, cc, str(c.dtype), ndim, implementation)
        pipe = _matmul.IMPLEMENTATIONS[plan.implementation].prepare(name, self, plan, a, b, c, stream)
        return Operands(self, plan, pipe, a, b, c)

    def operands_type(self, c="float32", batched=False, implementation=None):
        """The Numba type of this description's `Operands` with a C of ``c``'s dtype (``batched``: 3-D arrays; an
        ``implementation`` as `operands` takes it, else the fastest for the arch the kernel compiles for): what a
        ``tiles.compile`` signature names for the kernel's ``ops``.

        Example, continuing `Matmul`'s::

            sig = (MM.operands_type("float32"), float32, float32)   # gemm's ops, alpha and beta
            cubin = tiles.compile(gemm, sig, arch="sm_80")
            batch = MM.operands_type("float32", batched=True)         # the ops of 3-D arrays, for mm.batched
        """
        return handle_type(
            self, self.dtype, ext.named("Matmul.operands_type", "c", c).name, 3 if batched else 2, implementation
        )

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
            raise ext.error(
                name,
                f"it needs one Operands of {self!r} among the kernel's arguments, got "
                f"{[repr(a) for a in found] or 'none'}",
                "pass ops = mm.operands(a, b, c) of this Matmul to the kernel",
            )
        ops = found[0]
        plan, shared = ops.plan, ops.plan.shared_bytes
        from ._shared_memory import allow_dynamic_shared_memory

        backend = _backends.of_kernel(kernel)
        allow_dynamic_shared_memory(kernel, shared, *args)
        if grid is None and plan.grid == "tiles":
            m, n, _ = self.shape
            rows, cols = ops.c.shape
            grid = (max(-(-cols // n), 1), max(-(-rows // m), 1))
        elif grid is None and plan.grid == "products":
            grid = max(ops.c.shape[0], 1)
        elif grid is None or grid == "resident":
            resident = (
                2 * 132
                if simulated.simulator_enabled()
                else backend.resident_blocks(kernel, args, plan.threads, shared)
            )
            work = ops.c.shape[0] if ops.c.ndim == 3 else math.prod(-(-s // t) for s, t in zip(ops.c.shape, self.shape))
            grid = max(min(resident, work), 1)
            if plan.grid == "even":  # (4096 products on 132 blocks: 128 blocks of 32 each leave no GPU idle)
                grid = -(-work // -(-work // grid)) if work else 1
        return grid, plan.block, shared

    def launch(self, kernel, *args, grid=None, stream=0):
        """Launch ``kernel`` with ``args``, one of which is ``ops = mm.operands(a, b, c)``: with the block and the
        dynamic shared memory its ``mm.tile`` or ``mm.batched`` needs, the kernel let to take it, and ``grid``:

        - by default, for 2-D arrays, one block a tile of C, ``(tile columns, tile rows)``: the kernel calls
          ``mm.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x, ...)`` (or ``mm.gemm``, one tile a block); for
          ``mm.batched``, the grid its implementation runs best with;
        - ``"resident"``: as many blocks as the GPU runs at once (the driver's occupancy query), at most one
          a tile or product: for ``mm.gemm``, and for a kernel's own persistent loop over C's tiles
          (``cuda.gridDim.x`` apart);
        - or a grid of your own.

        A numba-cuda-mlir kernel launches so too (its launcher passes ``ops`` as a tuple of its arrays, which
        ``launch`` makes).

        Example, continuing `Matmul`'s::

            if cuda.is_available():
                MM.launch(gemm, MM.operands(a, b, c), 1.0, 0.0)   # c = a @ b
        """
        grid, block, shared = self.launch_config(kernel, *args, grid=grid)
        kernel[grid, block, stream, shared](*_backends.of_kernel(kernel).launch_arguments(args))

    def _key(self):
        return (self.shape, self.dtype, self.accumulator, self.block_dim, self.arrangement, self.precision, self.stages)

    def __repr__(self):
        return (
            f"Matmul(shape={self.shape}, dtype={self.dtype}, accumulator={self.accumulator}, "
            f"block_dim={self.block_dim}, arrangement={self.arrangement}, precision={self.precision}"
            + (f", stages={self.stages})" if self.stages else ")")
        )

    # ---- in kernels ----

    @_load(0)
    def load_a(self, src, tile, row, col, fill=0, *, asynchronous=False):
        """Copy A's tile of the 2-D array ``src`` at ``src[row, col]`` (M x K items, ``fill`` past ``src``'s
        edges) into ``tile``, a shared array of ``mm.a_items`` items of ``dtype`` (``alignment=16``), in the
        layout `multiply` reads (swizzled: numba_tiles' own where the MMA atoms multiply, else cuBLASDx's), by
        the whole block: 16-byte asynchronous copies inside the matrix. It ends with a
        barrier, unless ``asynchronous=True``: then it returns at once and ``mm.wait`` completes it.

        Example, continuing `Matmul`'s::

            from numba.cuda.types import float16

            @cuda.jit
            def first_a(a, row):
                sa = cuda.shared.array(MM.a_items, float16, alignment=16)
                MM.load_a(a, sa, row, 0)     # A's tile at a[row, 0], zeros past a's edges

            cubin = tiles.compile(first_a, "void(float16[:, :], int64)", arch="sm_80")
        """

    @_load(1)
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

    @ext.method(fixed=_BLOCK, rule=lambda n, a: wait_rule(n, a, a["mm"].threads), simulate=simulator.tile_wait)
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

    @ext.method(fixed=_BLOCK, rule=calls.multiply_rule, simulate=twins.matmul_multiply)
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

    @ext.method(consts=_callback.CONSTS, fixed=_BLOCK, rule=calls.store_rule, simulate=twins.matmul_store)
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

    @ext.method(consts=_callback.CONSTS, rule=calls.tile_rule, simulate=twins.matmul_tile)
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

    @ext.method(consts=_callback.CONSTS, rule=calls.gemm_rule, simulate=twins.matmul_gemm)
    def gemm(self, ops, alpha=1.0, beta=0.0, *, epilogue=None, epilogue_args=None):
        """All of ``c = alpha * a @ b + beta * c`` for ``ops = mm.operands(a, b, c)`` of 2-D arrays, by the launch's
        blocks together: each takes C's tiles in turn, from its index in the grid on, the grid's blocks apart
        (any grid covers C), in groups of rows whose tiles share B's columns in L2. Launch it with
        ``mm.launch(kernel, ops, ..., grid="resident")``: as many blocks as the GPU runs at once, each block's loop
        going on from tile to tile. By ``"wgmma"`` (Hopper) that loop is one pipeline: the loading warp runs ahead
        into the next tiles' K-tiles while the others multiply, and each tile's store and epilogue overlap the
        next tile's products; the other implementations compute one tile after another. The epilogue is
        `tile`'s, ``f(value, row, col, x, ...)``; see `Matmul` and `Matmul.operands`.

        Example, continuing `Matmul`'s::

            @cuda.jit
            def gemm_all(ops, alpha, beta):
                MM.gemm(ops, alpha, beta)             # all of c = alpha * a @ b + beta * c

            sig = (MM.operands_type("float32"), float32, float32)
            cubin = tiles.compile(gemm_all, sig, arch="sm_90a")   # Hopper's pipeline (sm_80: the register form's)
            if cuda.is_available():
                MM.launch(gemm_all, MM.operands(a, b, c), 1.0, 0.0, grid="resident")
                assert np.allclose(c.copy_to_host(), expected, rtol=1e-2, atol=1e-2)
        """

    @ext.method(consts=_callback.CONSTS, rule=calls.batched_rule, simulate=twins.matmul_batched)
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


# (the registry's list of implementations, each as it describes itself: see _matmul)
Matmul.operands.__doc__ = Matmul.operands.__doc__.replace(
    "{{implementations}}", _matmul.described().replace("\n", "\n" + " " * 8)
)
