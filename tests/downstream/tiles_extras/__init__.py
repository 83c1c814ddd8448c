"""tiles_extras: block-wide argmax and top-k, a downstream package's own intrinsics over CUB.

Declared with `numba_tiles.extending` over ``include/tiles_extras.cuh``; importing it makes
``block_argmax`` and ``block_topk`` callable in ``@cuda.jit`` kernels and device functions.
"""

from pathlib import Path

import numpy as np
from numba.cuda import types

from numba_tiles import extending as ext

EXTRAS = ext.library(
    "tiles_extras",
    Path(__file__).parent / "include",
    blame="This is a tiles_extras bug; please report it to tiles_extras",
)
HEADER = EXTRAS.header("tiles_extras.cuh")

_ORDERED = "iuf"  # what CUB's ArgMax and radix sort order: no complex


def _shape(args):
    return dict(zip(("BX", "BY", "BZ"), args["block_dim"]))


def _argmax(name, args, template, storage=None, **shape):
    """The `Instance` of an argmax over (value, index) pairs: ``template`` (and its ``storage``, if it
    takes one) of ``shape``, returning the pair."""
    dtype = ext.scalar(name, "value", args["value"], allowed=_ORDERED)
    ext.integer(name, "index", args["index"])
    return ext.Instance(
        intrinsic=name,
        header=HEADER,
        template=HEADER.template(f"tiles_extras::{template}", T=dtype.cxx, **shape),
        result=types.Tuple((dtype.numba, types.int32)),
        params=(ext.Arg("value", dtype.numba), ext.Arg("index", types.int32)),
        storage=HEADER.template(f"tiles_extras::{storage}", T=dtype.cxx, **shape) if storage else "",
    )


def _best(instance, pairs):
    """The largest value of (value, index) ``pairs`` and its index, the smallest of ties, as the GPU returns them."""
    value, index = max(pairs, key=lambda pair: (pair[0], -pair[1]))
    return np.dtype(str(instance.result[0])).type(value), np.int32(index)


def _argmax_rule(name, args):
    return _argmax(name, args, "block_argmax", storage="argmax_storage", **_shape(args))


def _simulate_argmax(instance, args):
    pairs, _ = ext.simulated_block(instance.intrinsic, args["block_dim"], (args["value"], int(args["index"])))
    return _best(instance, pairs)


@ext.intrinsic(consts={"block_dim": ext.block_dim}, rule=_argmax_rule, simulate=_simulate_argmax)
def block_argmax(value, index, *, block_dim, temp=None):
    """The block's largest ``value`` and the ``index`` its thread gave with it, as ``(value, index)`` in every thread.

    Of equal values, the smallest index wins. ``value``: an integer or float scalar per
    thread; ``index``: an int (cast to int32), e.g. the value's position in global memory.
    {{block_dim}}
    {{temp}}

    Example::

        from numba import cuda
        from tests.downstream.tiles_extras import block_argmax

        @cuda.jit
        def peak(x, out):
            i = cuda.grid(1)
            v, j = block_argmax(x[i], i, block_dim=128)
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = j
    """


def _warp_argmax_rule(name, args):
    return _argmax(name, args, "warp_argmax", Warp=args["warp_size"])  # (shuffles: no storage)


def _simulate_warp_argmax(instance, args):
    pairs, lane = ext.simulated_warp(instance.intrinsic, args["warp_size"], (args["value"], int(args["index"])))
    return _best(instance, pairs if lane == 0 else pairs[lane : lane + 1])  # (valid in lane 0 only, as on the GPU)


@ext.intrinsic(consts={"warp_size": ext.warp_size}, rule=_warp_argmax_rule, simulate=_simulate_warp_argmax)
def warp_argmax(value, index, *, warp_size=32):
    """The largest ``value`` of each logical warp and the ``index`` its lane gave with it, ``(value, index)``,
    valid in the warp's lane 0 (as CUB's warp reductions); of equal values, the smallest index wins.

    Logical warps are ``warp_size`` lanes (a power of two from 1 to 32) of the block's threads in
    linear order; every lane of one calls it. Implemented by ``cub::WarpReduce`` (shuffles).

    Example::

        from numba import cuda
        from tests.downstream.tiles_extras import warp_argmax

        @cuda.jit
        def peaks_of_8(x, out):
            i = cuda.grid(1)
            v, j = warp_argmax(x[i], i, warp_size=8)
            if i % 8 == 0:
                out[i // 8] = j
    """


def _topk_rule(name, args):
    items, out = args["items"], args["out"]
    if not isinstance(items, types.Array) or not isinstance(out, types.Array):
        raise ext.error(
            name,
            "items and out must be thread-local arrays",
            "pass cuda.local.array(items_per_thread, dtype) and cuda.local.array(k, dtype)",
        )
    dtype = ext.element(name, "items", items, allowed=_ORDERED)
    if ext.element(name, "out", out) != dtype:
        raise ext.error(name, f"out holds {out.dtype} but items hold {dtype.name}", "use one dtype for both")
    block_items = args["items_per_thread"] * int(np.prod(args["block_dim"]))
    if args["k"] > block_items:
        raise ext.error(
            name,
            f"k={args['k']} is more than the block's {block_items} items",
            f"pass k <= block threads x items_per_thread = {block_items}",
        )
    shape = dict(**_shape(args), IPT=args["items_per_thread"], K=args["k"])
    return ext.Instance(
        intrinsic=name,
        header=HEADER,
        template=HEADER.template("tiles_extras::block_topk", T=dtype.cxx, **shape),
        result=types.none,
        params=(ext.Arg("items", items), ext.Arg("out", out)),
        storage=HEADER.template("tiles_extras::topk_storage", T=dtype.cxx, **shape),
    )


def _simulate_topk(instance, args):
    count = args["items_per_thread"]
    tiles_, _ = ext.simulated_block(instance.intrinsic, args["block_dim"], list(args["items"][:count]))
    everything = np.array([item for tile in tiles_ for item in tile])
    args["out"][: args["k"]] = -np.sort(-everything)[: args["k"]]


@ext.intrinsic(
    consts={
        "k": ext.positive_int("k", 8),
        "block_dim": ext.block_dim,
        "items_per_thread": ext.positive_int("items_per_thread", 4),
    },
    rule=_topk_rule,
    simulate=_simulate_topk,
)
def block_topk(items, out, *, k, block_dim, items_per_thread, temp=None):
    """The block's ``k`` largest items, in descending order, into ``out`` in every thread.

    - ``items``: a thread-local array of ``items_per_thread`` values (integers or floats), not changed.
    - ``out``: a thread-local array of at least ``k`` items of the same dtype.
    - ``k``: a compile-time constant, at most the block's items.
    {{block_dim}}
    {{items_per_thread}}
    {{temp}}

    Implemented by ``cub::BlockRadixSort`` (descending), then the first ``k`` ranks through shared memory.

    Example::

        from numba import cuda, float32
        from tests.downstream.tiles_extras import block_topk

        @cuda.jit
        def top4(x, out):
            items = cuda.local.array(2, float32)
            best = cuda.local.array(4, float32)
            for j in range(2):
                items[j] = x[cuda.grid(1) * 2 + j]
            block_topk(items, best, k=4, block_dim=64, items_per_thread=2)
            if cuda.threadIdx.x == 0:
                for j in range(4):
                    out[cuda.blockIdx.x * 4 + j] = best[j]
    """
