"""Block-level sorts of a tile: CUB's radix sort and merge sort (your own order)."""

import operator

from numba.cuda import types

from . import extending as ext
from . import ops, simulator
from ._collective import MOVE_CONSTS, block_shape, block_threads, check_shared, tile_dtype
from .extending import CUB, Arg, Instance, intrinsic

RADIX_SORT, MERGE_SORT = CUB.header("block_radix_sort.cuh"), CUB.header("block_merge_sort.cuh")


def _keys_and_values(name, args, header):
    """What the sorts share: (key dtype, params, their template arguments, their storage type)."""
    dtype = tile_dtype(name, args, "keys", allowed="iuf")
    check_shared(name, args, dtype)
    params = (Arg("keys", args["keys"]),)
    value = "cub::NullType"  # (CUB's "no values")
    if args["values"] is not None:
        values = tile_dtype(name, args, "values")
        check_shared(name, args, values)
        params, value = params + (Arg("values", args["values"]),), values.cxx
    shape = dict(K=dtype.cxx, V=value, **block_shape(args), IPT=args["items_per_thread"])
    return dtype, params, shape, header.template(f"numba_tiles::{name}_storage", **shape)


def _sort_rule(name, args):
    dtype, params, shape, storage = _keys_and_values(name, args, RADIX_SORT)
    for bit in ("begin_bit", "end_bit"):
        ext.given_integer(name, args, bit)
    return Instance(
        intrinsic=name,
        header=RADIX_SORT,
        template=RADIX_SORT.template(
            "numba_tiles::block_radix_sort", **shape, Descending=args["descending"], Striped=args["striped"]
        ),
        result=types.none,
        params=(*params, Arg("begin_bit", types.int32, 0), Arg("end_bit", types.int32, dtype.numpy.itemsize * 8)),
        storage=storage,
    )


@intrinsic(
    consts={**MOVE_CONSTS, "descending": ext.flag("descending"), "striped": ext.flag("striped")},
    rule=_sort_rule,
    simulate=simulator.block_radix_sort,
    per_thread=("keys", "values"),
)
def block_radix_sort(
    keys,
    *,
    block_dim,
    items_per_thread,
    values=None,
    descending=False,
    striped=False,
    begin_bit=None,
    end_bit=None,
    temp=None,
):
    """Sort the block's tile of ``keys`` (and ``values`` along with them) in place, by radix sort.

    - ``keys``: thread-local array of integers or floats (float16/32/64; -0.0 and +0.0 are equal
      keys, in their input order; NaNs last), in blocked arrangement.
    - ``values``: an optional thread-local array of any dtype, moved with its key.
    - ``descending``: largest first. Equal keys keep their order (the sort is stable).
    - ``striped``: leave the result striped (thread t holds ranks t, t+T, ...: coalesced stores)
      instead of blocked (thread t holds ranks t*N ... t*N+N-1).
    - ``begin_bit``, ``end_bit``: sort by these key bits only (run-time ints; all bits by default).
    {{temp}}

    Implemented by ``cub::BlockRadixSort``.

    Example::

        from numba import cuda, int32
        import numba_tiles as tiles

        @cuda.jit
        def sort_tiles(x):
            keys = cuda.local.array(4, int32)
            start = cuda.blockIdx.x * 512
            tiles.block_load(x[start:], keys, block_dim=128, items_per_thread=4)
            tiles.block_radix_sort(keys, block_dim=128, items_per_thread=4)
            tiles.block_store(x[start:], keys, block_dim=128, items_per_thread=4)

        cubin = tiles.compile(sort_tiles, "void(int32[::1])", arch="sm_90")  # no GPU needed
    """


# ``"<"`` (ascending), ``">"`` (descending) or a ``@cuda.jit(device=True)`` function ``less(a, b) -> bool``.
parse_compare = ops.predicate(
    {
        "<": ops.Predicate("<", "::cuda::std::less<>", operator.lt),
        ">": ops.Predicate(">", "::cuda::std::greater<>", operator.gt),
    },
    "pass '<', '>' or a @cuda.jit(device=True) function less(a, b) returning a bool",
)


def _merge_sort_rule(name, args):
    threads = block_threads(args)
    if threads & (threads - 1):
        raise ext.error(
            name,
            f"CUB's merge sort needs a power-of-two number of threads, got {threads}",
            "launch 32, 64, 128, 256, 512 or 1024 threads, or use block_radix_sort (any block)",
        )
    dtype, params, shape, storage = _keys_and_values(name, args, MERGE_SORT)
    less = args["compare"].bind(name, dtype)
    return Instance(
        intrinsic=name,
        header=MERGE_SORT,
        template=MERGE_SORT.template("numba_tiles::block_merge_sort", **shape, Less=less.cxx),
        result=types.none,
        params=params,
        storage=storage,
        **less.code,
    )


@intrinsic(
    consts={**MOVE_CONSTS, "compare": parse_compare},
    rule=_merge_sort_rule,
    simulate=simulator.block_merge_sort,
    per_thread=("keys", "values"),
)
def block_merge_sort(keys, compare="<", *, block_dim, items_per_thread, values=None, temp=None):
    """Sort the block's tile of ``keys`` (and ``values`` along with them) in place, by any comparison.

    - ``keys``: thread-local array of integers or floats, in blocked arrangement (thread t holds
      items t*N ... t*N+N-1); sorted, it is blocked again.
    - ``compare``: ``"<"`` (ascending, default), ``">"`` (descending), or a
      ``@cuda.jit(device=True)`` function ``less(a, b)`` returning True when a goes before b
      (a strict weak order; Numba compiles it to LTO-IR and nvJitLink inlines it).
    - ``values``: an optional thread-local array of any dtype, moved with its key.
    {{temp}}

    The sort is stable. Implemented by ``cub::BlockMergeSort``; `block_radix_sort` is faster for
    plain numeric order.

    Example::

        from numba import cuda, float32
        import numba_tiles as tiles

        @cuda.jit(device=True)
        def by_magnitude(a, b):
            return abs(a) < abs(b)

        @cuda.jit
        def sort_by_magnitude(x):
            keys = cuda.local.array(4, float32)
            start = cuda.blockIdx.x * 512
            tiles.block_load(x[start:], keys, block_dim=128, items_per_thread=4)
            tiles.block_merge_sort(keys, by_magnitude, block_dim=128, items_per_thread=4)
            tiles.block_store(x[start:], keys, block_dim=128, items_per_thread=4)

        cubin = tiles.compile(sort_by_magnitude, "void(float32[::1])", arch="sm_90")  # no GPU needed
    """
