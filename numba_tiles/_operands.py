"""`Matmul.operands`: A, B and C described to a matrix product's code, a kernel argument typed by its description.

An `Operands` holds the three arrays and ``pipe``, the bytes the product's code reads besides them: the
TMA tensor maps of A, B (and C), the batch's sizes and the counters of the products' order
(`_tensor_maps.PIPE`), or libmathdx's device-pipeline object. In a kernel it is one argument whose Numba type
(`numba_cuda.Handle`) names its description, the dtypes, whether it is a batch and the implementation, passed as
the members that implementation reads (`_matmul.members`): a launch marshals each array it passes, on the
host, every time.
"""

from numba.cuda import types

from . import _backends, _matmul
from ._backends import numba_cuda


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
        return iter([getattr(self, member) for member in _matmul.members(self.implementation)])

    def __len__(self):
        return len(_matmul.members(self.implementation))

    def __repr__(self):
        return f"<{self.mm!r}.operands: {self.implementation}, C {tuple(self.c.shape)} {self.c.dtype}>"


def handle_type(mm, a_dtype, c_dtype, ndim, implementation=None):
    """The Numba type of `Operands` of ``mm`` with A and B of ``a_dtype``, C of ``c_dtype``, ``ndim``-D (2: a
    matrix, 3: a batch), for ``implementation`` (None: the fastest for the kernel's arch): what ``tiles.compile``
    signatures name (`Matmul.operands_type`)."""
    name = (
        f"Matmul.operands({'batch' if ndim == 3 else 'matrix'}, A {a_dtype}, C {c_dtype}"
        + (f", {implementation}" if implementation else "")
        + f"; {mm!r})"
    )
    member_types = _matmul.member_types(a_dtype, c_dtype, ndim)
    return numba_cuda.Handle(
        name,
        ("Matmul.operands", mm, a_dtype, c_dtype, ndim, implementation),
        tuple((m, member_types[m]) for m in _matmul.members(implementation)),
        info={"mm": mm, "ndim": ndim, "c": getattr(types, c_dtype), "implementation": implementation},
    )


for _backend in _backends.registered():  # (none on the simulator)
    _backend.register_handle(Operands)
