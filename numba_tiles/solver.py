"""Small dense solves by cuSOLVERDx: the `Solver` description, whose ``execute`` a block runs on shared-memory
matrices."""

from . import _ahead, _compile, _libmathdx
from . import extending as ext
from ._solver import calls, layout, twins

__all__ = ["Solver"]

# function: (cusolverdxFunction without pivoting, with partial pivoting or None, its operands without pivoting)
FUNCTIONS = {
    "potrf": (2, None, ("a", "info")),
    "potrs": (3, None, ("a", "b")),
    "posv": (11, None, ("a", "b", "info")),
    "getrf": (0, 5, ("a", "info")),
    "getrs": (1, 6, ("a", "b")),
    "gesv": (12, 13, ("a", "b", "info")),
    "geqrf": (7, None, ("a", "tau")),
    "gels": (14, None, ("a", "tau", "b")),
}
CHOLESKY = ("potrf", "potrs", "posv")
SQUARE = ("potrf", "potrs", "posv", "getrs", "gesv")
DTYPES = {"float32": ("float32", False), "float64": ("float64", False)}
DTYPES.update(complex64=("float32", True), complex128=("float64", True))
FILL_MODES = {"upper": 0, "lower": 1}  # cusolverdxFillMode
ARRANGEMENTS = {"col_major": 0, "row_major": 1}  # cusolverdxArrangement
# The dynamic shared memory a block may have, by arch (bytes; the newest arch below or at a GPU's gives its own)
MAX_SHARED_BYTES = {70: 96 * 1024, 75: 64 * 1024, 80: 163 * 1024, 86: 99 * 1024, 89: 99 * 1024, 90: 227 * 1024}
MAX_SHARED_BYTES.update({100: 227 * 1024, 120: 99 * 1024})


@ext.description(
    constants=(
        "m",
        "n",
        "nrhs",
        "b_rows",
        "lda",
        "ldb",
        "batches_per_block",
        "threads",
        "a_size",
        "b_size",
        "ipiv_size",
        "tau_size",
        "info_size",
        "shared_memory_bytes",
        "a_start",
        "b_start",
        "ipiv_start",
        "tau_start",
    )
)
class Solver:
    """One of cuSOLVERDx's dense solvers for ``size`` (``n``: n x n, or ``(m, n)``) matrices of ``dtype`` (float32,
    float64, complex64, complex128), described once at module level and run by a whole block in kernels on its
    operands in shared memory. ``function``:

    - ``"potrf"`` (Cholesky factor A = L L^H of a symmetric or Hermitian positive definite A, in place),
      ``"potrs"`` (solve A X = B with potrf's factor), ``"posv"`` (both);
    - ``"getrf"`` (LU factor, ``pivot="partial"`` rows swapped, as LAPACK: P A = L U; ``pivot=None``: A = L U),
      ``"getrs"`` (solve with getrf's factors), ``"gesv"`` (both);
    - ``"geqrf"`` (QR factor of an m x n A: R and the Householder vectors in A, their scales in tau, as LAPACK);
      ``"gels"`` (least squares: the X of n rows minimizing ||A X - B|| for m >= n, by QR).

    ``nrhs``: the right-hand sides (B's columns); ``fill_mode``: the triangle of A that Cholesky reads and writes
    (``"lower"`` or ``"upper"``); ``arrangement``: how A and B lie in memory, ``"row_major"`` (C order, NumPy's: the
    default) or ``"col_major"``; ``leading_dimension``: ``(lda, ldb)``, the items from the start of one of A's rows
    (row-major; columns col-major) to the next, and B's, in shared memory: by default dense; ``"padded"`` adds an
    item to each even one, so that a warp's accesses along rows and along columns fall in different banks of shared
    memory (faster: see the guide); ``batches_per_block``: the problems one call solves (by default 32 // n, at
    least 1); ``block_dim``: the block's threads (by default a warp up to 64 rows, the fastest measured, then the
    next power of two, at most 256; a warp, and no more, for an odd ``nrhs`` past one and for gels of several
    problems a block, which cuSOLVERDx 0.5 computes wrongly with more threads); ``arch``: the GPU (by default this
    machine's, else sm_90), whose shared memory bounds the size. Creating one needs no GPU and compiles nothing;
    libmathdx generates its code (a few seconds, in the background; then the disk cache answers) for each arch a
    kernel calls it on.

    Its sizes are attributes, and constants inside kernels: ``m``, ``n``, ``nrhs``; ``b_rows``, B's rows (``n``;
    for gels ``max(m, n)``: B holds the m values of each right-hand side and gets X's n rows); ``lda`` and ``ldb``,
    the leading dimensions (``leading_dimension`` is the pair); ``batches_per_block`` and ``threads`` (``block_dim``
    is ``(threads, 1, 1)``); for each operand the items of all of a call's problems, back to back: ``a_size`` (m x n
    each, dense; m x lda row-major, n x lda col-major), ``b_size`` (b_rows x nrhs, its lines ldb
    apart too), ``ipiv_size`` and ``tau_size`` (min(m, n)), ``info_size`` (one int32 each); and
    ``shared_memory_bytes``, theirs together in shared memory (each rounded up to 16 bytes), A, B, ipiv and tau back
    to back from ``a_start``, ``b_start``, ``ipiv_start`` and ``tau_start`` (each in its own items: for a launch's
    dynamic shared memory, past a block's 48 KiB of static shared memory, see `launch`). ``operands`` names the
    operands ``execute`` takes, in order.

    Example (Cholesky solves: ``batches_per_block`` systems a block, every system's A and B back to back)::

        import numpy as np
        from numba import cuda, float64
        import numba_tiles as tiles

        S = tiles.Solver("posv", 16, "float64")

        @cuda.jit
        def solve(a, b, info):
            A = cuda.shared.array(S.a_size, float64)
            B = cuda.shared.array(S.b_size, float64)
            t, k = cuda.threadIdx.x, cuda.blockIdx.x
            for i in range(t, S.a_size, S.threads):
                A[i] = a[k * S.a_size + i]
            for i in range(t, S.b_size, S.threads):
                B[i] = b[k * S.b_size + i]
            cuda.syncthreads()
            S.execute(A, B, info=info[k * S.batches_per_block :])    # every thread of the block
            for i in range(t, S.b_size, S.threads):
                b[k * S.b_size + i] = B[i]

        cubin = tiles.compile(solve, "void(float64[::1], float64[::1], int32[::1])", arch="sm_90")
        if cuda.is_available():
            g = np.random.default_rng(0).standard_normal((100, 16, 16))
            a = g @ g.transpose(0, 2, 1) + 16 * np.eye(16)      # symmetric positive definite
            b = np.random.default_rng(1).standard_normal((100, 16))
            x, info = cuda.to_device(b.ravel()), cuda.device_array(100, np.int32)
            solve[100 // S.batches_per_block, S.block_dim](cuda.to_device(a.ravel()), x, info)
            assert np.allclose(x.copy_to_host().reshape(100, 16), np.linalg.solve(a, b[..., None])[..., 0])
            assert not info.copy_to_host().any()
    """

    def __init__(
        self,
        function,
        size,
        dtype,
        *,
        nrhs=1,
        fill_mode="lower",
        pivot="partial",
        arrangement="row_major",
        leading_dimension=None,
        batches_per_block=None,
        block_dim=None,
        arch=None,
    ):
        name = "Solver"
        self.function = ext.choice("function", dict.fromkeys(FUNCTIONS))(name, function)
        self.m, self.n = _size(name, size)
        if self.function in SQUARE and self.m != self.n:
            raise ext.error(
                name, f"{self.function} takes square matrices, got {self.m} x {self.n}", f"pass size={self.n}"
            )
        if self.function == "gels" and self.m < self.n:
            raise ext.error(
                name, f"gels solves m >= n (an overdetermined system), got {self.m} x {self.n}", "pass m >= n"
            )
        self.dtype = ext.named(name, "dtype", dtype).name
        if self.dtype not in DTYPES:
            raise ext.error(
                name, f"cuSOLVERDx solves {', '.join(DTYPES)}; got dtype={self.dtype!r}", "pass dtype='float32'"
            )
        self.precision, self.complex = DTYPES[self.dtype]
        self.nrhs = ext.positive_int("nrhs", 1)(name, nrhs)
        self.fill_mode = ext.choice("fill_mode", FILL_MODES)(name, fill_mode)
        self.pivot = ext.choice("pivot", {"partial": 1, None: 0})(name, pivot)
        self.arrangement = ext.choice("arrangement", ARRANGEMENTS)(name, arrangement)
        plain, pivoted, operands = FUNCTIONS[self.function]
        pivoting = self.pivot == "partial" and pivoted is not None
        self._function = pivoted if pivoting else plain
        self.operands = operands[:1] + ("ipiv",) + operands[1:] if pivoting else operands
        largest = max(self.m, self.n)
        self.batches_per_block = ext.positive_int("batches_per_block", 1, optional=True)(name, batches_per_block)
        self.batches_per_block = self.batches_per_block or max(1, 32 // largest)
        threads = ext.block_dim(name, block_dim) if block_dim is not None else None
        if threads is not None and threads[1:] != (1, 1):
            raise ext.error(name, f"a solver's block is 1-D, got block_dim={block_dim}", f"pass block_dim={threads[0]}")
        wrong = _wrong_shape(self.function, self.nrhs, self.batches_per_block)
        # (a warp up to 64 rows: faster than 64 threads at 32 and 64 rows on an H100, posv, gesv and gels alike)
        default = 32 if wrong or largest <= 64 else min(256, 1 << (largest - 1).bit_length())
        self.threads = threads[0] if threads else default
        if self.threads > 32 and wrong:
            raise ext.error(
                name, f"cuSOLVERDx 0.5 computes {wrong} wrongly with {self.threads} threads", "pass block_dim=32"
            )
        self.block_dim = (self.threads, 1, 1)
        row = self.arrangement == "row_major"
        self.b_rows = layout.b_rows(self.function, self.m, self.n)
        dense = layout.dense(self.function, self.m, self.n, self.nrhs, row)
        self.lda, self.ldb = _leading(name, leading_dimension, dense, self.arrangement)
        self.leading_dimension = (self.lda, self.ldb)
        self._padded = self.leading_dimension != dense
        self.sizes = layout.items(
            self.function, self.m, self.n, self.nrhs, self.batches_per_block, row, self.leading_dimension
        )
        self.a_size, self.b_size, self.ipiv_size, self.tau_size, self.info_size = self.sizes.values()
        starts, self.shared_memory_bytes = _shared_layout(self.sizes, self.operands, self.dtype)
        self.a_start, self.b_start, self.ipiv_start, self.tau_start = starts.values()
        self.arch = arch if arch is not None else _compile.default_arch()
        limit = _shared_limit(self.arch)
        if self.shared_memory_bytes > limit:
            fits = Solver.largest_size(self.function, self.dtype, nrhs=self.nrhs, arch=self.arch)
            raise ext.error(
                name,
                f"its operands take {self.shared_memory_bytes} bytes of shared memory, more than a block's "
                f"{limit} on {self.arch}",
                f"pass a size of at most {fits} (one problem a block)"
                + (
                    f", or batches_per_block={limit // (self.shared_memory_bytes // self.batches_per_block)}"
                    if self.batches_per_block > 1
                    else ""
                ),
            )
        _ahead.run(lambda cc: _libmathdx.start_solver(self._code(cc)))

    def _code(self, cc):
        """libmathdx's description of this solver for the compute capability ``cc``."""
        fill = FILL_MODES[self.fill_mode] if self.function in CHOLESKY else None
        order = ARRANGEMENTS[self.arrangement]
        size = (self.m, self.n, self.nrhs)
        return _libmathdx.Solve(
            self._function,
            self.function,
            size,
            self.precision,
            self.complex,
            fill,
            (order, order),
            self.batches_per_block,
            self.threads,
            cc[0] * 100 + cc[1] * 10,
            self.leading_dimension if self._padded else (),  # (the dense ones: cuSOLVERDx's default)
        )

    def _key(self):
        return (self._code((9, 0)), self.arch)

    def __repr__(self):
        size = self.n if self.m == self.n else (self.m, self.n)
        extra = f", fill_mode={self.fill_mode!r}" if self.function in CHOLESKY else ""
        extra += f", pivot={self.pivot!r}" if self.function in ("getrf", "getrs", "gesv") else ""
        extra += f", leading_dimension={self.leading_dimension}" if self._padded else ""
        return (
            f"Solver({self.function!r}, {size}, {self.dtype!r}, nrhs={self.nrhs}{extra}, "
            f"arrangement={self.arrangement!r}, batches_per_block={self.batches_per_block}, "
            f"block_dim={self.threads}, arch={self.arch!r})"
        )

    def launch(self, kernel, *args, problems, grid=None, stream=0):
        """Launch ``kernel`` with ``args`` for ``problems`` problems, ``solver.batches_per_block`` a block: blocks of
        ``solver.block_dim``; where the operands are over a block's 48 KiB of static shared memory, the launch's
        dynamic shared memory for them (``shared_memory_bytes``; the kernel let to take it), in which the kernel
        finds each at its start: ``cuda.shared.array(0, dtype)[solver.b_start : solver.b_start + solver.b_size]``;
        and ``grid``:

        - by default, one block a group of ``batches_per_block`` problems: the kernel's group is ``cuda.blockIdx.x``;
        - ``"resident"``: as many blocks as the GPU runs at once (the driver's occupancy query), at most one a group:
          for a kernel's own loop over the groups, ``cuda.gridDim.x`` apart;
        - or a grid of your own.

        Example, continuing `Solver`'s (``info`` has a value for each problem)::

            if cuda.is_available():
                S.launch(solve, cuda.to_device(a.ravel()), x, info, problems=100)
        """
        from ._occupancy import launch_groups

        groups = -(-problems // self.batches_per_block)
        launch_groups(kernel, args, self.block_dim, self.shared_memory_bytes, groups, grid, stream)

    @staticmethod
    def largest_size(function, dtype, *, nrhs=1, pivot="partial", arch="sm_90"):
        """The largest n whose n x n problem (gels: n x n too) fits a block's shared memory on ``arch``, one problem
        a block (no GPU, no compile).

        Example::

            import numba_tiles as tiles

            assert tiles.Solver.largest_size("posv", "float64", arch="sm_90") == 169
        """
        operands = FUNCTIONS[function][2]
        if pivot == "partial" and FUNCTIONS[function][1] is not None:
            operands = operands + ("ipiv",)
        limit, n = _shared_limit(arch), 1
        while _shared_layout(layout.items(function, n + 1, n + 1, nrhs, 1), operands, dtype)[1] <= limit:
            n += 1
        return n

    # ---- in kernels ----

    @ext.method(rule=calls.execute_rule, simulate=twins.execute)
    def execute(self, a, b=None, ipiv=None, tau=None, info=None):
        """The solver's function on the block's ``batches_per_block`` problems, in place, by every thread of a block
        of ``solver.block_dim``: it synchronizes the block before it returns. Its operands are those of
        ``solver.operands``, the matrices given first and the others by name, each an array of its items (any
        shape, one dense C-ordered block: 1-D ``cuda.shared.array(solver.a_size, dtype)`` is the simplest):

        - ``a``: A, in shared memory, in the solver's arrangement, the problems back to back; it gets the factors
          (potrf, getrf, geqrf and those that solve with them);
        - ``b``: B (n x nrhs, gels max(m, n) x nrhs), in shared memory; it gets X (gels: X in its first n rows);
        - ``ipiv``: int32, the pivots of partial pivoting (LAPACK's: row i swapped with row ``ipiv[i] - 1``);
        - ``tau``: the Householder scales of QR (geqrf, gels), in shared memory;
        - ``info``: int32, one a problem, in shared or global memory (one thread writes it): 0, or for potrf the
          order of the first leading minor that is not positive definite, for getrf the 1-based row of the first
          zero pivot (LAPACK's meaning), whose solution is then not finite.

        Example, continuing `Solver`'s (LU with partial pivoting: the factors and pivots for getrs later)::

            from numba import float32

            LU = tiles.Solver("getrf", 8, "float32", batches_per_block=1)

            @cuda.jit
            def factor(a, pivots, info):
                A = cuda.shared.array(LU.a_size, float32)
                for i in range(cuda.threadIdx.x, LU.a_size, LU.threads):
                    A[i] = a[cuda.blockIdx.x, i]
                cuda.syncthreads()
                LU.execute(A, ipiv=pivots[cuda.blockIdx.x], info=info[cuda.blockIdx.x:])
                for i in range(cuda.threadIdx.x, LU.a_size, LU.threads):
                    a[cuda.blockIdx.x, i] = A[i]

            cubin = tiles.compile(factor, "void(float32[:, ::1], int32[:, ::1], int32[::1])", arch="sm_90")
        """


def _wrong_shape(function, nrhs, batches):
    """What libmathdx 0.4.1's cuSOLVERDx 0.5 gets wrong with more than a warp a block (measured on an H100: its
    solutions were off by the solution's size), or None. Odd right-hand sides past one: 3, 5 and 7 with 64 threads,
    5 with 96 and 128, in posv, potrs, gesv and getrs alike (1, 2, 4 and 6 were right, and every count with 32);
    gels with 2 problems a block of 64 threads. A warp a block computes them right."""
    if nrhs > 1 and nrhs % 2 and function in ("posv", "potrs", "gesv", "getrs"):
        return f"{nrhs} right-hand sides (an odd count past one)"
    if batches > 1 and function == "gels":
        return f"gels with {batches} problems a block"
    return None


def _leading(name, given, dense, arrangement):
    """(lda, ldb): ``given``, checked against the dense ones; the dense ones; or for "padded" each even one padded
    by an item, so that a warp's accesses along a row and along a column fall in different banks."""
    if given is None:
        return dense
    if given == "padded":
        return tuple(d + 1 if d % 2 == 0 and d > 1 else d for d in dense)
    if not (
        isinstance(given, tuple)
        and len(given) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in given)
    ):
        raise ext.error(
            name,
            f"leading_dimension is a pair (lda, ldb) or 'padded', got {given!r}",
            f"pass leading_dimension={dense}",
        )
    line = "row" if arrangement == "row_major" else "column"
    for what, value, least in zip(("lda", "ldb"), given, dense):
        if value < least:
            raise ext.error(
                name,
                f"{what}={value} is shorter than a {line} of its matrix ({least} items)",
                f"pass leading_dimension={tuple(max(v, d) for v, d in zip(given, dense))}",
            )
    return given


def _shared_layout(sizes, operands, dtype):
    """(each shared operand's start, in its own items, and the bytes of all): A, B, ipiv (staged beside them) and
    tau back to back in one buffer, each at a multiple of 16 bytes."""
    itemsize = ext.named("Solver", "dtype", dtype).numpy.itemsize
    starts, end = {}, 0
    for p in ("a", "b", "ipiv", "tau"):
        size = 4 if p == "ipiv" else itemsize
        starts[p] = end // size
        if p in operands:
            end += -(-sizes[p] * size // 16) * 16
    return starts, end


def _shared_limit(arch):
    cc = _compile.parse_arch(arch)
    return MAX_SHARED_BYTES[max(a for a in MAX_SHARED_BYTES if a <= cc[0] * 10 + cc[1])]


def _size(name, size):
    values = (size, size) if isinstance(size, int) and not isinstance(size, bool) else size
    if not (
        isinstance(values, tuple)
        and len(values) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values)
    ):
        raise ext.error(name, f"size must be a positive int n or a pair (m, n), got {size!r}", "pass size=32")
    return values
