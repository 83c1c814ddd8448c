"""``"tma"``: ``Matmul.batched`` by the register form's loop with A and B loaded by TMA (``tma_batched`` in
register_loops.cuh: on MMA atoms where they serve, ``mma_batched_tma`` in mma_steps.cuh, else by cuBLASDx), from
sm_90 on, for tiles whose lines TMA's swizzled boxes take; ``pipe`` holds A's and B's tensor maps
(`_tensor_maps.prepare`)."""

import numpy as np

from .. import _compile, _tensor_maps
from .. import extending as ext
from . import mma_tiles
from .base import Implementation, Plan, stage_bytes


def fits(mm):
    """Whether TMA can load ``mm``'s tiles (lines of 32, 64 or a multiple of 128 bytes)."""
    try:
        _tensor_maps.tma_tiles("Matmul", mm.shape, np.dtype(mm.dtype).itemsize, mm.arrangement)
    except ext.TilesError:
        return False
    return True


def operands_fit(mm, a, b):
    """Whether TMA describes the device arrays ``a`` and ``b`` in ``mm``'s arrangement (`_tensor_maps.fits`)."""
    return all(_tensor_maps.fits(x, order) for x, order in zip((a, b), mm.arrangement))


class Tma(Implementation):
    name = "tma"
    members = ("pipe", "c")
    chosen = (
        "``batched`` on sm_90 and later for other 16-bit tiles whose lines TMA loads (and for 64-row ones, "
        "where it was faster than the block above): the register form's loop with A and B loaded by TMA"
    )

    def computes(self, mm, cc, c_dtype, ndim):
        return ndim == 3 and (cc is None or cc >= (9, 0) and fits(mm))

    def preference(self, mm, cc, ndim):
        # Of 16-bit batches in 64-row tiles the loop was faster than the wgmma block on an H200; in 128-row ones not.
        return 1 if cc is None or mm._types[0].numpy.itemsize > 2 or mm.shape[0] == 128 else 0

    def takes(self, mm, a, b, c):
        return operands_fit(mm, a, b)

    def plan(self, name, mm, stages, c_dtype, ndim):
        """The dynamic shared memory of the TMA loop (matmul_batched_tma in matmul.cuh): ``stages`` tiles of A and
        of B (each a whole number of KiB, as TMA's swizzle wants them aligned), up to 1 KiB to align them, C's
        stage and the buffers' barriers. A stage that fits in one buffer's A and B tiles and goes out by the
        threads' copy (a C other than float32) takes no bytes of its own: it is written over the buffer the
        block has just multiplied (batched_tma_aliased)."""
        tiles = sum(
            box[2] for box in _tensor_maps.tma_tiles(name, mm.shape, mm._types[0].numpy.itemsize, mm.arrangement)
        )
        stage = stage_bytes(mm, c_dtype)
        tc, td = mm._types[1].numpy.itemsize, np.dtype(c_dtype).itemsize
        if not (td == 4 and td <= tc) and stage <= tiles:  # (a bulk copy of a float C reads the stage late)
            stage = 0
        return Plan(self.name, stages, mm.block_dim, 1008 + stages * tiles + stage + stages * 8, "products")

    def prepare(self, name, mm, plan, a, b, c, stream):
        return _tensor_maps.prepare(name, mm, a, b, None, stream)

    def instance(self, name, mm, plan, td, args, call):
        checks = _tensor_maps.CHECKS["batched_maps"] + "\n"
        grid = mma_tiles.warp_grid(mm, _compile.typing_cc())
        function = f"numba_tiles::{'matmul' if grid is None else 'mma'}_batched_tma"
        return self.register_loop(name, mm, plan, td, args, call, function, checks=checks, grid=grid)


TMA = Tma()
