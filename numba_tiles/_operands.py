"""`Matmul.operands`: A, B and C described to a matrix product's code, a kernel argument typed by its description.

An `Operands` holds the three arrays and ``pipe``, the bytes the product's code reads besides them: the
TMA tensor maps of A, B (and C), the batch's sizes and the counters of the products' order (`PIPE`), or
libmathdx's device-pipeline object. In a kernel it is one argument whose Numba type (`_numba.Handle`)
names its description, the dtypes, whether it is a batch and the implementation, passed as the members that
implementation reads (`MEMBERS`): a launch marshals each array it passes, on the host, every time.
"""

import numpy as np
from numba.cuda import types

from . import _mlir, _numba

# The bytes of ``pipe`` for the TMA forms, as lto_libs declares them (batched_maps in matmul.cuh, wgmma_pipe
# in wgmma.cuh): A's and B's CUtensorMap (64-byte aligned), the batch's sizes, C's map (Matmul.batched by
# wgmma) and the counters of its products' order, zero between launches. Built here; the C++ checks it
# (`CHECKS`, by struct: each member's bytes, in declaration order, and no padding between them).
PIPE = np.dtype({"names": ["a", "b", "count", "m", "k", "n", "c", "tickets", "finished"],
                 "formats": [(np.uint8, 128), (np.uint8, 128), np.int64, np.int64, np.int64, np.int64, (np.uint8, 128),
                             np.uint32, np.uint32],
                 "offsets": [0, 128, 256, 264, 272, 280, 320, 448, 452], "itemsize": 512})


def _start(field):
    return PIPE.fields[field][1]


def _end(field):
    return _start(field) + PIPE.fields[field][0].itemsize


def _checks(struct, members):
    """The static_assert that the C++ ``struct``'s ``members`` ((name, first byte, byte past it), in
    declaration order) lie where PIPE puts them."""
    assert members[0][1] == 0 and all(a[2] == b[1] for a, b in zip(members, members[1:]))
    sizes = [f"sizeof(::numba_tiles::{struct}::{m}) == {end - start}" for m, start, end in members]
    return (f"static_assert({' && '.join(sizes)} && sizeof(::numba_tiles::{struct}) == {members[-1][2]}, "
            f'"numba_tiles/_operands.py\'s PIPE: {struct}");')


CHECKS = {"batched_maps": _checks("batched_maps", [(f, _start(f), _end(f))
                                                   for f in ("a", "b", "count", "m", "k", "n")]),
          "wgmma_pipe": _checks("wgmma_pipe", [("ab", 0, _end("n")), ("pad", _end("n"), _start("c")),
                                               ("c", _start("c"), _end("c")),
                                               ("tickets", _start("tickets"), _end("tickets")),
                                               ("finished", _start("finished"), _end("finished"))])}


# The members a kernel's call reads, by implementation: the register form's loop copies A and B itself; the TMA
# forms read A and B through their tensor maps in ``pipe``, and C's sizes from ``c``. Without an implementation
# (a `tiles.compile` signature, the kernel's arch choosing) the type holds all four.
MEMBERS = {"cp.async": ("a", "b", "c"), "tma": ("pipe", "c"), "wgmma": ("pipe", "c"), "libmathdx": ("pipe", "c"),
           None: ("pipe", "a", "b", "c")}


class Operands:
    """A, B and C of one `Matmul`'s product, described to its code on this GPU: what ``mm.operands(a, b, c)``
    returns (see `Matmul.operands`), the first argument of a kernel that calls ``mm.tile`` or ``mm.batched``.

    ``implementation``: the code the kernel's call runs (see `Matmul.operands`); ``threads`` and
    ``shared_memory_bytes``: the block and the dynamic shared memory a launch needs (`Matmul.launch`
    gives them, with a grid).

    Example, continuing `Matmul`'s::

        if cuda.is_available():
            ops = MM.operands(a, b, c)           # device arrays; c = a @ b is what the kernel's call computes
            print(ops.implementation, ops.threads, ops.shared_memory_bytes)
            MM.launch(gemm, ops, 1.0, 0.0)       # the block, shared memory and grid it needs
    """

    def __init__(self, mm, plan, pipe, a, b, c):
        self.mm, self.plan, self.pipe, self.a, self.b, self.c = mm, plan, pipe, a, b, c
        self.implementation, self.threads = plan.implementation, plan.threads
        self.shared_memory_bytes = plan.shared_bytes
        # (Numba's typeof reads it at every launch, on the simulator too)
        self._numba_type_ = handle_type(mm, str(a.dtype), str(c.dtype), c.ndim, self.implementation)

    def __iter__(self):  # (the members a kernel launch passes, in the order of the type's)
        return iter([getattr(self, member) for member in MEMBERS[self.implementation]])

    def __len__(self):
        return len(MEMBERS[self.implementation])

    def __repr__(self):
        return f"<{self.mm!r}.operands: {self.implementation}, C {tuple(self.c.shape)} {self.c.dtype}>"


def handle_type(mm, a_dtype, c_dtype, ndim, implementation=None):
    """The Numba type of `Operands` of ``mm`` with A and B of ``a_dtype``, C of ``c_dtype``, ``ndim``-D (2: a
    matrix, 3: a batch), for ``implementation`` (None: the fastest for the kernel's arch): what ``tiles.compile``
    signatures name (`Matmul.operands_type`)."""
    ta, tc = (types.Array(getattr(types, d), ndim, "A") for d in (a_dtype, c_dtype))
    name = (f"Matmul.operands({'batch' if ndim == 3 else 'matrix'}, A {a_dtype}, C {c_dtype}"
            + (f", {implementation}" if implementation else "") + f"; {mm!r})")
    member_types = {"pipe": types.Array(types.uint8, 1, "C"), "a": ta, "b": ta, "c": tc}
    return _numba.Handle(name, ("Matmul.operands", mm, a_dtype, c_dtype, ndim, implementation),
                         tuple((m, member_types[m]) for m in MEMBERS[implementation]),
                         info={"mm": mm, "ndim": ndim, "c": getattr(types, c_dtype), "implementation": implementation})


if not _numba.simulator_enabled():
    _numba.register_handle(Operands)
    if _mlir.available():
        _mlir.register_handle(Operands)
