"""What every implementation of `Matmul.tile` and `Matmul.batched` declares (`Implementation`), and its `Plan`."""

import dataclasses
import math

import numpy as np
from numba import cuda
from numba.cuda import types

from .. import _callback, _matrices, _tensor_maps
from .. import extending as ext
from ..extending import MATHDX, Arg, Instance, Literal, Member
from . import mma_tiles

MATMUL = MATHDX.header("matmul.cuh")  # the register form's steps and loops, and the shared-tile product
STAGES = ext.choice("stages", dict.fromkeys(range(2, 17)))  # the K-steps of A and B in flight: a parser

CALLS = {"tile": 2, "gemm": 2, "batched": 3}  # a Matmul's whole calls, and the dimensions of the arrays of their ops
SHARED = "::numba_tiles::dynamic_shared<unsigned char>()"  # (the C++ argument: the launch's dynamic shared memory)
MEMBERS = ("pipe", "a", "b", "c")  # an `Operands`' arrays, in the order a kernel's call passes them


@dataclasses.dataclass(frozen=True)
class Plan:
    """How ``mm.tile`` or ``mm.batched`` runs for a C of one dtype on one GPU: ``implementation`` (see
    `Matmul.operands`), its ``stages``, its ``block`` and dynamic ``shared_bytes`` a block, and its ``grid`` rule
    ("tiles": one block a tile of C; "products": one a product; "resident": as many as run at once;
    "even": as many as run at once, then as few as give each block the same number of products)."""

    implementation: str
    stages: int
    block: tuple
    shared_bytes: int
    grid: str

    @property
    def threads(self):
        return math.prod(self.block)


def member_types(a_dtype, c_dtype, ndim):
    """{member: Numba type} of an `Operands`' arrays: ``pipe`` (bytes), A and B of ``a_dtype``, C of ``c_dtype``
    (names of Numba types), ``ndim``-D and of any strides."""
    ta, tc = (types.Array(getattr(types, d), ndim, "A") for d in (a_dtype, c_dtype))
    return {"pipe": types.Array(types.uint8, 1, "C"), "a": ta, "b": ta, "c": tc}


def stage_bytes(mm, c_dtype):
    """The bytes of the register form's stage of C (batched_stage and staged_pitch in matmul.cuh): C's own items,
    rows padded by 16 bytes, when C is narrower than the accumulator; else ``mm.c_items`` of the accumulator."""
    tc, td = mm._types[1].numpy.itemsize, np.dtype(c_dtype).itemsize
    if td < tc:
        m, n, _ = mm.shape
        return m * (n + 16 // td) * td
    return mm.c_items * tc


class Implementation:
    """One implementation: what it computes, how it is planned and prepared, and the C++ of its calls.

    ``name``: as `Matmul.operands` names it (``ops.implementation``); ``members``: the arrays of `Operands` its code
    reads (a launch passes only those: it marshals each array on the host, every time)."""

    name = ""
    members = MEMBERS
    chosen = ""  # when `Matmul.operands` chooses it, and what it is (its docstring lists them, fastest first)

    def computes(self, mm, cc, c_dtype, ndim):
        """Whether it computes ``mm``'s ``tile`` (``ndim`` 2) or ``batched`` (3) into a C of ``c_dtype`` on a GPU of
        compute capability ``cc`` (None: the simulator, where every implementation of ``batched`` computes)."""
        raise NotImplementedError

    def preference(self, mm, cc, ndim):
        """Its rank among those that compute the same call, lower first: the fastest this library measured."""
        raise NotImplementedError

    def takes(self, mm, a, b, c):
        """Whether its copies take the device arrays ``a``, ``b`` and ``c`` (their strides and alignment)."""
        return True

    def stages(self, mm):
        """The K-steps of A and B it keeps in flight: the description's, or as many (2 to 4) as keep about 256
        bytes of each line of A and B loading."""
        return mm.stages or max(2, min(4, 256 // (mm.shape[2] * mm._types[0].numpy.itemsize)))

    def plan(self, name, mm, stages, c_dtype, ndim):
        """Its `Plan` with ``stages`` for a C of ``c_dtype`` (``ndim``: 2 for ``tile``, 3 for ``batched``)."""
        raise NotImplementedError

    def prepare(self, name, mm, plan, a, b, c, stream):
        """``pipe``, the bytes its code reads besides the arrays, for the device arrays ``a``, ``b`` and ``c``:
        here none it reads (a buffer of `_tensor_maps.PIPE`'s size, so that every `Operands` holds one)."""
        return cuda.device_array(_tensor_maps.PIPE.itemsize, np.uint8, stream=stream)

    def instance(self, name, mm, plan, td, args, call):
        """The `Instance` of ``mm.tile``, ``mm.gemm`` or ``mm.batched`` (``call``, a key of `CALLS`) by ``plan`` for a
        C of `Dtype` ``td`` (``args``: the call's, for its epilogue)."""
        raise NotImplementedError

    def operand_params(self, mm, td, ndim):
        """The entry point's parameters of the arrays it reads: each a member of the call's ``ops``."""
        found = member_types(mm.dtype, td.name, ndim)
        return tuple(Member("ops", m, found[m]) for m in self.members)

    def register_loop(self, name, mm, plan, td, args, call, function, checks="", grid=None, **more):
        """The `Instance` of matmul.cuh's loop ``function`` for ``call`` (of mma_steps.cuh's, on MMA atoms, for a
        warp ``grid``: `mma_tiles.warp_grid`), the register form's steps over K with ``plan``'s stages in the
        launch's dynamic shared memory, for a C of `Dtype` ``td``: its entry takes the operands, the tile's
        coordinates (`coordinates`), then alpha and beta. ``checks``: C++ ahead of the entry point; ``more``: the
        template arguments of its own, after the stages'."""
        tc, ndim = mm._types[1], CALLS[call]
        _, result = c_precision(mm, name, "c", td)
        fused, prelude = _callback.fused(name, args, tc.numba, ndim)
        loop = dict(Stages=plan.stages, SharedBytes=plan.shared_bytes, **more)
        storage = dict(TC=tc.cxx, PD=result, TD=td.cxx, TS="unsigned char")
        if grid is None:
            header, template = MATMUL, instantiate(mm, function, **loop, **storage)
        else:
            header, template = mma_tiles.STEPS, mma_tiles.steps_template(mm, function, grid, **loop, **storage)
        scales = (Literal("shared", SHARED), Arg("alpha", tc.numba, 1), Arg("beta", tc.numba, 0))
        params = self.operand_params(mm, td, ndim) + coordinates(call) + scales + fused
        fields = dict(result=types.none, params=params, prelude=checks + prelude, threads=plan.threads)
        return Instance(intrinsic=name, header=header, template=template, **fields)


def coordinates(call):
    """The entry point's parameters of the tile ``call`` computes: ``tile``'s ``i`` and ``j``, none for the others."""
    return (Arg("i", types.int64), Arg("j", types.int64)) if call == "tile" else ()


def instantiate(mm, function, **more):
    """``function``'s template in MATMUL.cuh for ``mm``: its shape, precisions, arrangement, block and tile sizes,
    then ``more``."""
    m, n, k = mm.shape
    ta, tc = mm._types
    bx, by, bz = mm.block_dim
    row_a, row_b = (_matrices.ORDERS[a] for a in mm.arrangement)
    product = dict(M=m, N=n, K=k, PA=mm._compute, PB=mm._compute, PC=tc.cxx, RowA=row_a, RowB=row_b)
    items = dict(AItems=mm.a_items, BItems=mm.b_items, CItems=mm.accumulator_items)
    return MATMUL.template(function, **product, BX=bx, BY=by, BZ=bz, **items, **more)


def c_precision(mm, name, param, td):
    """``(td, the C++ precision C is rounded to)`` for a C of dtype ``td``: the accumulator's, or A's
    (the result rounded to A's precision, bfloat16 for int16 bits)."""
    ta, tc = mm._types
    if td not in (tc, ta):
        raise ext.error(
            name,
            f"{param} holds {td.name}; this Matmul stores its {tc.name} accumulator as {tc.name}"
            + (f" or rounded to {ta.name}" if ta.kind == "f" or mm.precision == "bf16" else ""),
            f"store into an array of {tc.name}" + (f" or {ta.name}" if ta != tc else ""),
        )
    return td, tc.cxx if td == tc else ("__nv_bfloat16" if mm.precision == "bf16" else ta.cxx)
