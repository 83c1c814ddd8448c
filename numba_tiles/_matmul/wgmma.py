"""``"wgmma"``: C's tile, or a batch of one-tile products, by our warp-specialized block on MathDx's CuTe GMMA
atoms (``lto_libs/wgmma.cuh``, sm_90a): one warpgroup loads A and B by TMA, one per 64 rows multiplies with
``wgmma``, C goes out by TMA. ``pipe`` holds the tensor maps of A, B and C (`_tensor_maps.prepare`)."""

import numpy as np
from numba.cuda import types

from .. import _callback, _tensor_maps
from .._library import CUTE_SM90A
from .._matrices import ORDERS
from ..extending import Arg, Instance
from . import tma
from .base import CALLS, Implementation, Plan, coordinates

WGMMA = CUTE_SM90A.header("wgmma.cuh")
MAX_SHARED_BYTES = 227 * 1024  # a Hopper block's dynamic shared memory
CXX = {"fp16": "__half", "bf16": "__nv_bfloat16", "tf32": "float", "float32": "float"}


def precision(mm):
    """The Hopper codes' name of ``mm``'s operands' precision ("fp16", "bf16", "tf32") with a float32 accumulator,
    or None."""
    if mm.accumulator != "float32":
        return None
    return {
        ("float16", None): "fp16",
        ("int16", "bf16"): "bf16",
        ("uint16", "bf16"): "bf16",
        ("float32", "tf32"): "tf32",
    }.get((mm.dtype, mm.precision))


def threads(mm):
    return 128 * (mm.shape[0] // 64 + 1)  # (one warpgroup loading, one multiplying each 64 rows)


def shared_bytes(mm, c_dtype, stages):
    """The dynamic shared memory of the block (wgmma_shared_bytes in wgmma.cuh): 1 KiB of alignment, ``stages``
    K-steps of A and B, C's tile in its dtype and the barriers."""
    m, n, _ = mm.shape
    tiles = _tensor_maps.tma_tiles("Matmul.batched", mm.shape, np.dtype(mm.dtype).itemsize, mm.arrangement)
    return 1024 + stages * sum(t[2] for t in tiles) + m * n * np.dtype(c_dtype).itemsize + stages * 20 + 16


class Wgmma(Implementation):
    name = "wgmma"
    members = ("pipe", "c")
    chosen = (
        "``tile`` on Hopper (sm_90) for fp16 or bf16 operands with a float32 accumulator, tiles of 64 or 128 "
        "rows and a multiple of 64 columns, and ``batched`` of 16-bit operands in 128-row tiles: a "
        "warp-specialized block of TMA loads and ``wgmma`` (its first compile takes seconds), for a batch in a "
        "persistent loop whose blocks take products in a dynamic order (one such launch of an ``ops`` at a "
        "time, in one stream); it stores C by TMA too (row-major, C of A's dtype or float32)"
    )

    def computes(self, mm, cc, c_dtype, ndim):
        if cc is None:
            return ndim == 3  # (the simulator's twin computes any batch)
        # Each warpgroup multiplies 64 rows by all N columns, N / 2 floats a thread (N = 256 with M = 128 spilled).
        m, n, k = mm.shape
        return (
            cc == (9, 0)
            and tma.fits(mm)
            and precision(mm) in ("fp16", "bf16")
            and m in (64, 128)
            and n % 64 == 0
            and n <= 384 - m * 3 // 2
            and k % 16 == 0
            and c_dtype in ("float32", mm.dtype)
            and shared_bytes(mm, c_dtype, self.stages(mm)) <= MAX_SHARED_BYTES
        )

    def preference(self, mm, cc, ndim):
        if ndim == 2:
            return 0
        return 2 if cc is None else 0 if mm.shape[0] == 128 else 1

    def takes(self, mm, a, b, c):
        return tma.operands_fit(mm, a, b) and _tensor_maps.fits(c, "row_major")  # (C goes out by TMA, row-major)

    def plan(self, name, mm, stages, c_dtype, ndim):
        return Plan(
            self.name,
            stages,
            (threads(mm), 1, 1),
            shared_bytes(mm, c_dtype, stages),
            "tiles" if ndim == 2 else "resident",
        )

    def prepare(self, name, mm, plan, a, b, c, stream):
        return _tensor_maps.prepare(name, mm, a, b, c, stream)

    def instance(self, name, mm, plan, td, args, call):
        ndim = CALLS[call]
        fused, prelude = _callback.fused(name, args, types.float32, ndim)
        m, n, k = mm.shape
        p = precision(mm)
        template = WGMMA.template(
            f"numba_tiles::wgmma_{call}",
            M=m,
            N=n,
            K=k,
            Stages=plan.stages,
            SharedBytes=plan.shared_bytes,
            RowA=ORDERS[mm.arrangement[0]],
            RowB=ORDERS[mm.arrangement[1]],
            P=CXX[p],
            PD=CXX["float32" if td.name == "float32" else p],
            TD=td.cxx,
        )
        scales = (Arg("alpha", types.float32, 1), Arg("beta", types.float32, 0))
        params = self.operand_params(mm, td, ndim) + coordinates(call) + scales
        return Instance(
            intrinsic=name,
            header=WGMMA,
            template=template,
            result=types.none,
            params=params + fused,
            prelude="\n".join((*_tensor_maps.CHECKS.values(), prelude)),
            threads=threads(mm),
        )


WGMMA_BLOCK = Wgmma()
