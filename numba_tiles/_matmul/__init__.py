"""The implementations of `Matmul.tile` and `Matmul.batched`, one module each, and how one is chosen.

Each is an `Implementation` (`base`): what it computes (arch, dtypes, shape) and how fast it is there
(``preference``), the arrays its code reads, its `Plan` (block, dynamic shared memory, grid), the host's
``pipe`` and the C++ of its calls. `Matmul` asks this registry and names none of them.
"""

from .base import MEMBERS, Implementation, Plan, member_types
from .cp_async import CP_ASYNC
from .libmathdx import LIBMATHDX_PIPELINE
from .tma import TMA
from .wgmma import WGMMA_BLOCK

IMPLEMENTATIONS = {i.name: i for i in (WGMMA_BLOCK, LIBMATHDX_PIPELINE, TMA, CP_ASYNC)}


def computing(mm, cc, c_dtype, ndim):
    """The names of the implementations that compute ``mm``'s ``tile`` (``ndim`` 2) or ``batched`` (3) into a C of
    ``c_dtype`` on a GPU of compute capability ``cc`` (None: the simulator), the fastest first."""
    found = [i for i in IMPLEMENTATIONS.values() if i.computes(mm, cc, c_dtype, ndim)]
    return tuple(i.name for i in sorted(found, key=lambda i: i.preference(mm, cc, ndim)))


def described():
    """The implementations as `Matmul.operands`' docstring lists them: when each is chosen, in the order tried."""
    return "\n".join(f'- ``"{i.name}"``: {i.chosen};' for i in IMPLEMENTATIONS.values())


def members(implementation):
    """The `Operands` arrays the code of ``implementation`` reads (None: not chosen yet, all of them)."""
    return MEMBERS if implementation is None else IMPLEMENTATIONS[implementation].members


__all__ = ["IMPLEMENTATIONS", "Implementation", "Plan", "computing", "described", "member_types", "members"]
