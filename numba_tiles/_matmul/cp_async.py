"""``"cp.async"``: the register form's own loop (``matmul_tile`` and ``matmul_batched`` in matmul.cuh), A and B
copied into shared memory by the block's threads (16-byte ``cp.async``), multiplied by cuBLASDx: any GPU from
sm_80 on, any strides."""

from numba.cuda import types

from .. import _callback
from ..extending import Arg, Instance, Literal
from .base import MATMUL, SHARED, Implementation, Plan, c_precision, instantiate, stage_bytes


class CpAsync(Implementation):
    name = "cp.async"
    members = ("a", "b", "c")
    chosen = (
        "otherwise, and first for batches of float32 and float64: the register form's loop, A and B copied by "
        "the threads (any GPU from sm_80 on, any strides)"
    )

    def computes(self, mm, cc, c_dtype, ndim):
        return True

    def preference(self, mm, cc, ndim):
        # Of a batch of 4- and 8-byte operands (float32, float64) the threads' copies were faster than TMA's.
        return 0 if ndim == 3 and (cc is None or mm._types[0].numpy.itemsize > 2) else 3

    def plan(self, name, mm, stages, c_dtype, ndim):
        # (copied_bytes in matmul.cuh: ``stages`` tiles of A and B, and C's stage)
        shared = stages * mm.shared_memory_bytes + stage_bytes(mm, c_dtype)
        return Plan(self.name, stages, mm.block_dim, shared, "tiles" if ndim == 2 else "even")

    def instance(self, name, mm, plan, td, args, ndim):
        ta, tc = mm._types
        _, result = c_precision(mm, name, "c", td)
        fused, prelude = _callback.fused(name, args, tc.numba, ndim)
        function = "numba_tiles::matmul_tile" if ndim == 2 else "numba_tiles::matmul_batched"
        template = instantiate(
            mm,
            function,
            Stages=plan.stages,
            SharedBytes=plan.shared_bytes,
            T=ta.cxx,
            TC=tc.cxx,
            PD=result,
            TD=td.cxx,
            TS="unsigned char",
        )
        tile = (Arg("i", types.int64), Arg("j", types.int64)) if ndim == 2 else ()
        params = (
            self.operand_params(mm, td, ndim)
            + tile
            + (Literal("shared", SHARED), Arg("alpha", tc.numba, 1), Arg("beta", tc.numba, 0))
        )
        return Instance(
            intrinsic=name,
            header=MATMUL,
            template=template,
            result=types.none,
            params=params + fused,
            prelude=prelude,
            threads=plan.threads,
        )


CP_ASYNC = CpAsync()
