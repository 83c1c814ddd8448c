"""Warp-level intrinsics: the lanes of each logical warp call them together (CUB's warp collectives)."""

from numba.cuda import types

from . import ops, simulator
from ._errors import error
from ._spec import Instance, intrinsic


def parse_warp_size(name, value):
    """A logical warp size: a power of two from 1 to 32."""
    if not isinstance(value, int) or isinstance(value, bool) or value not in (1, 2, 4, 8, 16, 32):
        raise error(name, f"warp_size must be a power of two from 1 to 32, got {value!r}",
                    "pass warp_size=32 (the default), 16, 8, 4, 2 or 1")
    return value


def _reduce_rule(name, args):
    dtype, op, partial = ops.reduction(name, args)
    return Instance(
        intrinsic=name,
        header="warp.cuh",
        template=f"numba_tiles::warp_reduce<{dtype.cxx}, {op.cxx}, {args['warp_size']}, {str(partial).lower()}>",
        result=dtype.numba,
        params=(("value", dtype.numba, None), ("num_valid", types.int32, 0)),
    )


_REDUCE_CONSTS = {"op": ops.parse, "warp_size": parse_warp_size}


@intrinsic(consts=_REDUCE_CONSTS, rule=_reduce_rule, simulate=simulator.warp_reduce)
def warp_reduce(value, op, *, warp_size=32, num_valid=None):
    """Reduce one value per lane across each logical warp with ``op``; the result is valid in its lane 0.

    The block's threads, in linear order, form logical warps of ``warp_size`` lanes (a power of
    two from 1 to 32, a compile-time constant); all lanes of a logical warp must call it together,
    with the same ``op`` and ``num_valid``. ``value`` and ``op`` are as for `block_reduce`. With
    ``num_valid``, only the first ``num_valid`` lanes of each logical warp contribute; ``0`` gives
    the op's identity. Implemented by ``cub::WarpReduce`` (shuffles; ``REDUX`` for 32-bit integer
    sums, min and max over full warps on sm_80+); it uses no shared memory.

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def quad_max(x, out):
            i = cuda.grid(1)
            m = tiles.warp_reduce(x[i], "max", warp_size=4)
            if i % 4 == 0:
                out[i // 4] = m
    """


@intrinsic(consts=_REDUCE_CONSTS, rule=_reduce_rule, simulate=simulator.warp_reduce, fixed={"op": "+"})
def warp_sum(value, *, warp_size=32, num_valid=None):
    """Sum one value per lane across each logical warp: ``warp_reduce(value, "+", ...)``, valid in lane 0.

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def warp_sums(x, out):
            i = cuda.grid(1)
            s = tiles.warp_sum(x[i])
            if cuda.laneid == 0:
                out[i // 32] = s
    """
