"""``"cp.async"``: the register form's own loop (``copied_batched`` and its kin in register_loops.cuh), A and B
copied into shared memory by the block's threads (16-byte ``cp.async``), multiplied on MMA atoms where they serve
(``mma_tile``, ``mma_gemm`` and ``mma_batched`` in mma_steps.cuh), else by cuBLASDx (``matmul_tile`` and the like
in matmul.cuh): any GPU from sm_80 on, any strides."""

from .. import _compile
from . import mma_tiles
from .base import Implementation, Plan, stage_bytes


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

    def instance(self, name, mm, plan, td, args, call):
        grid = mma_tiles.warp_grid(mm, _compile.typing_cc())
        function = f"numba_tiles::{'matmul' if grid is None else 'mma'}_{call}"
        return self.register_loop(name, mm, plan, td, args, call, function, grid=grid, T=mm._types[0].cxx)


CP_ASYNC = CpAsync()
