"""Compiling a description's ``tile`` and ``batched`` ahead, in the background, when it is made on a GPU machine."""

from .. import _ahead
from .. import extending as ext
from . import IMPLEMENTATIONS


def compile_ahead(mm):
    """Start making the C++ of ``mm.tile`` and ``mm.batched`` (into a C of the accumulator's dtype, with no
    epilogue) for this machine's GPU (`_ahead.start`)."""

    def instance(cc, ndim):
        name = f"Matmul.{'tile' if ndim == 2 else 'batched'}"
        td = ext.named(name, "c", mm.accumulator)
        plan = mm._plan(name, cc, td.name, ndim)
        args = {"epilogue": None, "epilogue_args": None}
        return IMPLEMENTATIONS[plan.implementation].instance(name, mm, plan, td, args, ndim)

    _ahead.start(lambda cc: instance(cc, 2), lambda cc: instance(cc, 3))
