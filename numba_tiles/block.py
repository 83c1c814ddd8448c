"""Block-level intrinsics: every thread of the block calls them together (CUB's block collectives)."""

import operator

import numpy as np
from numba.cuda import types

from . import extending as ext, ops, simulator
from ._params import ARRANGEMENTS
from .extending import CUB, STATIC_SHARED_BYTES, Instance, intrinsic

REDUCE, LOAD, SCAN = CUB.header("block_reduce.cuh"), CUB.header("block_load.cuh"), CUB.header("block_scan.cuh")
EXCHANGE, HISTOGRAM = CUB.header("block_exchange.cuh"), CUB.header("block_histogram.cuh")
RADIX_SORT, MERGE_SORT = CUB.header("block_radix_sort.cuh"), CUB.header("block_merge_sort.cuh")

_DIM = ext.block_dim
_ITEMS = ext.positive_int("items_per_thread", 4)
_ITEMS_OPTIONAL = ext.positive_int("items_per_thread", 4, optional=True)


def _shape(args):
    """The block shape as the C++ templates name it."""
    return dict(zip(("BX", "BY", "BZ"), args["block_dim"]))


def _threads(args):
    x, y, z = args["block_dim"]
    return x * y * z


def _tile(name, args, param, like=None, allowed=None):
    """The `Dtype` of a thread-local (or global) array argument ``param``; ``like`` = the dtype it must share."""
    ty = args[param]
    if not isinstance(ty, types.Array):
        raise ext.error(name, f"{param} must be an array, got {ty}",
                    f"pass a thread-local array, cuda.local.array(items_per_thread, dtype), as {param}")
    dtype = ext.element(name, param, ty, allowed)
    if like is not None and dtype != like:
        raise ext.error(name, f"{param} holds {dtype.name} but the other array holds {like.name}",
                    "use arrays of one dtype (cast the items first)")
    return dtype


def _value(name, args):
    """(dtype, entry type, items per thread) of a ``value`` that is a scalar or a thread-local array."""
    value, items = args["value"], args["items_per_thread"]
    dtype = ext.element(name, "value", value)
    if isinstance(value, types.Array):
        if items is None:
            raise ext.error(name, "an array input needs items_per_thread",
                        "pass items_per_thread=N, the number of items each thread holds")
        return dtype, value, items
    if items not in (None, 1):
        raise ext.error(name, f"items_per_thread={items} needs an array input, got a scalar {value}",
                    "pass the thread-local array (cuda.local.array(items_per_thread, dtype))")
    return dtype, dtype.numba, 1


def _check_shared(name, args, *arrays):
    """Reject at typing a tile that cannot fit in static shared memory: the collectives that stage it
    there (transposes, exchanges, sorts) need at least its bytes. (NVRTC checks CUB's exact size later.)"""
    need = _threads(args) * args["items_per_thread"] * sum(d.numpy.itemsize for d in arrays)
    if need > STATIC_SHARED_BYTES:
        raise ext.error(name, f"a tile of {_threads(args)} threads x {args['items_per_thread']} items needs at least "
                    f"{need} bytes of shared memory, over the {STATIC_SHARED_BYTES} a block can have",
                    "use fewer items_per_thread or threads, or a smaller dtype")


_REDUCE_ALGORITHMS = {
    "warp_reductions": "cub::BLOCK_REDUCE_WARP_REDUCTIONS",
    "raking": "cub::BLOCK_REDUCE_RAKING",
    "raking_commutative_only": "cub::BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY",
}


def _reduce_rule(name, args):
    dtype, value_type, items = _value(name, args)
    op, partial = ops.reduction(name, args, dtype)
    algo = _REDUCE_ALGORITHMS[args["algorithm"]]
    return Instance(
        intrinsic=name,
        header=REDUCE,
        template=REDUCE.template("numba_tiles::block_reduce", T=dtype.cxx, Op=op.cxx, **_shape(args), IPT=items,
                                 Algo=algo, Partial=partial, Broadcast=args["broadcast"]),
        result=dtype.numba,
        params=(("value", value_type, None), ("num_valid", types.int32, 0),
                ("identity", dtype.numba, ops.identity_value(op, dtype))),
        storage=REDUCE.template("numba_tiles::block_reduce_storage", T=dtype.cxx, **_shape(args), Algo=algo,
                                Broadcast=args["broadcast"]),
        **op.code,
    )


_REDUCE_CONSTS = {"op": ops.parse, "block_dim": _DIM, "items_per_thread": _ITEMS_OPTIONAL,
                  "algorithm": ext.choice("algorithm", _REDUCE_ALGORITHMS),
                  "broadcast": ext.flag("broadcast")}


@intrinsic(consts=_REDUCE_CONSTS, rule=_reduce_rule, simulate=simulator.block_reduce,
           per_thread=("value",))
def block_reduce(value, op, *, block_dim, items_per_thread=None, num_valid=None, algorithm="warp_reductions",
                 broadcast=False, temp=None):
    """Reduce values across the thread block with ``op``; the result is valid in thread 0 (every thread with ``broadcast``).

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


@intrinsic(consts=_REDUCE_CONSTS, rule=_reduce_rule, simulate=simulator.block_reduce,
           fixed={"op": "+"}, per_thread=("value",))
def block_sum(value, *, block_dim, items_per_thread=None, num_valid=None, algorithm="warp_reductions",
              broadcast=False, temp=None):
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


_LOAD_ALGORITHMS = {name: f"cub::BLOCK_LOAD_{name.upper()}" for name in
                    ("direct", "striped", "vectorize", "transpose", "warp_transpose", "warp_transpose_timesliced")}
_STORE_ALGORITHMS = {name: f"cub::BLOCK_STORE_{name.upper()}" for name in _LOAD_ALGORITHMS}


def _whole_warps(name, args, what, instead):
    """Reject a block with a partial warp for CUB's warp-striped arrangement (each warp's 32 x N items
    in a row): BlockLoad and BlockStore static_assert whole warps for it, and BlockExchange, which
    they use, reads and writes past its storage without them."""
    if _threads(args) % 32:
        raise ext.error(name, f"{what} needs a block of whole warps, got {_threads(args)} threads",
                    f"use a multiple of 32 threads, or {instead}")


def _movement(name, args, array):
    """What block_load and block_store share: (dtype, template arguments, params, storage)."""
    dtype = _tile(name, args, array)
    _tile(name, args, "items", like=dtype)
    algorithm = args["algorithm"]
    if algorithm.startswith("warp_transpose"):
        _whole_warps(name, args, f"algorithm {algorithm!r}", "algorithm='transpose'")
    if algorithm in ("transpose", "warp_transpose", "warp_transpose_timesliced"):
        _check_shared(name, args, dtype)
    table = _LOAD_ALGORITHMS if name == "block_load" else _STORE_ALGORITHMS
    shape = dict(T=dtype.cxx, **_shape(args), IPT=args["items_per_thread"], Algo=table[algorithm])
    template_args = dict(shape, Contiguous=args[array].layout == "C",
                         HasNumValid=ext.given_integer(name, args, "num_valid"))
    params = ((array, args[array], None), ("items", args["items"], None), ("num_valid", types.int64, 0))
    storage = LOAD.template(f"numba_tiles::{name}_storage", **shape)
    return dtype, template_args, params, storage


_CACHE = {"default": "cub::LOAD_DEFAULT", "read_only": "cub::LOAD_LDG", "streaming": "cub::LOAD_CS",
          "global": "cub::LOAD_CG"}


def _load_rule(name, args):
    dtype, template_args, params, storage = _movement(name, args, "src")
    has_default = args["oob_default"] is not None
    return Instance(
        intrinsic=name,
        header=LOAD,
        template=LOAD.template("numba_tiles::block_load", **template_args, HasDefault=has_default,
                               Mod=_CACHE[args["cache"]]),
        result=types.none,
        params=params + (("oob_default", dtype.numba, 0),),
        storage=storage,
    )


def _store_rule(name, args):
    dtype, template_args, params, storage = _movement(name, args, "dst")
    return Instance(intrinsic=name, header=LOAD, template=LOAD.template("numba_tiles::block_store", **template_args),
                    result=types.none, params=params, storage=storage)


_MOVE_CONSTS = {"block_dim": _DIM, "items_per_thread": _ITEMS}


@intrinsic(consts={**_MOVE_CONSTS, "algorithm": ext.choice("algorithm", _LOAD_ALGORITHMS),
                   "cache": ext.choice("cache", _CACHE)},
           rule=_load_rule, simulate=simulator.block_load, per_thread=("items",))
def block_load(src, items, *, block_dim, items_per_thread, algorithm="vectorize", num_valid=None, oob_default=None,
               cache="default", temp=None):
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


@intrinsic(consts={**_MOVE_CONSTS, "algorithm": ext.choice("algorithm", _STORE_ALGORITHMS)},
           rule=_store_rule, simulate=simulator.block_store, per_thread=("items",))
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


_SCAN_ALGORITHMS = {
    "raking": "cub::BLOCK_SCAN_RAKING",
    "raking_memoize": "cub::BLOCK_SCAN_RAKING_MEMOIZE",
    "warp_scans": "cub::BLOCK_SCAN_WARP_SCANS",
}


def _scan_rule(name, args):
    dtype, value_type, items = _value(name, args)
    op, has_initial, identity = ops.scan(name, args, dtype)
    algo = _SCAN_ALGORITHMS[args["algorithm"]]
    head = dict(T=dtype.cxx, Op=op.cxx, **_shape(args), IPT=items, Algo=algo, Exclusive=args["exclusive"])
    is_array = isinstance(value_type, types.Array)
    storage = SCAN.template("numba_tiles::block_scan_storage", T=dtype.cxx, **_shape(args), Algo=algo)
    if args["prefix"] is not None:
        if args["aggregate"] or args["initial_value"] is not None:
            raise ext.error(name, "prefix carries the running total: it cannot be combined with aggregate or initial_value",
                        "leave out aggregate and initial_value (the prefix is the initial value; read the new "
                        "prefix for the running total)")
        _tile(name, args, "prefix", like=dtype)
        return Instance(name, SCAN, SCAN.template("numba_tiles::block_scan_prefix", **head),
                        types.none if is_array else dtype.numba,
                        (("value", value_type, None), ("prefix", args["prefix"], None)), storage=storage, **op.code)
    aggregate = args["aggregate"]
    if is_array:
        result = dtype.numba if aggregate else types.none
    else:
        result = types.UniTuple(dtype.numba, 2) if aggregate else dtype.numba
    template = "block_scan_aggregate" if aggregate else "block_scan"
    return Instance(name, SCAN, SCAN.template(f"numba_tiles::{template}", **head, HasInitial=has_initial),
                    result, (("value", value_type, None), ("initial_value", dtype.numba, identity)), storage=storage,
                    **op.code)


@intrinsic(consts={"op": ops.parse, "block_dim": _DIM, "items_per_thread": _ITEMS_OPTIONAL,
                   "exclusive": ext.flag("exclusive"), "aggregate": ext.flag("aggregate"),
                   "algorithm": ext.choice("algorithm", _SCAN_ALGORITHMS)},
           rule=_scan_rule, simulate=simulator.block_scan, per_thread=("value",))
def block_scan(value, op="+", *, block_dim, items_per_thread=None, exclusive=False, initial_value=None,
               aggregate=False, prefix=None, algorithm="raking", temp=None):
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
    dtype = _tile(name, args, "items")
    if "warp_striped" in args["arrangement"]:
        _whole_warps(name, args, "a warp-striped arrangement", "'blocked_to_striped' or 'striped_to_blocked'")
    _check_shared(name, args, dtype)
    shape = dict(T=dtype.cxx, **_shape(args), IPT=args["items_per_thread"])
    return Instance(name, EXCHANGE,
                    EXCHANGE.template("numba_tiles::block_exchange", **shape,
                                      Kind=f"numba_tiles::exchange::{args['arrangement']}"),
                    types.none, (("items", args["items"], None),),
                    storage=EXCHANGE.template("numba_tiles::block_exchange_storage", **shape))


@intrinsic(consts={**_MOVE_CONSTS, "arrangement": ext.choice("arrangement", ARRANGEMENTS)},
           rule=_exchange_rule, simulate=simulator.block_exchange, per_thread=("items",))
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


_HISTOGRAM_ALGORITHMS = {"sort": "cub::BLOCK_HISTO_SORT", "atomic": "cub::BLOCK_HISTO_ATOMIC", "lanes": None}
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
    dtype = _tile(name, args, "items", allowed="iu")
    counter = _tile(name, args, "histogram", allowed="iu")
    if counter.name not in _COUNTERS:
        raise ext.error(name, f"histogram holds {counter.name}", f"use counters of {', '.join(_COUNTERS)}")
    algorithm = _histogram_algorithm(args)
    common = dict(**_shape(args), IPT=args["items_per_thread"], Bins=args["bins"])
    params = (("items", args["items"], None), ("histogram", args["histogram"], None))
    if algorithm == "lanes":
        need = args["bins"] * LANE_COPIES * 4
        if need > STATIC_SHARED_BYTES:
            raise ext.error(name, f"algorithm='lanes' keeps {LANE_COPIES} copies of the {args['bins']} counters, "
                            f"{need} bytes, over the {STATIC_SHARED_BYTES} of shared memory a block can have",
                            "use algorithm='atomic' for this many bins")
        return Instance(name, HISTOGRAM,
                        HISTOGRAM.template("numba_tiles::block_histogram_lanes", T=dtype.cxx, Counter=counter.cxx,
                                           **common, Copies=LANE_COPIES, Accumulate=args["accumulate"]),
                        types.none, params,
                        storage=HISTOGRAM.template("numba_tiles::lanes_storage", Bins=args["bins"],
                                                   Copies=LANE_COPIES))
    if algorithm == "sort":  # (it radix-sorts the tile in shared memory first)
        _check_shared(name, args, dtype)
    shape = dict(**common, Algo=_HISTOGRAM_ALGORITHMS[algorithm])
    return Instance(name, HISTOGRAM,
                    HISTOGRAM.template("numba_tiles::block_histogram", T=dtype.cxx, Counter=counter.cxx, **shape,
                                       Accumulate=args["accumulate"]),
                    types.none, params,
                    storage=HISTOGRAM.template("numba_tiles::block_histogram_storage", T=dtype.cxx, **shape))


@intrinsic(consts={**_MOVE_CONSTS, "bins": ext.positive_int("bins", 256),
                   "algorithm": ext.choice("algorithm", _HISTOGRAM_ALGORITHMS, optional=True),
                   "accumulate": ext.flag("accumulate")},
           rule=_histogram_rule, simulate=simulator.block_histogram, per_thread=("items",))
def block_histogram(items, histogram, *, block_dim, items_per_thread, bins, algorithm=None, accumulate=False,
                    temp=None):
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


def _keys_and_values(name, args, header):
    """What the sorts share: (key dtype, params, their template arguments, their storage type)."""
    dtype = _tile(name, args, "keys", allowed="iuf")
    _check_shared(name, args, dtype)
    params = (("keys", args["keys"], None),)
    value = "cub::NullType"  # (CUB's "no values")
    if args["values"] is not None:
        values = _tile(name, args, "values")
        _check_shared(name, args, values)
        params, value = params + (("values", args["values"], None),), values.cxx
    shape = dict(K=dtype.cxx, V=value, **_shape(args), IPT=args["items_per_thread"])
    return dtype, params, shape, header.template(f"numba_tiles::{name}_storage", **shape)


def _sort_rule(name, args):
    dtype, params, shape, storage = _keys_and_values(name, args, RADIX_SORT)
    for bit in ("begin_bit", "end_bit"):
        ext.given_integer(name, args, bit)
    return Instance(name, RADIX_SORT,
                    RADIX_SORT.template("numba_tiles::block_radix_sort", **shape, Descending=args["descending"],
                                        Striped=args["striped"]),
                    types.none,
                    (*params, ("begin_bit", types.int32, 0), ("end_bit", types.int32, dtype.numpy.itemsize * 8)),
                    storage=storage)


@intrinsic(consts={**_MOVE_CONSTS, "descending": ext.flag("descending"), "striped": ext.flag("striped")},
           rule=_sort_rule, simulate=simulator.block_radix_sort,
           per_thread=("keys", "values"))
def block_radix_sort(keys, *, block_dim, items_per_thread, values=None, descending=False, striped=False,
                     begin_bit=None, end_bit=None, temp=None):
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
    {"<": ops.Predicate("<", "::cuda::std::less<>", operator.lt),
     ">": ops.Predicate(">", "::cuda::std::greater<>", operator.gt)},
    "pass '<', '>' or a @cuda.jit(device=True) function less(a, b) returning a bool")


def _merge_sort_rule(name, args):
    threads = _threads(args)
    if threads & (threads - 1):
        raise ext.error(name, f"CUB's merge sort needs a power-of-two number of threads, got {threads}",
                    "launch 32, 64, 128, 256, 512 or 1024 threads, or use block_radix_sort (any block)")
    dtype, params, shape, storage = _keys_and_values(name, args, MERGE_SORT)
    less = args["compare"].bind(name, dtype)
    return Instance(name, MERGE_SORT, MERGE_SORT.template("numba_tiles::block_merge_sort", **shape, Less=less.cxx),
                    types.none, params, storage=storage, **less.code)


@intrinsic(consts={**_MOVE_CONSTS, "compare": parse_compare}, rule=_merge_sort_rule,
           simulate=simulator.block_merge_sort, per_thread=("keys", "values"))
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


ADJACENT_DIFFERENCE = CUB.header("block_adjacent_difference.cuh")
DISCONTINUITY, SHUFFLE = CUB.header("block_discontinuity.cuh"), CUB.header("block_shuffle.cuh")
_MINUS = ops.Op("-", "::cuda::std::minus", np.subtract, False)


def parse_difference(intrinsic, value):
    """``"-"`` (the default), any op of `block_reduce`, or a ``@cuda.jit(device=True)`` function of two items."""
    return _MINUS if value in ("-", "sub", operator.sub, np.subtract) else ops.parse(intrinsic, value)


def _adjacent_difference_rule(name, args):
    dtype = _tile(name, args, "items")
    op = args["op"].bind(name, dtype)
    ops.check(name, op, dtype)
    has_neighbor = args["neighbor"] is not None
    if has_neighbor:
        ext.scalar(name, "neighbor", args["neighbor"])
    partial = ext.given_integer(name, args, "num_valid")
    if args["right"] and has_neighbor and partial:
        raise ext.error(name, "a right difference of a partial tile takes no neighbor (CUB has none)",
                    "leave out neighbor (the last valid item keeps its value), or num_valid")
    shape = dict(T=dtype.cxx, **_shape(args))
    return Instance(name, ADJACENT_DIFFERENCE,
                    ADJACENT_DIFFERENCE.template("numba_tiles::block_adjacent_difference", T=dtype.cxx, Op=op.cxx,
                                                 **_shape(args), IPT=args["items_per_thread"], Right=args["right"],
                                                 HasNeighbor=has_neighbor, Partial=partial),
                    types.none,
                    (("items", args["items"], None), ("neighbor", dtype.numba, 0), ("num_valid", types.int32, 0)),
                    storage=ADJACENT_DIFFERENCE.template("numba_tiles::block_adjacent_difference_storage", **shape),
                    **op.code)


@intrinsic(consts={**_MOVE_CONSTS, "op": parse_difference, "right": ext.flag("right")},
           rule=_adjacent_difference_rule, simulate=simulator.block_adjacent_difference,
           per_thread=("items",))
def block_adjacent_difference(items, op="-", *, block_dim, items_per_thread, right=False, neighbor=None,
                              num_valid=None, temp=None):
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
parse_differ = ops.predicate({"!=": ops.Predicate("!=", "::cuda::std::not_equal_to<>", operator.ne)},
                             "pass '!=' or a @cuda.jit(device=True) function differ(a, b) returning a bool")


def _discontinuity_rule(name, args):
    dtype = _tile(name, args, "items")
    flags = [f for f in ("heads", "tails") if args[f] is not None]
    if not flags:
        raise ext.error(name, "it needs heads=, tails= or both", "pass a thread-local integer array to fill with flags")
    flag = _tile(name, args, flags[0], allowed="iu")
    if len(flags) == 2:
        _tile(name, args, "tails", like=flag)
    for edge, of in (("predecessor", "heads"), ("successor", "tails")):
        if args[edge] is not None:
            if args[of] is None:
                raise ext.error(name, f"{edge} only decides the {of} flag of an edge item, and no {of} are asked for",
                            f"pass {of}=..., or leave out {edge}")
            ext.scalar(name, edge, args[edge])
    differ = args["compare"].bind(name, dtype)
    unused = f"::numba_tiles::array_ref<{flag.cxx}>{{}}"  # the flags not asked for: never touched
    return Instance(name, DISCONTINUITY,
                    DISCONTINUITY.template("numba_tiles::block_discontinuity", T=dtype.cxx, Flag=flag.cxx, Op=differ.cxx,
                                           **_shape(args), IPT=args["items_per_thread"], Heads="heads" in flags,
                                           Tails="tails" in flags, HasPredecessor=args["predecessor"] is not None,
                                           HasSuccessor=args["successor"] is not None),
                    types.none,
                    (("items", args["items"], None), *((f, args[f] if f in flags else unused, None)
                                                       for f in ("heads", "tails")),
                     ("predecessor", dtype.numba, 0), ("successor", dtype.numba, 0)),
                    storage=DISCONTINUITY.template("numba_tiles::block_discontinuity_storage", T=dtype.cxx,
                                                   **_shape(args)),
                    **differ.code)


@intrinsic(consts={**_MOVE_CONSTS, "compare": parse_differ}, rule=_discontinuity_rule,
           simulate=simulator.block_discontinuity, per_thread=("items", "heads", "tails"))
def block_discontinuity(items, *, block_dim, items_per_thread, heads=None, tails=None, compare="!=",
                        predecessor=None, successor=None, temp=None):
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

        from numba import cuda, int32, uint8
        import numba_tiles as tiles

        @cuda.jit
        def run_starts(x, out):
            items = cuda.local.array(4, int32)
            flags = cuda.local.array(4, uint8)
            start = cuda.blockIdx.x * 512
            tiles.block_load(x[start:], items, block_dim=128, items_per_thread=4)
            tiles.block_discontinuity(items, block_dim=128, items_per_thread=4, heads=flags)
            tiles.block_store(out[start:], flags, block_dim=128, items_per_thread=4)

        cubin = tiles.compile(run_starts, "void(int32[::1], uint8[::1])", arch="sm_90")  # no GPU needed
    """


_SHUFFLES = {"offset": False, "rotate": False, "up": True, "down": True}  # kind → takes a thread-local array


def _shuffle_rule(name, args):
    kind = args["kind"]
    dtype, value_type, items = _value(name, args)
    if _SHUFFLES[kind] != isinstance(value_type, types.Array):
        raise ext.error(name, f"kind {kind!r} shuffles {'a thread-local array' if _SHUFFLES[kind] else 'one value'} "
                    f"per thread, got {args['value']}",
                    "use 'up' or 'down' for an array, 'offset' or 'rotate' for one value")
    if _SHUFFLES[kind] and args["distance"] is not None:
        raise ext.error(name, f"kind {kind!r} always moves items by one", "leave out distance")
    ext.given_integer(name, args, "distance")
    return Instance(name, SHUFFLE,
                    SHUFFLE.template("numba_tiles::block_shuffle", T=dtype.cxx, **_shape(args), IPT=items,
                                     Kind=f"numba_tiles::shuffle::{kind}"),
                    dtype.numba, (("value", value_type, None), ("distance", types.int32, 1)),
                    storage=SHUFFLE.template("numba_tiles::block_shuffle_storage", T=dtype.cxx, **_shape(args)))


@intrinsic(consts={"kind": ext.choice("kind", _SHUFFLES), "block_dim": _DIM, "items_per_thread": _ITEMS_OPTIONAL},
           rule=_shuffle_rule, simulate=simulator.block_shuffle, per_thread=("value",))
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
