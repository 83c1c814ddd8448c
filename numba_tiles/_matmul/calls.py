"""What `Matmul`'s calls in kernels check and instantiate: the register form's steps (``load_a``, ``load_b``,
``multiply``, ``store``), and ``tile``, ``gemm`` and ``batched``, whose instances the chosen implementation makes."""

from numba.cuda import types

from .. import _callback, _compile, _matrices
from .. import extending as ext
from .._backends import numba_cuda
from ..extending import Arg, Instance
from . import IMPLEMENTATIONS, base, mma_tiles
from .base import MATMUL


def _array_of(name, args, param, want, role, allocation):
    """Check that ``param`` is an array of ``want`` (a `Dtype`), this Matmul's ``role``."""
    held = ext.element(name, param, args[param])
    if held != want or not isinstance(args[param], types.Array):
        problem = f"{param} must be an array of {want.name} (this Matmul's {role}), got {args[param]}"
        raise ext.error(name, problem, f"allocate {allocation}")
    return held


def shared_tile(mm, name, args, param, items):
    """Check that ``param`` is an array of A's and B's dtype (a shared tile of ``items`` items)."""
    return _array_of(
        name, args, param, mm._types[0], "tiles", f"cuda.shared.array(mm.{items}, {mm.dtype}, alignment=16)"
    )


def accumulator(mm, name, args):
    """Check that ``acc`` is an array of the accumulator's dtype (a thread's accumulator)."""
    allocation = f"cuda.local.array(mm.accumulator_items, {mm.accumulator})"
    return _array_of(name, args, "acc", mm._types[1], "accumulator", allocation)


def _step(mm, function, **more):
    """``(header, template)`` of the register form's step ``function`` (matmul.cuh's name, ``matmul_load`` and the
    like) for the kernel's GPU: `mma_steps.cuh`'s on MMA atoms where they serve, else cuBLASDx's."""
    grid = mma_tiles.warp_grid(mm, _compile.typing_cc())
    if grid is None:
        return MATMUL, base.instantiate(mm, f"numba_tiles::{function}", **more)
    return mma_tiles.STEPS, mma_tiles.steps_template(
        mm, f"numba_tiles::{function.replace('matmul', 'mma')}", grid, **more
    )


def load_rule(name, args, operand):
    mm = args["mm"]
    ta = shared_tile(mm, name, args, "tile", "ab"[operand] + "_items")
    _matrices.matrix(name, args, "src", like=("tile", ta))
    _matrices.origin(name, args)
    header, template = _step(mm, "matmul_load", Operand=operand, Async=args["asynchronous"], T=ta.cxx)
    return Instance(
        intrinsic=name,
        header=header,
        template=template,
        result=types.none,
        params=_matrices.copy_params(args, ta.numba),
        threads=mm.threads,
    )


def multiply_rule(name, args):
    mm = args["mm"]
    ta = shared_tile(mm, name, args, "a", "a_items")
    shared_tile(mm, name, args, "b", "b_items")
    tc = accumulator(mm, name, args)
    header, template = _step(mm, "matmul_multiply", TA=ta.cxx, TB=ta.cxx, TC=tc.cxx)
    return Instance(
        intrinsic=name,
        header=header,
        template=template,
        result=types.none,
        params=(Arg("a", args["a"]), Arg("b", args["b"]), Arg("acc", args["acc"])),
        threads=mm.threads,
    )


def store_rule(name, args):
    mm = args["mm"]
    tc = accumulator(mm, name, args)
    td, result = base.c_precision(mm, name, "dst", _matrices.matrix(name, args, "dst"))
    _matrices.origin(name, args)
    _matrices.scales(name, args)
    params = (
        Arg("acc", args["acc"]),
        Arg("dst", args["dst"]),
        Arg("row", types.int64),
        Arg("col", types.int64),
        Arg("alpha", tc.numba, 1),
        Arg("beta", tc.numba, 0),
    )
    function = "matmul_store"
    if args["stage"] is not None:
        if ext.element(name, "stage", args["stage"]) != tc or not isinstance(args["stage"], types.Array):
            raise ext.error(
                name,
                f"stage must be a shared array of {tc.name}, got {args['stage']}",
                f"allocate cuda.shared.array(mm.c_items, {tc.name}, alignment=16)",
            )
        function, params = "matmul_store_staged", params + (Arg("stage", args["stage"]),)
    fused, prelude = _callback.fused(name, args, tc.numba, 2)
    header, template = _step(mm, function, TC=tc.cxx, PD=result, TD=td.cxx)
    return Instance(
        intrinsic=name,
        header=header,
        template=template,
        result=types.none,
        params=params + fused,
        prelude=prelude,
        threads=mm.threads,
    )


def operands_of(name, args, call):
    """The description, its `_Plan` for the kernel's GPU and C's `Dtype`, of the call's ``ops``: `Operands` of this
    description (``call``: "tile", "gemm" or "batched")."""
    mm, ops = args["mm"], args["ops"]
    made = ops.info if isinstance(ops, numba_cuda.Handle) else None
    ndim = base.CALLS[call]
    if made is None:
        raise ext.error(
            name,
            f"ops must be what mm.operands(a, b, c) returns, got {ops}",
            "pass ops = mm.operands(a, b, c), made on the host, to the kernel",
        )
    if made["mm"] != mm:
        raise ext.error(
            name,
            f"ops were made by another description, {made['mm']!r}; this is {mm!r}",
            "make them with this description's operands(a, b, c)",
        )
    if made["ndim"] != ndim:
        raise ext.error(
            name,
            f"ops describe {'a batch (3-D arrays)' if made['ndim'] == 3 else '2-D arrays'}",
            f"call {'mm.batched' if made['ndim'] == 3 else 'mm.gemm or mm.tile'}(ops, ...), or make ops of "
            f"{ndim}-D arrays for mm.{call}",
        )
    _matrices.scales(name, args)
    td = ext.scalar(name, "c", made["c"], verb="holds")
    base.c_precision(mm, name, "c", td)
    cc = _compile.typing_cc()
    if cc is not None and cc < (8, 0):
        raise ext.error(
            name,
            f"it needs sm_80 or later (asynchronous copies); this kernel compiles for sm_{cc[0]}{cc[1]}",
            "compile for sm_80 or later, or write the loop of load_a, load_b, multiply and store with tiles.matmul",
        )
    return mm, mm._plan(name, cc, td.name, ndim, made["implementation"]), td


def tile_rule(name, args):
    mm, plan, td = operands_of(name, args, "tile")
    _matrices.origin(name, args, ("i", "j"))
    return IMPLEMENTATIONS[plan.implementation].instance(name, mm, plan, td, args, "tile")


def gemm_rule(name, args):
    mm, plan, td = operands_of(name, args, "gemm")
    return IMPLEMENTATIONS[plan.implementation].instance(name, mm, plan, td, args, "gemm")


def batched_rule(name, args):
    mm, plan, td = operands_of(name, args, "batched")
    return IMPLEMENTATIONS[plan.implementation].instance(name, mm, plan, td, args, "batched")
