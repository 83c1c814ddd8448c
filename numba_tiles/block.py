"""Block-level intrinsics: every thread of the block calls them together (CUB's block collectives)."""

from numba.cuda import types

from . import ops, simulator
from ._errors import error
from ._spec import Instance, intrinsic

MAX_THREADS = 1024
_LIMITS = (1024, 1024, 64)  # CUDA's per-dimension block limits


def parse_block_dim(name, value):
    """``256`` or ``(16, 16)`` or ``(8, 8, 4)`` → ``(x, y, z)``, checked against CUDA's limits."""
    dims = value if isinstance(value, tuple) else (value,)
    if not (1 <= len(dims) <= 3 and all(isinstance(d, int) and not isinstance(d, bool) for d in dims)):
        raise error(name, f"block_dim must be an int or a tuple of 1 to 3 ints, got {value!r}",
                         "pass the launch's block shape, e.g. block_dim=256 or block_dim=(16, 16)")
    dims = tuple(dims) + (1,) * (3 - len(dims))
    threads = dims[0] * dims[1] * dims[2]
    if min(dims) < 1 or threads > MAX_THREADS or any(d > lim for d, lim in zip(dims, _LIMITS)):
        raise error(name, f"block_dim={value!r} is not a valid CUDA block ({threads} threads)",
                         f"use at most {MAX_THREADS} threads in all, each dimension within {_LIMITS}")
    return dims


def _reduce_rule(name, args):
    dtype, op, partial = ops.reduction(name, args)
    bx, by, bz = args["block_dim"]
    return Instance(
        intrinsic=name,
        header="block.cuh",
        template=f"numba_tiles::block_reduce<{dtype.cxx}, {op.cxx}, {bx}, {by}, {bz}, {str(partial).lower()}>",
        result=dtype.numba,
        params=(("value", dtype.numba, None), ("num_valid", types.int32, 0)),
    )


_REDUCE_CONSTS = {"op": ops.parse, "block_dim": parse_block_dim}


@intrinsic(consts=_REDUCE_CONSTS, rule=_reduce_rule, simulate=simulator.block_reduce)
def block_reduce(value, op, *, block_dim, num_valid=None):
    """Reduce one value per thread across the thread block with ``op``; the result is valid in thread 0.

    Every thread of the block must call it (like ``cuda.syncthreads()``), with the same ``op``,
    ``block_dim`` and ``num_valid``.

    - ``value``: int32, int64, uint32, uint64, float32 or float64.
    - ``op``: ``"+"``, ``"*"``, ``"min"``, ``"max"``, ``"&"``, ``"|"``, ``"^"`` (bitwise ops on
      integers only), or ``operator.add``, ``min``, ``max``, ``operator.and_``, ..., ``numpy.add``, ...
    - ``block_dim``: the block shape the kernel is launched with, an int or a 2-/3-tuple; a
      compile-time constant (a literal or a module-level global).
    - ``num_valid``: if given, only the first ``num_valid`` threads (in linear thread order,
      ``x`` fastest) contribute; ``0`` gives the op's identity (``0`` for ``+``, ``+inf`` or the
      type's maximum for ``min``, ...).

    Implemented by ``cub::BlockReduce`` (warp reductions); safe to call several times in a row.

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def block_max(x, out):
            i = cuda.grid(1)
            m = tiles.block_reduce(x[i], "max", block_dim=128)
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = m
    """


@intrinsic(consts=_REDUCE_CONSTS, rule=_reduce_rule, simulate=simulator.block_reduce,
           fixed={"op": "+"})
def block_sum(value, *, block_dim, num_valid=None):
    """Sum one value per thread across the thread block: ``block_reduce(value, "+", ...)``.

    The result is valid in thread 0. See `block_reduce` for ``block_dim`` and ``num_valid``.

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def block_sums(x, out):
            i = cuda.grid(1)
            s = tiles.block_sum(x[i] if i < x.size else 0.0, block_dim=256)
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = s
    """
