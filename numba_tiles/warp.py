"""Warp-level intrinsics: the lanes of each logical warp call them together (CUB's warp collectives)."""

from numba.cuda import types

from . import extending as ext
from . import ops, simulator
from .extending import CUB, Arg, Instance, intrinsic

WARP = CUB.header("warp.cuh")


def _reduce_rule(name, args):
    dtype = ext.scalar(name, "value", args["value"])
    op, partial = ops.reduction(name, args, dtype)
    return Instance(
        intrinsic=name,
        header=WARP,
        template=WARP.template(
            "numba_tiles::warp_reduce", T=dtype.cxx, Op=op.cxx, Warp=args["warp_size"], Partial=partial
        ),
        result=dtype.numba,
        params=(
            Arg("value", dtype.numba),
            Arg("num_valid", types.int32, 0),
            Arg("identity", dtype.numba, ops.identity_value(op, dtype)),
        ),
        **op.code,
    )


_REDUCE_CONSTS = {"op": ops.parse, "warp_size": ext.warp_size}


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


def _scan_rule(name, args):
    dtype = ext.scalar(name, "value", args["value"])
    op, has_initial, identity = ops.scan(name, args, dtype)
    head = dict(T=dtype.cxx, Op=op.cxx, Warp=args["warp_size"], Exclusive=args["exclusive"], HasInitial=has_initial)
    tail = dict(Aggregate=args["aggregate"], Partial=ops.partial(name, args, op))
    template = WARP.template("numba_tiles::warp_scan", **head, **tail)
    result = types.UniTuple(dtype.numba, 2) if args["aggregate"] else dtype.numba
    value = (Arg("value", dtype.numba), Arg("initial_value", dtype.numba, identity))
    params = (*value, Arg("num_valid", types.int32, 0), Arg("identity", dtype.numba, ops.identity_value(op, dtype)))
    return Instance(intrinsic=name, header=WARP, template=template, result=result, params=params, **op.code)


@intrinsic(
    consts={
        "op": ops.parse,
        "warp_size": ext.warp_size,
        "exclusive": ext.flag("exclusive"),
        "aggregate": ext.flag("aggregate"),
    },
    rule=_scan_rule,
    simulate=simulator.warp_scan,
)
def warp_scan(value, op="+", *, warp_size=32, exclusive=False, initial_value=None, aggregate=False, num_valid=None):
    """Prefix-scan one value per lane across each logical warp with ``op`` (a sum by default).

    Logical warps are as for `warp_reduce`. Returns the lane's inclusive scan, or with
    ``exclusive=True`` op(initial, lanes before it), where ``initial_value`` defaults to the op's
    identity (so lane 0 is defined too); an inclusive scan with ``initial_value`` starts from it.
    ``aggregate=True`` returns ``(scanned, warp total)``, the total without ``initial_value``.
    With ``num_valid``, the lanes of each logical warp from ``num_valid`` on count as the op's
    identity: the total is that of the valid lanes, and the others repeat the last valid prefix.
    Implemented by ``cub::WarpScan`` (shuffles, no shared memory).

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def lane_offsets(counts, out):
            i = cuda.grid(1)
            out[i] = tiles.warp_scan(counts[i], exclusive=True)
    """
