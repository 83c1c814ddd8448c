"""Block-level intrinsics between neighbouring items and threads: adjacent differences, run boundaries
(discontinuities) and shuffles."""

import operator

import numpy as np
from numba.cuda import types

from . import extending as ext
from . import ops, simulator
from ._collective import DIM, ITEMS_OPTIONAL, MOVE_CONSTS, block_shape, tile_dtype, value_dtype
from .extending import CUB, Arg, Instance, Literal, intrinsic

ADJACENT_DIFFERENCE = CUB.header("block_adjacent_difference.cuh")
DISCONTINUITY, SHUFFLE = CUB.header("block_discontinuity.cuh"), CUB.header("block_shuffle.cuh")
_MINUS = ops.Op("-", "::cuda::std::minus", np.subtract, False)


def parse_difference(intrinsic, value):
    """``"-"`` (the default), any op of `block_reduce`, or a ``@cuda.jit(device=True)`` function of two items."""
    return _MINUS if value in ("-", "sub", operator.sub, np.subtract) else ops.parse(intrinsic, value)


def _adjacent_difference_rule(name, args):
    dtype = tile_dtype(name, args, "items")
    op = args["op"].bind(name, dtype)
    ops.check(name, op, dtype)
    has_neighbor = args["neighbor"] is not None
    if has_neighbor:
        ext.scalar(name, "neighbor", args["neighbor"])
    partial = ext.given_integer(name, args, "num_valid")
    if args["right"] and has_neighbor and partial:
        raise ext.error(
            name,
            "a right difference of a partial tile takes no neighbor (CUB has none)",
            "leave out neighbor (the last valid item keeps its value), or num_valid",
        )
    shape = dict(T=dtype.cxx, **block_shape(args))
    tail = dict(IPT=args["items_per_thread"], Right=args["right"], HasNeighbor=has_neighbor, Partial=partial)
    template = ADJACENT_DIFFERENCE.template(
        "numba_tiles::block_adjacent_difference", T=dtype.cxx, Op=op.cxx, **block_shape(args), **tail
    )
    storage = ADJACENT_DIFFERENCE.template("numba_tiles::block_adjacent_difference_storage", **shape)
    params = (Arg("items", args["items"]), Arg("neighbor", dtype.numba, 0), Arg("num_valid", types.int32, 0))
    fields = dict(result=types.none, params=params, storage=storage, **op.code)
    return Instance(intrinsic=name, header=ADJACENT_DIFFERENCE, template=template, **fields)


@intrinsic(
    consts={**MOVE_CONSTS, "op": parse_difference, "right": ext.flag("right")},
    rule=_adjacent_difference_rule,
    simulate=simulator.block_adjacent_difference,
    per_thread=("items",),
)
def block_adjacent_difference(
    items, op="-", *, block_dim, items_per_thread, right=False, neighbor=None, num_valid=None, temp=None
):
    """Replace each item of the block's tile by its difference with the item before it (or after it), in place.

    Item i becomes ``op(item i, item i-1)``; with ``right=True``, ``op(item i, item i+1)``. Every
    difference is of the input items. The tile's first item (last, with ``right``) has no
    neighbor in the tile: it keeps its value, or, if ``neighbor`` is given (the item just before
    the tile, or just after it), becomes ``op(item, neighbor)``.

    - ``items``: the thread-local array (any dtype).
    - ``op``: ``"-"`` (default), any op of `block_reduce`, or a ``@cuda.jit(device=True)``
      function of two items.
    {{block_dim}}
    {{items_per_thread}}
    - ``num_valid``: only the first ``num_valid`` items of the tile take part: items from
      ``num_valid`` on keep their values, and so does the last valid one with ``right``
      (which then takes no ``neighbor``).
    {{temp}}

    Implemented by ``cub::BlockAdjacentDifference``.

    Example::

        from numba import cuda, int32
        import numba_tiles as tiles

        @cuda.jit
        def differences(x, out):
            items = cuda.local.array(4, int32)
            start = cuda.blockIdx.x * 512
            tiles.block_load(x[start:], items, block_dim=128, items_per_thread=4)
            before = x[start - 1] if start > 0 else 0
            tiles.block_adjacent_difference(items, block_dim=128, items_per_thread=4, neighbor=before)
            tiles.block_store(out[start:], items, block_dim=128, items_per_thread=4)

        cubin = tiles.compile(differences, "void(int32[::1], int32[::1])", arch="sm_90")  # no GPU needed
    """


# ``"!="`` or a ``@cuda.jit(device=True)`` function ``differ(a, b)`` returning True where a run ends.
parse_differ = ops.predicate(
    {"!=": ops.Predicate("!=", "::cuda::std::not_equal_to<>", operator.ne)},
    "pass '!=' or a @cuda.jit(device=True) function differ(a, b) returning a bool",
)


def _discontinuity_rule(name, args):
    dtype = tile_dtype(name, args, "items")
    flags = [f for f in ("heads", "tails") if args[f] is not None]
    if not flags:
        raise ext.error(name, "it needs heads=, tails= or both", "pass a thread-local integer array to fill with flags")
    flag = tile_dtype(name, args, flags[0], allowed="iu")
    if len(flags) == 2:
        tile_dtype(name, args, "tails", like=flag)
    for edge, of in (("predecessor", "heads"), ("successor", "tails")):
        if args[edge] is not None:
            if args[of] is None:
                raise ext.error(
                    name,
                    f"{edge} only decides the {of} flag of an edge item, and no {of} are asked for",
                    f"pass {of}=..., or leave out {edge}",
                )
            ext.scalar(name, edge, args[edge])
    differ = args["compare"].bind(name, dtype)
    unused = f"::numba_tiles::array_ref<{flag.cxx}>{{}}"  # the flags not asked for: never touched
    shape = dict(**block_shape(args), IPT=args["items_per_thread"], Heads="heads" in flags, Tails="tails" in flags)
    neighbors = dict(HasPredecessor=args["predecessor"] is not None, HasSuccessor=args["successor"] is not None)
    template = DISCONTINUITY.template(
        "numba_tiles::block_discontinuity", T=dtype.cxx, Flag=flag.cxx, Op=differ.cxx, **shape, **neighbors
    )
    storage = DISCONTINUITY.template("numba_tiles::block_discontinuity_storage", T=dtype.cxx, **block_shape(args))
    outputs = (Arg(f, args[f]) if f in flags else Literal(f, unused) for f in ("heads", "tails"))
    edges = (Arg("predecessor", dtype.numba, 0), Arg("successor", dtype.numba, 0))
    fields = dict(result=types.none, params=(Arg("items", args["items"]), *outputs, *edges), storage=storage)
    return Instance(intrinsic=name, header=DISCONTINUITY, template=template, **fields, **differ.code)


@intrinsic(
    consts={**MOVE_CONSTS, "compare": parse_differ},
    rule=_discontinuity_rule,
    simulate=simulator.block_discontinuity,
    per_thread=("items", "heads", "tails"),
)
def block_discontinuity(
    items,
    *,
    block_dim,
    items_per_thread,
    heads=None,
    tails=None,
    compare="!=",
    predecessor=None,
    successor=None,
    temp=None,
):
    """Flag where runs of equal items start (``heads``) and end (``tails``) in the block's tile.

    ``heads[j]`` becomes 1 where item i (thread t's item j, i = t*N+j) differs from item i-1, and
    ``tails[j]`` 1 where it differs from item i+1, else 0. The tile's first item is always a
    head unless ``predecessor`` (the item before the tile) is given to compare it with; the
    last item always a tail unless ``successor`` is given. The items are not changed.

    - ``items``: the thread-local array (any dtype).
    - ``heads``, ``tails``: thread-local arrays of ``items_per_thread`` integers (e.g. uint8) to
      fill; pass one or both (both of one dtype).
    - ``compare``: ``"!="`` (default) or a ``@cuda.jit(device=True)`` function ``differ(a, b)``
      returning True when the earlier item ``a`` and the later ``b`` belong to different runs.
    {{block_dim}}
    {{items_per_thread}}
    {{temp}}

    Implemented by ``cub::BlockDiscontinuity``.

    Example::

        from numba import cuda, int32
        import numba_tiles as tiles

        @cuda.jit
        def runs_per_tile(x, out):                  # how many runs of equal values each tile of 512 holds
            items = cuda.local.array(4, int32)
            heads = cuda.local.array(4, int32)
            tiles.block_load(x[cuda.blockIdx.x * 512:], items, block_dim=128, items_per_thread=4)
            tiles.block_discontinuity(items, block_dim=128, items_per_thread=4, heads=heads)
            runs = tiles.block_sum(heads, block_dim=128, items_per_thread=4)
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = runs

        cubin = tiles.compile(runs_per_tile, "void(int32[::1], int32[::1])", arch="sm_90")  # no GPU needed
    """


_SHUFFLES = {"offset": False, "rotate": False, "up": True, "down": True}  # kind → takes a thread-local array


def _shuffle_rule(name, args):
    kind = args["kind"]
    dtype, value_type, items = value_dtype(name, args)
    if _SHUFFLES[kind] != isinstance(value_type, types.Array):
        raise ext.error(
            name,
            f"kind {kind!r} shuffles {'a thread-local array' if _SHUFFLES[kind] else 'one value'} "
            f"per thread, got {args['value']}",
            "use 'up' or 'down' for an array, 'offset' or 'rotate' for one value",
        )
    if _SHUFFLES[kind] and args["distance"] is not None:
        raise ext.error(name, f"kind {kind!r} always moves items by one", "leave out distance")
    ext.given_integer(name, args, "distance")
    shape = dict(T=dtype.cxx, **block_shape(args))
    template = SHUFFLE.template("numba_tiles::block_shuffle", **shape, IPT=items, Kind=f"numba_tiles::shuffle::{kind}")
    storage = SHUFFLE.template("numba_tiles::block_shuffle_storage", **shape)
    params = (Arg("value", value_type), Arg("distance", types.int32, 1))
    return Instance(
        intrinsic=name, header=SHUFFLE, template=template, result=dtype.numba, params=params, storage=storage
    )


@intrinsic(
    consts={"kind": ext.choice("kind", _SHUFFLES), "block_dim": DIM, "items_per_thread": ITEMS_OPTIONAL},
    rule=_shuffle_rule,
    simulate=simulator.block_shuffle,
    per_thread=("value",),
)
def block_shuffle(value, kind, *, block_dim, items_per_thread=None, distance=None, temp=None):
    """Move values between the block's threads: by ``distance`` threads, or the tile by one item.

    - ``kind="offset"``: returns the ``value`` of the thread ``distance`` ranks on (linear thread
      order, x fastest; ``distance`` a run-time int, 1 by default, may be negative); a thread
      whose source is outside the block gets its own ``value``.
    - ``kind="rotate"``: the same, wrapping around the block (any ``distance``).
    - ``kind="up"``: ``value`` is a thread-local array of ``items_per_thread`` items; the tile's
      item i becomes item i-1, in place (item 0 keeps its value). Returns the tile's last item
      (before the move) to every thread.
    - ``kind="down"``: item i becomes item i+1 (the last keeps its value); returns the tile's first item.
    {{block_dim}}
    {{temp}}

    Implemented by ``cub::BlockShuffle``.

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def next_thread(x, out):
            i = cuda.grid(1)
            out[i] = tiles.block_shuffle(x[i], "rotate", block_dim=128, distance=1)
    """
