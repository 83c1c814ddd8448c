"""Block-level intrinsics: every thread of the block calls them together (CUB's block collectives): loads and
stores, reductions, scans, exchanges and histograms here; sorts in `block_sort`, neighbours in `block_neighbors`."""

from numba.cuda import types

from . import extending as ext
from . import ops, simulator
from ._collective import (
    DIM,
    ITEMS_OPTIONAL,
    MOVE_CONSTS,
    block_shape,
    block_threads,
    check_shared,
    cub_names,
    tile_dtype,
    value_dtype,
)
from ._params import ARRANGEMENTS
from .block_neighbors import block_adjacent_difference, block_discontinuity, block_shuffle
from .block_sort import block_merge_sort, block_radix_sort
from .extending import CUB, STATIC_SHARED_BYTES, Arg, Instance, intrinsic

REDUCE, LOAD, SCAN = CUB.header("block_reduce.cuh"), CUB.header("block_load.cuh"), CUB.header("block_scan.cuh")
EXCHANGE, HISTOGRAM = CUB.header("block_exchange.cuh"), CUB.header("block_histogram.cuh")

_REDUCE_ALGORITHMS = cub_names("BLOCK_REDUCE", "warp_reductions", "raking", "raking_commutative_only")


def _reduce_rule(name, args):
    dtype, value_type, items = value_dtype(name, args)
    op, partial = ops.reduction(name, args, dtype)
    shape, tail = block_shape(args), dict(Algo=_REDUCE_ALGORITHMS[args["algorithm"]], Broadcast=args["broadcast"])
    head = dict(T=dtype.cxx, Op=op.cxx, **shape, IPT=items, Algo=tail["Algo"], Partial=partial)
    template = REDUCE.template("numba_tiles::block_reduce", **head, Broadcast=tail["Broadcast"])
    identity = ops.identity_value(op, dtype)
    params = (Arg("value", value_type), Arg("num_valid", types.int32, 0), Arg("identity", dtype.numba, identity))
    storage = REDUCE.template("numba_tiles::block_reduce_storage", T=dtype.cxx, **shape, **tail)
    return Instance(
        intrinsic=name, header=REDUCE, template=template, result=dtype.numba, params=params, storage=storage, **op.code
    )


_REDUCE_CONSTS = {
    "op": ops.parse,
    "block_dim": DIM,
    "items_per_thread": ITEMS_OPTIONAL,
    "algorithm": ext.choice("algorithm", _REDUCE_ALGORITHMS),
    "broadcast": ext.flag("broadcast"),
}


@intrinsic(consts=_REDUCE_CONSTS, rule=_reduce_rule, simulate=simulator.block_reduce, per_thread=("value",))
def block_reduce(
    value,
    op,
    *,
    block_dim,
    items_per_thread=None,
    num_valid=None,
    algorithm="warp_reductions",
    broadcast=False,
    temp=None,
):
    """Reduce values across the thread block with ``op``; the result is valid in thread 0 (every thread with
    ``broadcast``).

    Every thread of the block must call it (like ``cuda.syncthreads()``), with the same
    arguments but ``value``.

    - ``value``: one value per thread, or a thread-local array of ``items_per_thread`` values
      (the tile in blocked order: thread t holds items t*N to t*N+N-1); int8 to int64, uint8
      to uint64, float16, bfloat16 (one value per thread), float32, float64, complex64 or complex128.
    - ``op``: ``"+"``, ``"*"``, ``"min"``, ``"max"``, ``"&"``, ``"|"``, ``"^"`` (bitwise ops on
      integers only, min/max not on complex), or ``operator.add``, ``min``, ``max``,
      ``operator.and_``, ..., ``numpy.add``, ...; or a ``@cuda.jit(device=True)`` function of two
      values (integers, float32, float64), which takes no ``num_valid``.
    {{block_dim}}
    - ``items_per_thread``: the array's length, a compile-time constant (required with an array).
    - ``num_valid``: if given, only the first ``num_valid`` items of the tile (threads in linear
      order, ``x`` fastest) contribute; ``0`` gives the op's identity (``0`` for ``+``, ``+inf``
      or the type's maximum for ``min``, ...).
    - ``algorithm``: CUB's ``"warp_reductions"`` (default), ``"raking"`` or
      ``"raking_commutative_only"``.
    - ``broadcast``: ``True`` gives the result to every thread (one more barrier).
    {{temp}}

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


@intrinsic(
    consts=_REDUCE_CONSTS, rule=_reduce_rule, simulate=simulator.block_reduce, fixed={"op": "+"}, per_thread=("value",)
)
def block_sum(
    value, *, block_dim, items_per_thread=None, num_valid=None, algorithm="warp_reductions", broadcast=False, temp=None
):
    """Sum values across the thread block: ``block_reduce(value, "+", ...)``.

    The result is valid in thread 0 (every thread with ``broadcast``); see `block_reduce`.

    Example::

        from numba import cuda, float32
        import numba_tiles as tiles

        @cuda.jit
        def block_sums(x, out):
            i = cuda.grid(1)
            s = tiles.block_sum(x[i] if i < x.size else float32(0), block_dim=256)  # (0.0: a float64 sum)
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = s
    """


_LOAD_ALGORITHMS = cub_names(
    "BLOCK_LOAD", "direct", "striped", "vectorize", "transpose", "warp_transpose", "warp_transpose_timesliced"
)
_STORE_ALGORITHMS = cub_names("BLOCK_STORE", *_LOAD_ALGORITHMS)


def _whole_warps(name, args, what, instead):
    """Reject a block with a partial warp for CUB's warp-striped arrangement (each warp's 32 x N items
    in a row): BlockLoad and BlockStore static_assert whole warps for it, and BlockExchange, which
    they use, reads and writes past its storage without them."""
    if block_threads(args) % 32:
        raise ext.error(
            name,
            f"{what} needs a block of whole warps, got {block_threads(args)} threads",
            f"use a multiple of 32 threads, or {instead}",
        )


def _movement(name, args, array):
    """What block_load and block_store share: (dtype, template arguments, params, storage)."""
    dtype = tile_dtype(name, args, array)
    tile_dtype(name, args, "items", like=dtype)
    algorithm = args["algorithm"]
    if algorithm.startswith("warp_transpose"):
        _whole_warps(name, args, f"algorithm {algorithm!r}", "algorithm='transpose'")
    if algorithm in ("transpose", "warp_transpose", "warp_transpose_timesliced"):
        check_shared(name, args, dtype)
    table = _LOAD_ALGORITHMS if name == "block_load" else _STORE_ALGORITHMS
    shape = dict(T=dtype.cxx, **block_shape(args), IPT=args["items_per_thread"], Algo=table[algorithm])
    template_args = dict(
        shape, Contiguous=args[array].layout == "C", HasNumValid=ext.given_integer(name, args, "num_valid")
    )
    params = (Arg(array, args[array]), Arg("items", args["items"]), Arg("num_valid", types.int64, 0))
    storage = LOAD.template(f"numba_tiles::{name}_storage", **shape)
    return dtype, template_args, params, storage


_CACHE = {
    "default": "cub::LOAD_DEFAULT",
    "read_only": "cub::LOAD_LDG",
    "streaming": "cub::LOAD_CS",
    "global": "cub::LOAD_CG",
}


def _load_rule(name, args):
    dtype, template_args, params, storage = _movement(name, args, "src")
    has_default = args["oob_default"] is not None
    template = LOAD.template(
        "numba_tiles::block_load", **template_args, HasDefault=has_default, Mod=_CACHE[args["cache"]]
    )
    params += (Arg("oob_default", dtype.numba, 0),)
    return Instance(intrinsic=name, header=LOAD, template=template, result=types.none, params=params, storage=storage)


def _store_rule(name, args):
    dtype, template_args, params, storage = _movement(name, args, "dst")
    template = LOAD.template("numba_tiles::block_store", **template_args)
    return Instance(intrinsic=name, header=LOAD, template=template, result=types.none, params=params, storage=storage)


_LOAD_CONSTS = {
    **MOVE_CONSTS,
    "algorithm": ext.choice("algorithm", _LOAD_ALGORITHMS),
    "cache": ext.choice("cache", _CACHE),
}


@intrinsic(
    consts=_LOAD_CONSTS,
    rule=_load_rule,
    simulate=simulator.block_load,
    per_thread=("items",),
)
def block_load(
    src,
    items,
    *,
    block_dim,
    items_per_thread,
    algorithm="vectorize",
    num_valid=None,
    oob_default=None,
    cache="default",
    temp=None,
):
    """Load the tile that starts at ``src[0]`` into every thread's ``items``, cooperatively.

    The tile is ``block threads × items_per_thread`` items. Thread t gets items
    t*N ... t*N+N-1 (the blocked arrangement, N = ``items_per_thread``), except with
    ``algorithm="striped"``, where it gets t, t+T, t+2T, ... (T = block threads).

    - ``src``: a 1-D global array, usually a slice ``x[tile_start:]``; contiguous.
    - ``items``: the thread-local array, ``cuda.local.array(items_per_thread, dtype)``, same dtype.
    - ``algorithm``: ``"vectorize"`` (default: each thread's items read as 16-byte words where ``src`` is
      aligned and they fill whole words, item by item otherwise), CUB's ``"direct"`` (item by item),
      ``"striped"``, ``"transpose"``, ``"warp_transpose"`` or ``"warp_transpose_timesliced"`` (coalesced
      reads through shared memory). A partial tile stays vectorized: only a thread's last partial 16 bytes
      are read item by item.
    - ``num_valid``: load only the first ``num_valid`` items. Even without it, nothing past the end
      of ``src`` is read: a tile that runs off the array is a partial tile.
    - ``cache``: how the loads use the caches (CUB's cache modifiers): ``"default"``,
      ``"read_only"`` (the non-coherent read-only path, for data no thread writes while the
      kernel runs), ``"streaming"`` (evict first: data read once) or ``"global"`` (L2 only).
    - ``oob_default``: the value of the items that are not loaded (they are left as they were without it).
    {{temp}}

    Example::

        from numba import cuda, float32
        import numba_tiles as tiles

        @cuda.jit
        def tile_sums(x, out):
            items = cuda.local.array(4, float32)
            start = cuda.blockIdx.x * 128 * 4
            tiles.block_load(x[start:], items, block_dim=128, items_per_thread=4, oob_default=0)
            s = tiles.block_sum(items, block_dim=128, items_per_thread=4)
            if cuda.threadIdx.x == 0:
                out[cuda.blockIdx.x] = s
    """


@intrinsic(
    consts={**MOVE_CONSTS, "algorithm": ext.choice("algorithm", _STORE_ALGORITHMS)},
    rule=_store_rule,
    simulate=simulator.block_store,
    per_thread=("items",),
)
def block_store(dst, items, *, block_dim, items_per_thread, algorithm="vectorize", num_valid=None, temp=None):
    """Store every thread's ``items`` to the tile that starts at ``dst[0]``, cooperatively.

    The arrangement, ``algorithm`` and ``temp`` are as for `block_load` (``"vectorize"``, the default,
    ``"direct"``, ``"striped"``, ``"transpose"``, ``"warp_transpose"``, ``"warp_transpose_timesliced"``).
    Only the first ``num_valid`` items are written if it is given, and never past the end of ``dst``.
    ``items`` are left as they were (CUB's transposing stores rearrange theirs).

    Example::

        from numba import cuda, float32
        import numba_tiles as tiles

        @cuda.jit
        def double(x, out):
            items = cuda.local.array(4, float32)
            start = cuda.blockIdx.x * 128 * 4
            tiles.block_load(x[start:], items, block_dim=128, items_per_thread=4)
            for j in range(4):
                items[j] *= 2
            tiles.block_store(out[start:], items, block_dim=128, items_per_thread=4)
    """


_SCAN_ALGORITHMS = cub_names("BLOCK_SCAN", "raking", "raking_memoize", "warp_scans")


def _scan_rule(name, args):
    dtype, value_type, items = value_dtype(name, args)
    op, has_initial, identity = ops.scan(name, args, dtype)
    algo = _SCAN_ALGORITHMS[args["algorithm"]]
    head = dict(T=dtype.cxx, Op=op.cxx, **block_shape(args), IPT=items, Algo=algo, Exclusive=args["exclusive"])
    is_array = isinstance(value_type, types.Array)
    storage = SCAN.template("numba_tiles::block_scan_storage", T=dtype.cxx, **block_shape(args), Algo=algo)
    if args["prefix"] is not None:
        if args["aggregate"] or args["initial_value"] is not None:
            raise ext.error(
                name,
                "prefix carries the running total: it cannot be combined with aggregate or initial_value",
                "leave out aggregate and initial_value (the prefix is the initial value; read the new "
                "prefix for the running total)",
            )
        tile_dtype(name, args, "prefix", like=dtype)
        template = SCAN.template("numba_tiles::block_scan_prefix", **head)
        params = (Arg("value", value_type), Arg("prefix", args["prefix"]))
        result = types.none if is_array else dtype.numba
        return Instance(
            intrinsic=name, header=SCAN, template=template, result=result, params=params, storage=storage, **op.code
        )
    aggregate = args["aggregate"]
    if is_array:
        result = dtype.numba if aggregate else types.none
    else:
        result = types.UniTuple(dtype.numba, 2) if aggregate else dtype.numba
    function = "block_scan_aggregate" if aggregate else "block_scan"
    template = SCAN.template(f"numba_tiles::{function}", **head, HasInitial=has_initial)
    params = (Arg("value", value_type), Arg("initial_value", dtype.numba, identity))
    return Instance(
        intrinsic=name, header=SCAN, template=template, result=result, params=params, storage=storage, **op.code
    )


@intrinsic(
    consts={
        "op": ops.parse,
        "block_dim": DIM,
        "items_per_thread": ITEMS_OPTIONAL,
        "exclusive": ext.flag("exclusive"),
        "aggregate": ext.flag("aggregate"),
        "algorithm": ext.choice("algorithm", _SCAN_ALGORITHMS),
    },
    rule=_scan_rule,
    simulate=simulator.block_scan,
    per_thread=("value",),
)
def block_scan(
    value,
    op="+",
    *,
    block_dim,
    items_per_thread=None,
    exclusive=False,
    initial_value=None,
    aggregate=False,
    prefix=None,
    algorithm="raking",
    temp=None,
):
    """Prefix-scan the block's values with ``op`` (a sum by default): inclusive, or ``exclusive``.

    Items are in linear thread order (``x`` fastest), each thread's ``items_per_thread`` in a row.

    - ``value``: one value per thread, whose scanned value is returned; or a thread-local array,
      scanned in place. Types and ``op`` as for `block_reduce` (min/max/bitwise need no complex).
    - ``exclusive``: item i gets op(initial, items 0..i-1); ``initial_value`` defaults to the op's
      identity (0 for ``+``), so every output is defined. An inclusive scan with
      ``initial_value`` starts from it.
    - ``aggregate=True``: also returns the block's total (of the inputs, without
      ``initial_value``): ``(scanned, total)`` for a scalar, ``total`` for an array.
    - ``prefix``: a one-item thread-local array holding a running total, the same in every thread:
      the scan starts from it and it becomes op(prefix, total): scanning a long segment tile by tile.
    - ``algorithm``: CUB's ``"raking"`` (default), ``"raking_memoize"`` or ``"warp_scans"``.
    {{temp}}

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def offsets(counts, out):
            i = cuda.grid(1)
            start, total = tiles.block_scan(counts[i], exclusive=True, aggregate=True, block_dim=256)
            out[i] = start
    """


def _exchange_rule(name, args):
    dtype = tile_dtype(name, args, "items")
    if "warp_striped" in args["arrangement"]:
        _whole_warps(name, args, "a warp-striped arrangement", "'blocked_to_striped' or 'striped_to_blocked'")
    check_shared(name, args, dtype)
    shape = dict(T=dtype.cxx, **block_shape(args), IPT=args["items_per_thread"])
    kind = f"numba_tiles::exchange::{args['arrangement']}"
    template = EXCHANGE.template("numba_tiles::block_exchange", **shape, Kind=kind)
    storage = EXCHANGE.template("numba_tiles::block_exchange_storage", **shape)
    params = (Arg("items", args["items"]),)
    return Instance(
        intrinsic=name, header=EXCHANGE, template=template, result=types.none, params=params, storage=storage
    )


@intrinsic(
    consts={**MOVE_CONSTS, "arrangement": ext.choice("arrangement", ARRANGEMENTS)},
    rule=_exchange_rule,
    simulate=simulator.block_exchange,
    per_thread=("items",),
)
def block_exchange(items, arrangement, *, block_dim, items_per_thread, temp=None):
    """Rearrange the block's tile in place between arrangements, through shared memory.

    ``arrangement`` is ``"striped_to_blocked"``, ``"blocked_to_striped"``,
    ``"warp_striped_to_blocked"`` or ``"blocked_to_warp_striped"``. Blocked: thread t holds
    items t*N ... t*N+N-1 (N = ``items_per_thread``). Striped: thread t holds t, t+T, t+2T, ...
    (T = block threads). Warp-striped: the same within each warp's 32*N items.
    Implemented by ``cub::BlockExchange``. ``temp``: as for `block_load`.

    Example::

        from numba import cuda, float32
        import numba_tiles as tiles

        @cuda.jit
        def blocked(x, out):
            items = cuda.local.array(4, float32)
            for j in range(4):                      # coalesced, striped reads
                items[j] = x[cuda.threadIdx.x + 128 * j]
            tiles.block_exchange(items, "striped_to_blocked", block_dim=128, items_per_thread=4)
            for j in range(4):
                out[cuda.threadIdx.x * 4 + j] = items[j]
    """


_HISTOGRAM_ALGORITHMS = {**cub_names("BLOCK_HISTO", "sort", "atomic"), "lanes": None}  # ("lanes": our own)
_COUNTERS = ("int32", "uint32", "uint64")
LANE_COPIES = 32  # "lanes": a copy of the counters per lane of a warp (no bank conflicts; see block_histogram.cuh)
_LANES_BYTES = 32 * 1024  # the most shared memory the default algorithm gives the copies: 256 bins


def _histogram_algorithm(args):
    """The call's algorithm: as given, or by default "lanes" where its copies take at most _LANES_BYTES, else
    "atomic" (each measured against the other and CUB's "sort" on an H200: the performance page's histogram row)."""
    if args["algorithm"] is not None:
        return args["algorithm"]
    return "lanes" if args["bins"] * LANE_COPIES * 4 <= _LANES_BYTES else "atomic"


def _histogram_rule(name, args):
    dtype = tile_dtype(name, args, "items", allowed="iu")
    counter = tile_dtype(name, args, "histogram", allowed="iu")
    if counter.name not in _COUNTERS:
        raise ext.error(name, f"histogram holds {counter.name}", f"use counters of {', '.join(_COUNTERS)}")
    algorithm = _histogram_algorithm(args)
    common = dict(**block_shape(args), IPT=args["items_per_thread"], Bins=args["bins"])
    params = (Arg("items", args["items"]), Arg("histogram", args["histogram"]))
    if algorithm == "lanes":
        # The copies, and room for the block's own counters of 8 bytes at most (a static shared array beside them).
        need = args["bins"] * (LANE_COPIES * 4 + 8)
        if need > STATIC_SHARED_BYTES:
            raise ext.error(
                name,
                f"algorithm='lanes' keeps {LANE_COPIES} copies of the {args['bins']} counters: "
                f"with the counters themselves {need} bytes, over the {STATIC_SHARED_BYTES} of shared "
                "memory a block can have",
                "use algorithm='atomic' for this many bins",
            )
        lanes = dict(T=dtype.cxx, Counter=counter.cxx, **common, Copies=LANE_COPIES, Accumulate=args["accumulate"])
        storage = HISTOGRAM.template("numba_tiles::lanes_storage", Bins=args["bins"], Copies=LANE_COPIES)
        template = HISTOGRAM.template("numba_tiles::block_histogram_lanes", **lanes)
        return Instance(
            intrinsic=name, header=HISTOGRAM, template=template, result=types.none, params=params, storage=storage
        )
    if algorithm == "sort":  # (it radix-sorts the tile in shared memory first)
        check_shared(name, args, dtype)
    shape = dict(**common, Algo=_HISTOGRAM_ALGORITHMS[algorithm])
    template = HISTOGRAM.template(
        "numba_tiles::block_histogram", T=dtype.cxx, Counter=counter.cxx, **shape, Accumulate=args["accumulate"]
    )
    storage = HISTOGRAM.template("numba_tiles::block_histogram_storage", T=dtype.cxx, **shape)
    return Instance(
        intrinsic=name, header=HISTOGRAM, template=template, result=types.none, params=params, storage=storage
    )


@intrinsic(
    consts={
        **MOVE_CONSTS,
        "bins": ext.positive_int("bins", 256),
        "algorithm": ext.choice("algorithm", _HISTOGRAM_ALGORITHMS, optional=True),
        "accumulate": ext.flag("accumulate"),
    },
    rule=_histogram_rule,
    simulate=simulator.block_histogram,
    per_thread=("items",),
)
def block_histogram(
    items, histogram, *, block_dim, items_per_thread, bins, algorithm=None, accumulate=False, temp=None
):
    """Count the block's items into ``histogram[0:bins]``; each item is a bin index in [0, bins).

    - ``items``: thread-local array of integers (e.g. uint8 samples for 256 bins).
    - ``histogram``: ``bins`` counters (int32, uint32 or uint64), usually
      ``cuda.shared.array(bins, uint32)``; zeroed first, or added to with ``accumulate=True``.
      On return the counts are complete and visible to every thread of the block.
    - ``algorithm``: ``"lanes"`` (shared atomics into a copy of the counters per lane of a warp, which never
      collide in a memory bank, then summed), CUB's ``"atomic"`` (shared atomics into ``histogram``) or CUB's
      ``"sort"`` (sort the tile, then count its runs). By default ``"lanes"`` up to 256 bins, else ``"atomic"``.
    {{temp}}

    Items outside [0, bins) are undefined behaviour, as in CUB; ``NUMBA_TILES_DEBUG=1`` traps on them.

    Example::

        from numba import cuda, uint8, uint32
        import numba_tiles as tiles

        @cuda.jit
        def histogram256(x, out):
            items = cuda.local.array(4, uint8)
            tiles.block_load(x[cuda.blockIdx.x * 512:], items, block_dim=128, items_per_thread=4)
            counts = cuda.shared.array(256, uint32)
            tiles.block_histogram(items, counts, block_dim=128, items_per_thread=4, bins=256)
            for b in range(cuda.threadIdx.x, 256, 128):
                cuda.atomic.add(out, b, counts[b])

        cubin = tiles.compile(histogram256, "void(uint8[::1], uint32[::1])", arch="sm_90")  # no GPU needed
    """


__all__ = [
    "block_adjacent_difference",
    "block_discontinuity",
    "block_exchange",
    "block_histogram",
    "block_load",
    "block_merge_sort",
    "block_radix_sort",
    "block_reduce",
    "block_scan",
    "block_shuffle",
    "block_store",
    "block_sum",
]
