"""Compiling a description's ``tile`` and ``batched`` ahead, in the background, when it is made on a GPU machine."""

from .. import _ahead
from .. import extending as ext
from . import IMPLEMENTATIONS
from .base import CALLS


def compile_ahead(mm):
    """Start making the C++ of ``mm.tile`` and ``mm.batched`` (into a C of the accumulator's dtype, with no
    epilogue) for this machine's GPU (`_ahead.start`)."""

    def instance(cc, call):
        name = f"Matmul.{call}"
        td = ext.named(name, "c", mm.accumulator)
        plan = mm._plan(name, cc, td.name, CALLS[call])
        args = {"epilogue": None, "epilogue_args": None}
        return IMPLEMENTATIONS[plan.implementation].instance(name, mm, plan, td, args, call)

    _ahead.start(lambda cc: instance(cc, "tile"), lambda cc: instance(cc, "batched"))
