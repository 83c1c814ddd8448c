"""Block FFTs by cuFFTDx: the `FFT` description, whose methods run in kernels on each thread's items."""

from numba.cuda import types

from . import _ahead, _compile
from . import extending as ext
from ._fft import calls, database, twins

__all__ = ["FFT"]

KINDS = ("c2c", "r2c", "c2r")
_COMPLEX = {"float32": "complex64", "float64": "complex128"}
_REAL = {c: r for r, c in _COMPLEX.items()}
_positive = ext.positive_int("ffts_per_block", 1, optional=True)


@ext.description(
    constants=(
        "size",
        "elements_per_thread",
        "ffts_per_block",
        "stride",
        "threads",
        "storage_size",
        "shared_memory_bytes",
    )
)
class FFT:
    """A block FFT of ``size`` points, described once at module level and run by cuFFTDx in kernels.

    ``dtype``: complex64 or complex128 for ``kind="c2c"``; float32 or float64, the real side's, for ``"r2c"``
    (real to complex, forward) and ``"c2r"`` (complex to real, inverse). ``direction``: ``"forward"`` or
    ``"inverse"`` (by default the kind's: inverse for c2r, else forward). ``elements_per_thread`` and
    ``ffts_per_block``: cuFFTDx's suggestions for the arch when left out. ``arch``: the GPU it is described for
    (``"sm_90"``; by default this machine's GPU, else sm_90), whose records in cuFFTDx's database give the sizes
    below. Creating one needs no GPU and compiles nothing: it checks the size against cuFFTDx's database (an
    unsupported size is an error naming the nearest supported ones; sizes cuFFTDx computes only with Bluestein's
    algorithm, which needs a workspace made on the host, are refused too). Its attributes are those arguments
    (``size``, ``dtype``, ``kind``, ``direction``, ``arch``), ``precision`` (the real dtype), ``value_type``
    (the complex dtype of the items), ``real_mode`` (None for c2c; ``"folded"`` for an r2c or c2r of a
    power-of-two size, which cuFFTDx runs as a c2c FFT of half the size on the real values taken in pairs, half
    the work; ``"normal"`` for other sizes), and the sizes a kernel allocates and launches with, which are also
    constants inside kernels (cuFFTDx's traits of the same names):

    - ``elements_per_thread``: the elements of the FFT each thread holds (folded: real ones, two to an item);
    - ``ffts_per_block``: the FFTs a block computes at once, one for each ``threadIdx.y``;
    - ``block_dim``: the block, ``(stride, ffts_per_block, 1)``, and ``threads``, its threads;
    - ``stride``: ``size // elements_per_thread``, the threads of one FFT;
    - ``storage_size``: the items of ``value_type`` each thread's register array holds;
    - ``shared_memory_bytes``: the shared memory ``execute`` works in, for the whole block (more than 48 KiB
      must be dynamic shared memory: see `numba_tiles.allow_dynamic_shared_memory`).

    In a kernel launched with blocks of ``block_dim``, every thread calls ``execute`` (the transform of the FFT of
    its ``threadIdx.y``, in place on the threads' items); ``load`` and ``store`` move one thread's items between a
    1-D array and the register layout, and ``index(i)`` says which element item ``i`` holds, so that a pointwise
    step between transforms (a filter, a window) needs no knowledge of the layout. A forward and an inverse FFT of
    one size, precision and ``elements_per_thread`` share that layout: the inverse runs on the forward's output in
    place. Neither direction is normalized (an inverse of a forward is ``size`` times the input), as in cuFFT.

    Example::

        import numpy as np
        from numba import cuda, complex64
        import numba_tiles as tiles

        FFT = tiles.FFT(128, "complex64", arch="sm_80")

        @cuda.jit
        def spectra(x, y):                      # y[r] = numpy.fft.fft(x[r]) for every row r
            items = cuda.local.array(FFT.storage_size, complex64)
            row = cuda.blockIdx.x * FFT.ffts_per_block + cuda.threadIdx.y
            if row < x.shape[0]:
                FFT.load(x[row], items)
            FFT.execute(items)          # every thread of the block, past the last row too
            if row < x.shape[0]:
                FFT.store(items, y[row])

        cubin = tiles.compile(spectra, "void(complex64[:, ::1], complex64[:, ::1])", arch="sm_80")
        if cuda.is_available():
            x = np.random.rand(1000, 128).astype(np.complex64)
            y = cuda.device_array_like(x)
            spectra[-(-1000 // FFT.ffts_per_block), FFT.block_dim](cuda.to_device(x), y)
            assert np.allclose(y.copy_to_host(), np.fft.fft(x), rtol=1e-3, atol=1e-3)
    """

    def __init__(
        self, size, dtype, *, direction=None, kind="c2c", ffts_per_block=None, elements_per_thread=None, arch=None
    ):
        name = "FFT"
        self.kind = ext.choice("kind", dict.fromkeys(KINDS))(name, kind)
        self.size = ext.positive_int("size", 1024)(name, size)
        found = ext.named(name, "dtype", dtype)
        if self.kind == "c2c" and found.name not in _REAL or self.kind != "c2c" and found.name not in _COMPLEX:
            wanted = _REAL if self.kind == "c2c" else _COMPLEX
            same = _COMPLEX.get(found.name) or _REAL.get(found.name)
            raise ext.error(
                name,
                f"a {self.kind} FFT takes dtype {' or '.join(wanted)}, got {found.name}"
                + (
                    " (half precision is not supported: cuFFTDx packs two FFTs in each value)"
                    if "16" in found.name
                    else ""
                ),
                f"pass dtype={same!r}" if same else f"pass dtype={next(iter(wanted))!r}",
            )
        self.dtype = found.name
        self.precision = _REAL.get(found.name, found.name)
        self.value_type = _COMPLEX[self.precision]
        implied = "inverse" if self.kind == "c2r" else "forward"
        self.direction = (
            ext.choice("direction", dict.fromkeys((None, "forward", "inverse")))(name, direction) or implied
        )
        if self.kind != "c2c" and self.direction != implied:
            raise ext.error(
                name,
                f"a {self.kind} FFT is {implied}, got direction={direction!r}",
                f"leave direction out, or pass {'c2r' if self.kind == 'r2c' else 'r2c'} for the other direction",
            )
        self.arch = arch if arch is not None else _compile.default_arch()
        sizes = database.sizes(
            name,
            self.size,
            self.precision,
            self.arch,
            ext.positive_int("elements_per_thread", 8, optional=True)(name, elements_per_thread),
            _positive(name, ffts_per_block),
            self.kind,
        )
        self._sizes = sizes
        self.real_mode = None if self.kind == "c2c" else "folded" if sizes.folded else "normal"
        self.elements_per_thread, self.ffts_per_block = sizes.elements_per_thread, sizes.ffts_per_block
        self.block_dim, self.stride = sizes.block_dim, sizes.block_dim[0]
        self.threads = self.stride * self.ffts_per_block
        self.storage_size, self.shared_memory_bytes = sizes.storage_size, sizes.shared_memory_bytes
        if self.threads > 1024:
            raise ext.error(
                name,
                f"{self.ffts_per_block} FFTs of {self.stride} threads each make a block of {self.threads} threads, "
                "more than CUDA's 1024",
                f"pass ffts_per_block={1024 // self.stride} or fewer, or more elements_per_thread",
            )
        _ahead.start(self._execute_ahead)

    def _execute_ahead(self, cc):
        """The instance of ``execute`` on a thread's local array, made ahead (`_ahead`) for the GPU it is described
        for: a kernel that calls it finds cuFFTDx's program compiled, or being compiled."""
        if "sm_%d%d" % cc != self.arch:
            raise ValueError(f"described for {self.arch}")  # (nothing to make ahead for another GPU)
        items = types.Array(ext.named("FFT.execute", "dtype", self.value_type).numba, 1, "C")
        shared = types.uint8[::1] if self.shared_memory_bytes > ext.STATIC_SHARED_BYTES else None
        return calls.execute_instance("FFT.execute", {"mm": self, "items": items, "shared": shared})

    def _key(self):
        return (self.size, self.dtype, self.kind, self.direction, self.arch, self._sizes)

    def __repr__(self):
        return (
            f"FFT({self.size}, {self.dtype!r}, kind={self.kind!r}, direction={self.direction!r}, "
            f"elements_per_thread={self.elements_per_thread}, ffts_per_block={self.ffts_per_block}, "
            f"arch={self.arch!r})"
        )

    def launch(self, kernel, *args, rows, grid=None, stream=0):
        """Launch ``kernel`` with ``args`` for ``rows`` FFTs, ``fft.ffts_per_block`` a block: blocks of
        ``fft.block_dim``; the dynamic shared memory ``execute`` needs where it is over the 48 KiB of static shared
        memory a block may have (the kernel passing ``shared=cuda.shared.array(0, uint8)``), the kernel let to take
        it; and ``grid``:

        - by default, one block a group of ``ffts_per_block`` rows: the kernel's row is
          ``cuda.blockIdx.x * fft.ffts_per_block + cuda.threadIdx.y``;
        - ``"resident"``: as many blocks as the GPU runs at once (the driver's occupancy query), at most one a group:
          for a kernel's own loop over the groups, ``cuda.gridDim.x`` apart;
        - or a grid of your own.

        Example, continuing `FFT`'s (the kernel there takes a row a ``threadIdx.y``)::

            if cuda.is_available():
                FFT.launch(spectra, cuda.to_device(x), y, rows=1000)
        """
        from ._occupancy import launch_groups

        groups = -(-rows // self.ffts_per_block)
        launch_groups(kernel, args, self.block_dim, self.shared_memory_bytes, groups, grid, stream)

    @staticmethod
    def supported_sizes(dtype="complex64", arch="sm_90"):
        """The sizes cuFFTDx computes as block FFTs of ``dtype``'s precision on ``arch``, ascending (from its
        database: no GPU, no compile).

        Example::

            import numba_tiles as tiles

            sizes = tiles.FFT.supported_sizes("float32", arch="sm_90")
            assert 1000 in sizes and sizes[0] == 2 and sizes[-1] == 32768
        """
        found = ext.named("FFT.supported_sizes", "dtype", dtype).name
        return database.supported_sizes(arch, _REAL.get(found, found))

    # ---- in kernels ----

    @ext.method(rule=calls.execute_rule, simulate=twins.execute)
    def execute(self, items, shared=None):
        """The FFT, in place on ``items`` (each thread's ``cuda.local.array(fft.storage_size, fft.value_type)``,
        in cuFFTDx's register layout: see `load` and `index`), by the whole block: every thread of a block of
        ``fft.block_dim`` calls it, the FFT of its ``threadIdx.y``; it synchronizes the block as it needs. It works in
        ``fft.shared_memory_bytes`` of shared memory: by default a static buffer of its own (one for every FFT of the
        kernel that needs as much), or ``shared``, a 1-D shared array of at least that many bytes, 16-byte aligned:
        ``cuda.shared.array(fft.shared_memory_bytes, uint8, alignment=16)``, or ``cuda.shared.array(0, uint8)``, the
        launch's dynamic shared memory, for FFTs over the 48 KiB of static shared memory a block may have.

        Example, continuing `FFT`'s (a forward FFT then its inverse, in place: ``size`` times the input)::

            INVERSE = tiles.FFT(128, "complex64", direction="inverse", arch="sm_80")

            @cuda.jit
            def there_and_back(x):
                items = cuda.local.array(FFT.storage_size, complex64)
                row = cuda.blockIdx.x * FFT.ffts_per_block + cuda.threadIdx.y
                FFT.load(x[row], items)
                FFT.execute(items)
                INVERSE.execute(items)
                FFT.store(items, x[row])

            cubin = tiles.compile(there_and_back, "void(complex64[:, ::1])", arch="sm_80")
        """

    @ext.method(rule=lambda n, a: calls.move_rule(n, a, False), simulate=twins.load)
    def load(self, src, items):
        """This thread's items of the sequence ``src`` (a 1-D array of the FFT's input: ``value_type``, or for r2c
        its real ``precision``; any strides; a row ``x[row]`` of a batch), zeros past its end: item ``i`` of thread
        ``x`` gets ``src[x + i * fft.stride]``. Real values are packed two to an item: folded (``fft.real_mode``),
        item ``i`` gets ``src[2 * fft.index(i)]`` and the value after it; else real value ``j`` of the items is
        ``src[fft.index(j)]``. Per thread: no barrier, so threads without a sequence may skip it.

        Example, continuing `FFT`'s (zero-padded: 100 samples into a 128-point FFT)::

            @cuda.jit
            def first_items(x, out):
                items = cuda.local.array(FFT.storage_size, complex64)
                FFT.load(x[:100], items)            # x[100:] read as zeros
                FFT.store(items, out)

            cubin = tiles.compile(first_items, "void(complex64[::1], complex64[::1])", arch="sm_80")
        """

    @ext.method(rule=lambda n, a: calls.move_rule(n, a, True), simulate=twins.store)
    def store(self, items, dst):
        """This thread's items into the sequence ``dst`` (a 1-D array of the FFT's output: ``value_type``, of
        ``size // 2 + 1`` values for r2c, or the real ``precision`` for c2r), as much as ``dst`` holds: the
        inverse of `load`. Per thread, no barrier.

        Example, continuing `FFT`'s (r2c: a real signal's half spectrum)::

            HALF = tiles.FFT(128, "float32", kind="r2c", arch="sm_80")

            @cuda.jit
            def half_spectra(x, y):             # y[r] = numpy.fft.rfft(x[r]): 65 values a row
                items = cuda.local.array(HALF.storage_size, complex64)
                row = cuda.blockIdx.x * HALF.ffts_per_block + cuda.threadIdx.y
                HALF.load(x[row], items)
                HALF.execute(items)
                HALF.store(items, y[row])

            cubin = tiles.compile(half_spectra, "void(float32[:, ::1], complex64[:, ::1])", arch="sm_80")
        """

    @ext.method(rule=calls.index_rule, simulate=twins.index)
    def index(self, i):
        """The element of this thread's FFT that item ``i`` holds: ``threadIdx.x + i * fft.stride`` (a frequency
        after a forward FFT, a sample after an inverse); item ``i`` exists below ``elements_per_thread`` (r2c's
        output and c2r's input: below ``elements_per_thread // 2 + 1``, for elements up to ``size // 2``).

        Example, continuing `FFT`'s (a filter between the transforms: a circular convolution with ``h``)::

            INVERSE = tiles.FFT(128, "complex64", direction="inverse", arch="sm_80")

            @cuda.jit
            def filtered(x, spectrum):          # x[r] = size * ifft(fft(x[r]) * spectrum)
                items = cuda.local.array(FFT.storage_size, complex64)
                row = cuda.blockIdx.x * FFT.ffts_per_block + cuda.threadIdx.y
                FFT.load(x[row], items)
                FFT.execute(items)
                for i in range(FFT.elements_per_thread):
                    items[i] *= spectrum[FFT.index(i)]
                INVERSE.execute(items)
                FFT.store(items, x[row])

            cubin = tiles.compile(filtered, "void(complex64[:, ::1], complex64[::1])", arch="sm_80")
        """
