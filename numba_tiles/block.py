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


_ALGORITHMS = {
    "warp_reductions": "cub::BLOCK_REDUCE_WARP_REDUCTIONS",
    "raking": "cub::BLOCK_REDUCE_RAKING",
    "raking_commutative_only": "cub::BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY",
}


def parse_algorithm(name, value):
    if value not in _ALGORITHMS:
        raise error(name, f"algorithm {value!r} is not one of CUB's block reductions",
                    f"use one of {', '.join(map(repr, _ALGORITHMS))}")
    return value


def parse_items_per_thread(name, value):
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise error(name, f"items_per_thread must be a positive int, got {value!r}",
                    "pass the length of the thread-local array, e.g. items_per_thread=4")
    return value


def parse_broadcast(name, value):
    if not isinstance(value, bool):
        raise error(name, f"broadcast must be True or False, got {value!r}", "pass broadcast=True or leave it out")
    return value


def _reduce_rule(name, args):
    dtype, op, partial = ops.reduction(name, args)
    bx, by, bz = args["block_dim"]
    items = args["items_per_thread"]
    if isinstance(args["value"], types.Array):
        if items is None:
            raise error(name, "an array input needs items_per_thread",
                        "pass items_per_thread=N, the number of items each thread holds")
        value_type = args["value"]
    elif items not in (None, 1):
        raise error(name, f"items_per_thread={items} needs an array input, got a scalar {args['value']}",
                    "pass the thread-local array (cuda.local.array(items_per_thread, dtype))")
    else:
        value_type = dtype.numba
    flags = (str(partial).lower(), str(args["broadcast"]).lower())
    return Instance(
        intrinsic=name,
        header="block.cuh",
        template=f"numba_tiles::block_reduce<{dtype.cxx}, {op.cxx}, {bx}, {by}, {bz}, {items or 1}, "
        f"{_ALGORITHMS[args['algorithm']]}, {', '.join(flags)}>",
        result=dtype.numba,
        params=(("value", value_type, None), ("num_valid", types.int32, 0)),
    )


_REDUCE_CONSTS = {"op": ops.parse, "block_dim": parse_block_dim, "items_per_thread": parse_items_per_thread,
                  "algorithm": parse_algorithm, "broadcast": parse_broadcast}


@intrinsic(consts=_REDUCE_CONSTS, rule=_reduce_rule, simulate=simulator.block_reduce)
def block_reduce(value, op, *, block_dim, items_per_thread=None, num_valid=None, algorithm="warp_reductions",
                 broadcast=False):
    """Reduce values across the thread block with ``op``; the result is valid in thread 0 (every thread with ``broadcast``).

    Every thread of the block must call it (like ``cuda.syncthreads()``), with the same
    arguments but ``value``.

    - ``value``: one value per thread, or a thread-local array of ``items_per_thread`` values
      (the tile in blocked order: thread t holds items t*N to t*N+N-1); int32, int64, uint32,
      uint64, float32 or float64.
    - ``op``: ``"+"``, ``"*"``, ``"min"``, ``"max"``, ``"&"``, ``"|"``, ``"^"`` (bitwise ops on
      integers only), or ``operator.add``, ``min``, ``max``, ``operator.and_``, ..., ``numpy.add``, ...
    - ``block_dim``: the block shape the kernel is launched with, an int or a 2-/3-tuple; a
      compile-time constant (a literal or a module-level global).
    - ``items_per_thread``: the array's length, a compile-time constant (required with an array).
    - ``num_valid``: if given, only the first ``num_valid`` items of the tile (threads in linear
      order, ``x`` fastest) contribute; ``0`` gives the op's identity (``0`` for ``+``, ``+inf``
      or the type's maximum for ``min``, ...).
    - ``algorithm``: CUB's ``"warp_reductions"`` (default), ``"raking"`` or
      ``"raking_commutative_only"``.
    - ``broadcast``: ``True`` gives the result to every thread (one more barrier).

    Implemented by ``cub::BlockReduce``; safe to call several times in a row.

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
def block_sum(value, *, block_dim, items_per_thread=None, num_valid=None, algorithm="warp_reductions",
              broadcast=False):
    """Sum values across the thread block: ``block_reduce(value, "+", ...)``.

    The result is valid in thread 0 (every thread with ``broadcast``); see `block_reduce`.

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
