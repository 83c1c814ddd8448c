"""The pipelined form of the tile matmul on Hopper: TMA loads and ``wgmma`` products (cuBLASDx through libmathdx).

`PipelineMatmul` is a module-level description, as `Matmul` is; its kernel-side ``tile`` computes
one whole C tile (its loop over K inside, with A's and B's K-steps in flight in a ring of
shared-memory stages), and its host-side ``prepare`` makes the object that describes A and B to the
GPU's copy engine (TMA). Its code is libmathdx's (`_libmathdx`), the entry points ours
(``lto_libs/pipeline.cuh``).
"""

import functools
import math

import numpy as np
from numba import cuda
from numba.cuda import types

from . import _callback, _libmathdx, _numba, _tensor_maps, _toolchain, extending as ext, simulator
from ._library import MATHDX_SM90A
from .extending import CUB, Instance
from .matmul import _ORDERS, _arrangement2, _bind, _declares, _matrix, _pipe, _scales, _shape_mnk

PIPELINE = CUB.header("pipeline.cuh")
WGMMA = MATHDX_SM90A.header("wgmma.cuh")
MAX_SHARED_BYTES = 227 * 1024  # a Hopper block's dynamic shared memory
NAME = "PipelineMatmul"
# A and B's dtypes by precision, and the C++ type each computes in
_OPERANDS = {"fp16": ("float16",), "bf16": ("int16", "uint16"), "tf32": ("float32",)}
_CXX = {"fp16": "__half", "bf16": "__nv_bfloat16", "float32": "float"}


class PipelineMatmul:
    """``C = alpha * A @ B + beta * C`` by tiles, on Hopper GPUs (sm_90): cuBLASDx's pipelined GEMM.

    ``shape=(M, N, K)``: each C tile is M x N, and A and B move K columns (rows) a step. ``dtype``:
    A's and B's, float16, or int16 holding bfloat16 bits with ``precision="bf16"`` (as
    ``torch_tensor.view(torch.int16)`` gives them), or float32 with ``precision="tf32"`` (multiplied
    with 10-bit mantissas); they are multiplied on tensor cores (``wgmma``) in float32. ``c_dtype``:
    C's, float32 (the default) or a 16-bit ``dtype``. ``arrangement``: A's and B's order in global
    memory (tf32: A row-major, B column-major, the only tiles its wgmma reads). ``stages``: how many
    K-steps of A and B are in flight at once (TMA copies into a ring of shared-memory buffers).
    ``block_dim``: threads a block, whole warpgroups (128 or 256).

    This is the form for large matrices (0.83x cuBLAS in bf16, 0.99x in tf32 at 8192^3 on an H200:
    docs/performance.md); `Matmul` is the portable one (any GPU, batched small products). Creating one compiles
    nothing and needs no GPU. On the host:

    - ``mm.prepare(a, b, stream=0)``: the device array ``pipe`` describing A (rows x K) and B
      (K x cols), device arrays of ``dtype``, to the GPU (one thread writes TMA descriptors, in
      ``stream``); make it again for other arrays. Their leading dimensions must be multiples of
      16 bytes (8 items) and their data 16-byte aligned, as TMA requires.
    - ``mm.shared_memory_bytes``: the dynamic shared memory each block needs (the stages, or C's
      tile in float32 if that is more); pass it with `allow_dynamic_shared_memory` and at launch.
      Reading it generates the pipeline (libmathdx: 15 to 60 s the first time, then the disk
      cache answers), as the first kernel compile would.
    - ``mm.grid(c)``: the number of C tiles of a matrix (rows, cols) or an array: (rows, cols).

    A batch of products of one tile each (fp16 and bf16; M = 64 with N up to 256, or M = 128 with N up to
    192, N a multiple of 64) is one call, ``mm.batched(pipe, c, alpha=1.0, beta=0.0)``: ``c[i] = alpha * a[i] @ b[i] + beta * c[i]``
    for every ``i`` of the batch, over a persistent grid (launch about one block an SM, any number
    works) of ``mm.batched_threads`` threads and ``mm.batched_shared_memory_bytes`` of dynamic shared
    memory, ``pipe = mm.prepare_batched(a, b, c)`` made on the host (3-D arrays: count x m x k, count
    x k x n and count x m x n, m and n at most M and N, any k). Its loop is our own on MathDx's CuTe
    GMMA atoms, warp-specialized: one thread loads the K-steps by TMA, M / 64 warpgroups multiply, and
    the blocks take products in a dynamic order from a counter in ``pipe``, so one call of a ``pipe``
    a launch, and launches that use one ``pipe`` in one stream.

    In a kernel, launched with ``mm.threads`` threads and ``mm.shared_memory_bytes`` of dynamic
    shared memory (which then belongs to it): ``mm.tile(pipe, c, i, j, alpha=1.0, beta=0.0)``
    computes C's tile (i, j), ``c[i*M:(i+1)*M, j*N:(j+1)*N]``, items past C's edges left out, by
    the whole block, and ends with a barrier: a block may compute any number of tiles in a loop
    (a persistent kernel). ``c`` is a 2-D array of ``c_dtype`` of any strides. ``epilogue=f,
    epilogue_args=(...)`` stores each item of C as ``f(value, row, col, ...)`` (``tiles.Matmul.store``'s
    epilogue; ``mm.batched``'s gets ``f(value, i, row, col, ...)``). Another launch
    shape traps (with a message under ``NUMBA_TILES_DEBUG=1``). Keep ``print`` out of such kernels:
    ptxas serializes the ``wgmma`` of a kernel that makes any call.

    Example::

        from numba import cuda, int16
        import numba_tiles as tiles

        MM = tiles.PipelineMatmul((128, 128, 64), int16, precision="bf16")

        @cuda.jit
        def gemm(pipe, c):                       # one C tile a block, any sizes
            MM.tile(pipe, c, cuda.blockIdx.y, cuda.blockIdx.x)

        cubin = tiles.compile(gemm, "void(uint8[::1], float32[:, ::1])", arch="sm_90a")
        # on the GPU: pipe = MM.prepare(a, b); rows, cols = MM.grid(c)
        #             tiles.allow_dynamic_shared_memory(gemm, MM.shared_memory_bytes, pipe, c)
        #             gemm[(cols, rows), MM.threads, 0, MM.shared_memory_bytes](pipe, c)

        BMM = tiles.PipelineMatmul((128, 128, 32), int16, precision="bf16", c_dtype=int16, stages=4)

        @cuda.jit
        def bmm(pipe, c):                        # c[i] = a[i] @ b[i], a batch of 128 x 128 products
            BMM.batched(pipe, c)

        cubin = tiles.compile(bmm, "void(uint8[::1], int16[:, :, ::1])", arch="sm_90a")
        # on the GPU: pipe = BMM.prepare_batched(a, b, c); nbytes = BMM.batched_shared_memory_bytes
        #             tiles.allow_dynamic_shared_memory(bmm, nbytes, pipe, c)
        #             bmm[cuda.get_current_device().MULTIPROCESSOR_COUNT, BMM.batched_threads, 0, nbytes](pipe, c)
    """

    def __init__(self, shape, dtype, *, precision=None, c_dtype="float32", arrangement=("row_major", "row_major"),
                 stages=2, block_dim=256):
        self.shape = m, n, k = _shape_mnk(NAME, tuple(shape) if isinstance(shape, list) else shape)
        self.arrangement = _arrangement2(NAME, tuple(arrangement) if isinstance(arrangement, list) else arrangement)
        self.precision = ext.choice("precision", dict.fromkeys([None, "bf16", "tf32"]))(NAME, precision) or "fp16"
        ta = ext.named(NAME, "dtype", dtype)
        if ta.name not in _OPERANDS[self.precision]:
            raise ext.error(NAME, f"dtype {ta.name} with precision={precision!r}: the pipelines multiply float16, "
                            "bfloat16 held in int16, or float32 as tf32", "pass dtype=float16, dtype=int16 with "
                            "precision='bf16', or dtype=float32 with precision='tf32' (tiles.Matmul multiplies "
                            "float32 and float64 exactly)")
        if self.precision == "tf32" and self.arrangement != ("row_major", "col_major"):
            # (libmathdx makes the others, but without wgmma: its tf32 products read only K-contiguous tiles)
            raise ext.error(NAME, f"arrangement={self.arrangement} with precision='tf32': wgmma multiplies tf32 "
                            "tiles read along K only, A row-major and B column-major",
                            "pass arrangement=('row_major', 'col_major') with B column-major (the transpose of a "
                            "row-major N x K array), or use tiles.Matmul (any arrangement)")
        tc = ext.named(NAME, "c_dtype", c_dtype)
        if tc.name not in ("float32", ta.name):
            raise ext.error(NAME, f"c_dtype {tc.name}: C is float32 or A's dtype ({ta.name})",
                            f"pass c_dtype='float32' or c_dtype='{ta.name}'")
        if not (isinstance(stages, int) and 1 <= stages <= 16):
            raise ext.error(NAME, f"stages must be an int from 1 to 16, got {stages!r}",
                            "pass stages=2 (3 blocks an SM for 128 x 128 x 64 tiles; more stages, fewer blocks)")
        self.block_dim = ext.block_dim(NAME, block_dim)
        self.threads = math.prod(self.block_dim)
        if self.block_dim[1:] != (1, 1) or self.threads % 128:
            raise ext.error(NAME, f"block_dim={block_dim}: wgmma computes with whole warpgroups of 128 threads",
                            "pass block_dim=128 or 256 (one int)")
        if m % 64 or n % 16 or k % 16:
            raise ext.error(NAME, f"shape={self.shape}: wgmma tiles are multiples of 64 rows, 16 columns and 16 "
                            "K-steps", "use e.g. shape=(128, 128, 64) or (128, 256, 64)")
        self.m, self.n, self.k = m, n, k
        self.dtype, self.c_dtype, self.stages = ta.name, tc.name, stages
        self._types = (ta, tc)
        self._pipeline = _libmathdx.Pipeline(m, n, k, self.precision,
                                             *(_ORDERS[a] for a in self.arrangement), self.threads, stages)
        self.batched_threads = 128 * (m // 64 + 1)  # (one warpgroup loading, one multiplying each 64 rows)
        self.tile = _bind(_tile, self)
        self.batched = _bind(_batched, self, block_dim=self.batched_threads)
        self._prepare = _bind(_prepare, self)

    def _key(self):
        return self._pipeline, self.c_dtype

    def __eq__(self, other):
        return isinstance(other, PipelineMatmul) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"PipelineMatmul(shape={self.shape}, dtype={self.dtype}, precision={self.precision!r}, "
                f"c_dtype={self.c_dtype}, arrangement={self.arrangement}, stages={self.stages}, "
                f"block_dim={self.threads})")

    def _traits(self, intrinsic=NAME):
        """libmathdx's symbols and sizes for this pipeline (made once a machine: the disk cache keeps them)."""
        try:
            return _libmathdx.traits(self._pipeline)
        except FileNotFoundError as exc:
            fix = ("on the CUDA 12 line use tiles.Matmul; PipelineMatmul needs numba-tiles[cu13] and a CUDA 13 driver "
                   "(r580 or newer)" if _toolchain.cuda_line() == "cu12" else "pip install 'numba-tiles[cu13]'")
            raise ext.error(intrinsic, str(exc), fix) from None
        except RuntimeError as exc:
            raise ext.error(intrinsic, f"libmathdx cannot make this pipeline ({self!r}): {exc}",
                            "change shape, stages or block_dim (128 x 128 x 64 with 2 stages and 256 threads is "
                            "the tested one)") from None

    @property
    def shared_memory_bytes(self):
        """Dynamic shared memory a block needs: the pipeline's stages, or C's tile in float32 if more."""
        return max(self._traits()["buffer_bytes"], self.m * self.n * 4)

    @property
    def batched_shared_memory_bytes(self):
        """Dynamic shared memory a block of ``mm.batched`` needs (wgmma_shared_bytes in wgmma.cuh): 1 KiB of
        alignment, ``stages`` K-steps of A and B, C's tile in its dtype and the barriers."""
        tiles = _tensor_maps.tma_tiles(f"{NAME}.batched", self.shape, np.dtype(self.dtype).itemsize, self.arrangement)
        return 1024 + self.stages * sum(t[2] for t in tiles) + self.m * self.n * np.dtype(self.c_dtype).itemsize \
            + self.stages * 20 + 16

    def prepare_batched(self, a, b, c, stream=0):
        """The device array ``pipe`` describing the 3-D device arrays ``a`` (count x m x k), ``b`` (count x k x n)
        and ``c`` (count x m x n) to TMA, for ``mm.batched``: made on the host (a GPU of sm_90). Each array's
        contiguous side contiguous (C row-major), its other strides multiples of 16 bytes, its data 16-byte
        aligned. Make it again for other arrays; see `PipelineMatmul`."""
        return _tensor_maps.prepare(f"{NAME}.prepare_batched", self, a, b, c, stream=stream)

    def grid(self, c):
        """(rows, cols) of C tiles covering ``c`` (an array, or its shape)."""
        rows, cols = getattr(c, "shape", c)
        return -(-rows // self.m), -(-cols // self.n)

    def prepare(self, a, b, stream=0):
        """The device array describing A and B to the GPU's copy engine, for ``mm.tile``; see `PipelineMatmul`."""
        name = f"{NAME}.prepare"
        for param, array in (("a", a), ("b", b)):
            if getattr(array, "ndim", None) != 2 or str(array.dtype) != self.dtype:
                raise ext.error(name, f"{param} must be a 2-D array of {self.dtype}, got {getattr(array, 'dtype', '')} "
                                f"{getattr(array, 'shape', array)!r}", f"pass a 2-D device array of {self.dtype}")
        if a.shape[1] != b.shape[0]:
            raise ext.error(name, f"A is {a.shape[0]} x {a.shape[1]} and B {b.shape[0]} x {b.shape[1]}: A's columns "
                            "are not B's rows", "pass A (rows x K) and B (K x cols)")
        if _numba.simulator_enabled():
            return simulator.pipeline_prepare(a, b)
        itemsize = np.dtype(self.dtype).itemsize
        for param, array, order in (("a", a, self.arrangement[0]), ("b", b, self.arrangement[1])):
            unit, ld = (1, 0) if order == "row_major" else (0, 1)
            lead = array.strides[ld]
            if array.strides[unit] != itemsize or lead % 16 or lead <= 0 or array.__cuda_array_interface__["data"][0] % 16:
                raise ext.error(name, f"{param} ({array.shape}, strides {array.strides} bytes) is not {order} with a "
                                "leading dimension of a multiple of 16 bytes and 16-byte aligned data, as TMA needs",
                                f"pass a {order} array whose {'rows' if ld == 0 else 'columns'} start every multiple "
                                f"of {16 // itemsize} items (pad it, then take a view of the part you use)")
        pipe = cuda.device_array(self._traits(name)["device_bytes"], np.uint8, stream=stream)
        _prepare_kernel(self)[1, 1, stream](pipe, a, b)
        return pipe


@functools.cache
def _prepare_kernel(mm):
    prepare = mm._prepare

    @cuda.jit
    def kernel(pipe, a, b):
        prepare(pipe, a, b)

    return kernel


def _hopper(name):
    if _numba.simulator_enabled():
        return
    cc = _numba.target_flags()[0]
    if cc != (9, 0):
        raise ext.error(name, f"runs on Hopper (sm_90) only: cuBLASDx's pipelines are TMA copies and wgmma products; "
                        f"this kernel is compiled for sm_{cc[0]}{cc[1]}",
                        "use tiles.Matmul on other GPUs (the portable register form), or compile for arch='sm_90a'")


def _prelude(symbols):
    """The extern declarations of libmathdx's functions, in the ABI of ``lto_libs/pipeline.cuh``'s ``lmdx`` types."""
    parameters = {"device_create": "storage, ::numba_tiles::lmdx::matrix, ::numba_tiles::lmdx::matrix",
                  "tile_create": "storage, ::numba_tiles::lmdx::storage, void*, int*, int*",
                  "tile_destroy": "storage", "accumulator_create": "storage, ::numba_tiles::lmdx::storage",
                  "accumulator_destroy": "storage", "execute": "storage, ::numba_tiles::lmdx::storage",
                  "finish": "storage", "copy_f32": "storage, ::numba_tiles::lmdx::rows"}
    declared = {symbols[f]: f'extern "C" __device__ void {symbols[f]}(::numba_tiles::lmdx::{p});'
                for f, p in parameters.items()}
    return "\n".join(declared.values())


@functools.cache
def _code(pipeline):
    """The libmathdx LTO-IR of ``pipeline``, one object a process (each kernel that calls it links it once)."""
    return _numba.lazy_ltoir(f"numba_tiles-libmathdx-{abs(hash(pipeline)):x}.ltoir",
                             lambda: _libmathdx.code(pipeline))


def _instance(name, mm, template, params, prelude=""):
    symbols = mm._traits(name)["symbols"]
    return Instance(name, PIPELINE, template, types.none, params, prelude=_prelude(symbols) + prelude,
                    modules=(_code(mm._pipeline),))


def _tile_rule(name, args):
    mm = args["mm"]
    _hopper(name)
    _pipe(name, args, "prepare")
    tc = _matrix(name, args, "c")
    if tc != mm._types[1]:
        raise ext.error(name, f"c holds {tc.name}; this PipelineMatmul's C is {mm.c_dtype}",
                        f"pass a 2-D array of {mm.c_dtype}, or make the PipelineMatmul with c_dtype='{tc.name}'")
    for param in ("i", "j"):
        ext.integer(name, param, args[param])
    _scales(name, args)
    fused, prelude = _callback.fused(name, args, types.float32, 2)
    if _numba.simulator_enabled():  # (the twin needs no C++)
        return Instance(name, PIPELINE, "", types.none, fused)
    traits = mm._traits(name)
    s = {f: f"&{symbol}" for f, symbol in traits["symbols"].items()}
    template = PIPELINE.template(
        "numba_tiles::pipeline_tile", M=mm.m, N=mm.n, Threads=mm.threads, BufferBytes=mm.shared_memory_bytes,
        TileBytes=traits["tile_bytes"], TileAlign=traits["tile_align"], AccBytes=traits["accumulator_bytes"],
        AccAlign=traits["accumulator_align"], TileCreate=s["tile_create"], TileDestroy=s["tile_destroy"],
        AccCreate=s["accumulator_create"], AccDestroy=s["accumulator_destroy"], Execute=s["execute"],
        Finish=s["finish"], CopyF32=s["copy_f32"],
        P=_CXX["float32" if tc.name == "float32" else mm.precision])
    return _instance(name, mm, template, (("pipe", args["pipe"], None), ("c", args["c"], None),
                                          ("i", types.int64, None), ("j", types.int64, None),
                                          ("alpha", types.float32, 1), ("beta", types.float32, 0)) + fused, prelude)


@_declares(_callback.CONSTS, _tile_rule, simulator.pipeline_tile)
def _tile(pipe, c, i, j, alpha=1.0, beta=0.0, *, epilogue=None, epilogue_args=None):
    """C's tile (i, j) = alpha * A @ B + beta * C, by the whole block; see `PipelineMatmul`."""


def _batched_rule(name, args):
    mm = args["mm"]
    _hopper(name)
    if mm.precision == "tf32":
        raise ext.error(name, "it multiplies fp16 and bf16 operands", "use tiles.Matmul's batched_tma for float32 "
                        "operands (tf32 or exact)")
    if mm.m not in (64, 128) or mm.n % 64 or mm.n > 384 - mm.m * 3 // 2:
        # (each thread holds N / 2 floats of C: N = 256 with M = 128 spilled them to local memory)
        raise ext.error(name, f"shape={mm.shape}: each of its warpgroups multiplies 64 rows by all N columns, "
                        "N / 2 floats a thread", "use M = 64 with N of 64 to 256, or M = 128 with N of 64 to 192 "
                        "(multiples of 64), e.g. shape=(128, 128, 32)")
    if mm.batched_shared_memory_bytes > MAX_SHARED_BYTES:
        raise ext.error(name, f"its {mm.stages} stages and C's tile take {mm.batched_shared_memory_bytes} bytes of "
                        f"shared memory, over the {MAX_SHARED_BYTES} a block can have", "use fewer stages or a "
                        "smaller K (stages x K of 128 to 256 is enough to keep DRAM busy)")
    _pipe(name, args, "prepare_batched", "a, b, c")
    tc = _matrix(name, args, "c", ndim=3)
    if tc != mm._types[1]:
        raise ext.error(name, f"c holds {tc.name}; this PipelineMatmul's C is {mm.c_dtype}",
                        f"pass a 3-D array of {mm.c_dtype}, or make the PipelineMatmul with c_dtype='{tc.name}'")
    _scales(name, args)
    fused, prelude = _callback.fused(name, args, types.float32, 3)
    template = WGMMA.template("numba_tiles::pipeline_batched", M=mm.m, N=mm.n, K=mm.k, Stages=mm.stages,
                             RowA=_ORDERS[mm.arrangement[0]], RowB=_ORDERS[mm.arrangement[1]], P=_CXX[mm.precision],
                             PD=_CXX["float32" if tc.name == "float32" else mm.precision], TD=tc.cxx)
    return Instance(name, WGMMA, template, types.none, (("pipe", args["pipe"], None), ("c", args["c"], None),
                                                        ("alpha", types.float32, 1), ("beta", types.float32, 0))
                    + fused, prelude=prelude)


@_declares(_callback.CONSTS, _batched_rule, simulator.pipeline_batched)
def _batched(pipe, c, alpha=1.0, beta=0.0, *, epilogue=None, epilogue_args=None):
    """``c[i] = alpha * a[i] @ b[i] + beta * c[i]`` over the batch, by persistent blocks; see `PipelineMatmul`."""


def _prepare_rule(name, args):
    mm = args["mm"]
    _hopper(name)
    _pipe(name, args, "prepare")
    ta = _matrix(name, args, "a")
    _matrix(name, args, "b", like=("a", ta))
    traits = mm._traits(name)
    template = PIPELINE.template("numba_tiles::pipeline_prepare", DeviceBytes=traits["device_bytes"],
                                 DeviceAlign=traits["device_align"], RowA=_ORDERS[mm.arrangement[0]],
                                 RowB=_ORDERS[mm.arrangement[1]], DeviceCreate=f"&{traits['symbols']['device_create']}")
    return _instance(name, mm, template, (("pipe", args["pipe"], None), ("a", args["a"], None),
                                          ("b", args["b"], None)))


@_declares({}, _prepare_rule, None)  # (the simulator's prepare is a host call: simulator.pipeline_prepare)
def _prepare(pipe, a, b):
    """Fill ``pipe`` for A and B (one thread); `PipelineMatmul.prepare` launches it."""


def _kernel_attribute(mm, name):
    """What ``mm.<name>`` is inside a kernel: a size (an int constant) or a bound intrinsic (``tile``, ``batched``)."""
    if name in ("m", "n", "k", "threads", "tile", "batched", "batched_threads"):
        return getattr(mm, name)
    return None


if not _numba.simulator_enabled():
    _numba.register_description(PipelineMatmul, _kernel_attribute)
