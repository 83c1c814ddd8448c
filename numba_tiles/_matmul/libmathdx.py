"""``"libmathdx"``: C's tile by cuBLASDx 0.7's pipelined GEMM (TMA loads into a ring of shared-memory stages,
``wgmma`` products, sm_90a), whose device functions libmathdx generates (`_libmathdx`), called by our entry
points (``lto_libs/libmathdx.cuh``). ``pipe`` is libmathdx's device-pipeline object, which a one-thread kernel
fills for A and B (`prepare`)."""

import functools

import numpy as np
from numba import cuda
from numba.cuda import types

from .. import _callback, _libmathdx, _programs, _tensor_maps, _toolchain
from .. import extending as ext
from .._backends import numba_cuda_compile, simulated
from .._library import LIBMATHDX
from .._matrices import ORDERS
from ..extending import Arg, Instance, error
from . import tma
from .base import STAGES, Implementation, Plan, coordinates
from .wgmma import CXX, precision

HEADER = LIBMATHDX.header("libmathdx.cuh")


def threads(mm):
    """The pipeline's block: two warpgroups for tiles of 128 rows or more, else one."""
    return 256 if mm.shape[0] >= 128 else 128


@functools.cache
def pipeline(mm, stages):
    m, n, k = mm.shape
    return _libmathdx.Pipeline(m, n, k, precision(mm), *(ORDERS[a] for a in mm.arrangement), threads(mm), stages)


def traits(name, mm, stages):
    """libmathdx's symbols and sizes for ``mm``'s pipeline (made once a machine: the disk cache keeps them)."""
    try:
        return _libmathdx.traits(pipeline(mm, stages))
    except FileNotFoundError as exc:
        raise error(name, str(exc), "pip install 'numba-tiles[cu13]'") from None
    except RuntimeError as exc:
        raise error(
            name,
            f"libmathdx cannot make this pipeline ({mm!r}, {stages} stages): {exc}",
            "change shape or stages (128 x 128 x 64 with 2 stages is the tested one)",
        ) from None


def shared_bytes(name, mm, stages):
    """The pipeline's dynamic shared memory: its stages, or C's tile in float32 if that is more."""
    m, n, _ = mm.shape
    return max(traits(name, mm, stages)["buffer_bytes"], m * n * 4)


@ext.method(consts={"stages": STAGES}, rule=lambda n, a: prepare_instance(n, a["mm"], a["stages"], a), simulate=None)
def _prepare(mm, pipe, a, b, stages):
    """Fill ``pipe``, libmathdx's device-pipeline object, for A and B (one thread): `Libmathdx.prepare`."""


_prepare.name, _prepare.owner = "prepare_pipeline", "Matmul"  # (the names a class would give it: its errors')


@functools.cache
def _prepare_kernel(mm, stages):
    prepare_pipeline = _prepare.bind(mm)

    @cuda.jit
    def kernel(pipe, a, b):
        prepare_pipeline(pipe, a, b, stages)

    return kernel


def _prelude(symbols):
    """The extern declarations of libmathdx's functions, in the ABI of ``lto_libs/libmathdx.cuh``'s ``lmdx`` types."""
    parameters = {
        "device_create": "storage, ::numba_tiles::lmdx::matrix, ::numba_tiles::lmdx::matrix",
        "tile_create": "storage, ::numba_tiles::lmdx::storage, void*, int*, int*",
        "tile_destroy": "storage",
        "accumulator_create": "storage, ::numba_tiles::lmdx::storage",
        "accumulator_destroy": "storage",
        "execute": "storage, ::numba_tiles::lmdx::storage",
        "finish": "storage",
        "copy_f32": "storage, ::numba_tiles::lmdx::rows",
    }
    declared = {
        symbols[f]: f'extern "C" __device__ void {symbols[f]}(::numba_tiles::lmdx::{p});' for f, p in parameters.items()
    }
    return "\n".join(declared.values())


@functools.cache
def _code(pipeline):
    """The libmathdx LTO-IR of ``pipeline``, one object a process (each kernel that calls it links it once)."""
    code = numba_cuda_compile.lazy_ltoir(
        f"numba_tiles-libmathdx-{abs(hash(pipeline)):x}.ltoir", lambda: _libmathdx.code(pipeline)
    )
    _programs.arch_specific.add(code)  # (sm_90a code: a numba-cuda-mlir kernel that calls it links for sm_90a)
    return code


def _instance(name, mm, stages, template, params, prelude="", threads=0):
    symbols = traits(name, mm, stages)["symbols"]
    linked = dict(prelude=_prelude(symbols) + prelude, modules=(_code(pipeline(mm, stages)),), threads=threads)
    return Instance(intrinsic=name, header=HEADER, template=template, result=types.none, params=params, **linked)


def prepare_instance(name, mm, stages, args):
    """The one-thread fill of libmathdx's device-pipeline object (`Libmathdx.prepare`)."""
    t = traits(name, mm, stages)
    template = HEADER.template(
        "numba_tiles::libmathdx_prepare",
        DeviceBytes=t["device_bytes"],
        DeviceAlign=t["device_align"],
        RowA=ORDERS[mm.arrangement[0]],
        RowB=ORDERS[mm.arrangement[1]],
        DeviceCreate=f"&{t['symbols']['device_create']}",
    )
    return _instance(name, mm, stages, template, (Arg("pipe", args["pipe"]), Arg("a", args["a"]), Arg("b", args["b"])))


class Libmathdx(Implementation):
    name = "libmathdx"
    members = ("pipe", "c")
    chosen = (
        "``tile`` on sm_90 for other fp16, bf16 or tf32 (A row-major, B column-major) tiles of multiples of "
        "64 x 16 x 16: cuBLASDx's pipelined GEMM (TMA loads, ``wgmma``), made by libmathdx the first time "
        "(15 to 60 s, then the disk cache answers)"
    )

    def computes(self, mm, cc, c_dtype, ndim):
        m, n, k = mm.shape
        p = precision(mm)
        return (
            ndim == 2
            and cc == (9, 0)
            and p is not None
            and m % 64 == 0
            and n % 16 == 0
            and k % 16 == 0
            and c_dtype in ("float32", mm.dtype)
            and (p != "tf32" or mm.arrangement == ("row_major", "col_major"))
            and _toolchain.cuda_line() == "cu13"
        )

    def preference(self, mm, cc, ndim):
        return 1  # (after the wgmma block, where that computes the tile)

    def takes(self, mm, a, b, c):
        return tma.operands_fit(mm, a, b)

    def stages(self, mm):
        return mm.stages or 2  # (the tested one)

    def plan(self, name, mm, stages, c_dtype, ndim):
        return Plan(self.name, stages, (threads(mm), 1, 1), shared_bytes(name, mm, stages), "tiles")

    def prepare(self, name, mm, plan, a, b, c, stream):
        """libmathdx's device-pipeline object for the 2-D device arrays ``a`` and ``b``, made on the GPU by one
        thread; A's and B's leading dimensions must be multiples of 16 bytes and their data 16-byte aligned."""
        itemsize = np.dtype(mm.dtype).itemsize
        for param, array, order in (("a", a, mm.arrangement[0]), ("b", b, mm.arrangement[1])):
            ld = 0 if order == "row_major" else 1
            if not _tensor_maps.fits(array, order):
                raise error(
                    name,
                    f"{param} ({array.shape}, strides {array.strides} bytes) is not {order} with a "
                    "leading dimension of a multiple of 16 bytes and 16-byte aligned data, as TMA needs",
                    f"pass a {order} array whose {'rows' if ld == 0 else 'columns'} start every multiple of "
                    f"{16 // itemsize} items (pad it, then take a view of the part you use)",
                )
        pipe = cuda.device_array(traits(name, mm, plan.stages)["device_bytes"], np.uint8, stream=stream)
        _prepare_kernel(mm, plan.stages)[1, 1, stream](pipe, a, b)
        return pipe

    def instance(self, name, mm, plan, td, args, call):
        if simulated.simulator_enabled():  # (the simulator's twin computes the tile; nothing is generated)
            return Instance(intrinsic=name, header=HEADER, template="", result=types.none, params=())
        fused, prelude = _callback.fused(name, args, types.float32, 2)
        t = traits(name, mm, plan.stages)
        s = {f: f"&{symbol}" for f, symbol in t["symbols"].items()}
        m, n, _ = mm.shape
        template = HEADER.template(
            f"numba_tiles::libmathdx_{call}",
            M=m,
            N=n,
            Threads=threads(mm),
            BufferBytes=plan.shared_bytes,
            TileBytes=t["tile_bytes"],
            TileAlign=t["tile_align"],
            AccBytes=t["accumulator_bytes"],
            AccAlign=t["accumulator_align"],
            TileCreate=s["tile_create"],
            TileDestroy=s["tile_destroy"],
            AccCreate=s["accumulator_create"],
            AccDestroy=s["accumulator_destroy"],
            Execute=s["execute"],
            Finish=s["finish"],
            CopyF32=s["copy_f32"],
            P=CXX["float32" if td.name == "float32" else precision(mm)],
        )
        scales = (Arg("alpha", types.float32, 1), Arg("beta", types.float32, 0))
        params = self.operand_params(mm, td, 2) + coordinates(call) + scales + fused
        return _instance(name, mm, plan.stages, template, params, prelude, threads=threads(mm))


LIBMATHDX_PIPELINE = Libmathdx()
