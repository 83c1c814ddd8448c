"""Hopper's implementations of `Matmul.tile` and `Matmul.batched`: TMA loads and ``wgmma`` products (sm_90a).

- ``libmathdx``: C's tile by cuBLASDx 0.7's pipelined GEMM, whose device functions libmathdx generates
  (`_libmathdx`), called by our entry points (``lto_libs/pipeline.cuh``); ``pipe`` is libmathdx's
  device-pipeline object, which a one-thread kernel fills for A and B (`prepare`).
- ``wgmma``: C's tile, or a batch of one-tile products, by our warp-specialized loop on MathDx's CuTe GMMA
  atoms (``lto_libs/wgmma.cuh``); ``pipe`` holds the TMA tensor maps of A, B and C (`_operands.PIPE`).

`numba_tiles.matmul` chooses them (`Matmul.operands` says when); this module gives their sizes and C++.
"""

import functools

import numpy as np
from numba import cuda
from numba.cuda import types

from . import _callback, _compile, _libmathdx, _numba, _operands, _tensor_maps, _toolchain
from ._errors import error
from ._library import CUB, CUTE_SM90A
from ._matrices import ORDERS
from ._spec import Instance

PIPELINE = CUB.header("pipeline.cuh")
WGMMA = CUTE_SM90A.header("wgmma.cuh")
MAX_SHARED_BYTES = 227 * 1024  # a Hopper block's dynamic shared memory
_CXX = {"fp16": "__half", "bf16": "__nv_bfloat16", "tf32": "float", "float32": "float"}


def precision(mm):
    """The pipelines' name of ``mm``'s operands' precision ("fp16", "bf16", "tf32"), or None if they have none."""
    if mm.accumulator != "float32":
        return None
    return {("float16", None): "fp16", ("int16", "bf16"): "bf16", ("uint16", "bf16"): "bf16",
            ("float32", "tf32"): "tf32"}.get((mm.dtype, mm.precision))


def libmathdx_takes(mm, c_dtype):
    """Whether the libmathdx pipeline computes ``mm``'s tiles into a C of ``c_dtype`` (on sm_90, CUDA 13)."""
    m, n, k = mm.shape
    p = precision(mm)
    return (p is not None and m % 64 == 0 and n % 16 == 0 and k % 16 == 0 and c_dtype in ("float32", mm.dtype)
            and (p != "tf32" or mm.arrangement == ("row_major", "col_major")) and _toolchain.cuda_line() == "cu13")


def wgmma_takes(mm, c_dtype, stages):
    """Whether the wgmma loop computes ``mm``'s tiles into a C of ``c_dtype`` with ``stages`` buffers: each of its
    warpgroups multiplies 64 rows by all N columns, N / 2 floats a thread (N = 256 with M = 128 spilled them)."""
    m, n, k = mm.shape
    return (precision(mm) in ("fp16", "bf16") and m in (64, 128) and n % 64 == 0 and n <= 384 - m * 3 // 2
            and k % 16 == 0 and c_dtype in ("float32", mm.dtype)
            and wgmma_shared_bytes(mm, c_dtype, stages) <= MAX_SHARED_BYTES)


def pipeline_threads(mm):
    """The block of the libmathdx pipeline: two warpgroups for tiles of 128 rows or more, else one."""
    return 256 if mm.shape[0] >= 128 else 128


def wgmma_threads(mm):
    return 128 * (mm.shape[0] // 64 + 1)  # (one warpgroup loading, one multiplying each 64 rows)


def wgmma_shared_bytes(mm, c_dtype, stages):
    """The dynamic shared memory of the wgmma loop (wgmma_shared_bytes in wgmma.cuh): 1 KiB of alignment,
    ``stages`` K-steps of A and B, C's tile in its dtype and the barriers."""
    m, n, _ = mm.shape
    tiles = _tensor_maps.tma_tiles("Matmul.batched", mm.shape, np.dtype(mm.dtype).itemsize, mm.arrangement)
    return 1024 + stages * sum(t[2] for t in tiles) + m * n * np.dtype(c_dtype).itemsize + stages * 20 + 16


@functools.cache
def pipeline(mm, stages):
    m, n, k = mm.shape
    return _libmathdx.Pipeline(m, n, k, precision(mm), *(ORDERS[a] for a in mm.arrangement), pipeline_threads(mm),
                               stages)


def traits(name, mm, stages):
    """libmathdx's symbols and sizes for ``mm``'s pipeline (made once a machine: the disk cache keeps them)."""
    try:
        return _libmathdx.traits(pipeline(mm, stages))
    except FileNotFoundError as exc:
        raise error(name, str(exc), "pip install 'numba-tiles[cu13]'") from None
    except RuntimeError as exc:
        raise error(name, f"libmathdx cannot make this pipeline ({mm!r}, {stages} stages): {exc}",
                    "change shape or stages (128 x 128 x 64 with 2 stages is the tested one)") from None


def pipeline_shared_bytes(name, mm, stages):
    """The libmathdx pipeline's dynamic shared memory: its stages, or C's tile in float32 if that is more."""
    m, n, _ = mm.shape
    return max(traits(name, mm, stages)["buffer_bytes"], m * n * 4)


def prepare(name, mm, stages, a, b, stream=0):
    """libmathdx's device-pipeline object for the 2-D device arrays ``a`` and ``b``, made on the GPU by one
    thread; A's and B's leading dimensions must be multiples of 16 bytes and their data 16-byte aligned."""
    itemsize = np.dtype(mm.dtype).itemsize
    for param, array, order in (("a", a, mm.arrangement[0]), ("b", b, mm.arrangement[1])):
        ld = 0 if order == "row_major" else 1
        if not _tensor_maps.fits(array, order):
            raise error(name, f"{param} ({array.shape}, strides {array.strides} bytes) is not {order} with a leading "
                        "dimension of a multiple of 16 bytes and 16-byte aligned data, as TMA needs",
                        f"pass a {order} array whose {'rows' if ld == 0 else 'columns'} start every multiple of "
                        f"{16 // itemsize} items (pad it, then take a view of the part you use)")
    pipe = cuda.device_array(traits(name, mm, stages)["device_bytes"], np.uint8, stream=stream)
    _prepare_kernel(mm, stages)[1, 1, stream](pipe, a, b)
    return pipe


@functools.cache
def _prepare_kernel(mm, stages):
    prepare_pipeline = mm._prepare_pipeline

    @cuda.jit
    def kernel(pipe, a, b):
        prepare_pipeline(pipe, a, b, stages)

    return kernel


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
    code = _numba.lazy_ltoir(f"numba_tiles-libmathdx-{abs(hash(pipeline)):x}.ltoir",
                             lambda: _libmathdx.code(pipeline))
    _compile.arch_specific.add(code)  # (sm_90a code: a numba-cuda-mlir kernel that calls it links for sm_90a)
    return code


def _instance(name, mm, stages, template, params, prelude="", threads=0):
    symbols = traits(name, mm, stages)["symbols"]
    return Instance(name, PIPELINE, template, types.none, params, prelude=_prelude(symbols) + prelude,
                    modules=(_code(pipeline(mm, stages)),), threads=threads)


def tile_instance(name, mm, stages, c_dtype, args):
    """``mm.tile(ops, i, j, alpha, beta)`` by the libmathdx pipeline."""
    fused, prelude = _callback.fused(name, args, types.float32, 2)
    t = traits(name, mm, stages)
    s = {f: f"&{symbol}" for f, symbol in t["symbols"].items()}
    m, n, _ = mm.shape
    template = PIPELINE.template(
        "numba_tiles::pipeline_tile", M=m, N=n, Threads=pipeline_threads(mm),
        BufferBytes=pipeline_shared_bytes(name, mm, stages), TileBytes=t["tile_bytes"], TileAlign=t["tile_align"],
        AccBytes=t["accumulator_bytes"], AccAlign=t["accumulator_align"], TileCreate=s["tile_create"],
        TileDestroy=s["tile_destroy"], AccCreate=s["accumulator_create"], AccDestroy=s["accumulator_destroy"],
        Execute=s["execute"], Finish=s["finish"], CopyF32=s["copy_f32"],
        P=_CXX["float32" if c_dtype.name == "float32" else precision(mm)])
    params = (("ops.pipe", types.Array(types.uint8, 1, "C"), None), ("ops.c", types.Array(c_dtype.numba, 2, "A"), None),
              ("i", types.int64, None), ("j", types.int64, None), ("alpha", types.float32, 1),
              ("beta", types.float32, 0)) + fused
    return _instance(name, mm, stages, template, params, prelude, threads=pipeline_threads(mm))


def prepare_instance(name, mm, stages, args):
    """The one-thread fill of libmathdx's device-pipeline object (`prepare`)."""
    t = traits(name, mm, stages)
    template = PIPELINE.template("numba_tiles::pipeline_prepare", DeviceBytes=t["device_bytes"],
                                 DeviceAlign=t["device_align"], RowA=ORDERS[mm.arrangement[0]],
                                 RowB=ORDERS[mm.arrangement[1]], DeviceCreate=f"&{t['symbols']['device_create']}")
    return _instance(name, mm, stages, template, (("pipe", args["pipe"], None), ("a", args["a"], None),
                                                  ("b", args["b"], None)))


def wgmma_instance(name, mm, stages, c_dtype, args, ndim):
    """``mm.tile(ops, i, j, alpha, beta)`` (``ndim`` 2) or ``mm.batched(ops, alpha, beta)`` (3) by the wgmma loop."""
    fused, prelude = _callback.fused(name, args, types.float32, ndim)
    m, n, k = mm.shape
    p = precision(mm)
    function = "numba_tiles::pipeline_wgmma_tile" if ndim == 2 else "numba_tiles::pipeline_batched"
    template = WGMMA.template(function, M=m, N=n, K=k, Stages=stages,
                              SharedBytes=wgmma_shared_bytes(mm, c_dtype.name, stages),
                              RowA=ORDERS[mm.arrangement[0]], RowB=ORDERS[mm.arrangement[1]], P=_CXX[p],
                              PD=_CXX["float32" if c_dtype.name == "float32" else p], TD=c_dtype.cxx)
    tile = (("i", types.int64, None), ("j", types.int64, None)) if ndim == 2 else ()
    params = (("ops.pipe", types.Array(types.uint8, 1, "C"), None), ("ops.c", types.Array(c_dtype.numba, ndim, "A"), None),
              *tile, ("alpha", types.float32, 1), ("beta", types.float32, 0)) + fused
    return Instance(name, WGMMA, template, types.none, params, prelude="\n".join((*_operands.CHECKS.values(), prelude)),
                    threads=wgmma_threads(mm))
