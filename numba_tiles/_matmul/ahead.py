"""Compiling a description's ``tile`` and ``batched`` ahead, in the background, when it is made on a GPU machine."""

import os
import threading

from .. import _programs, _toolchain
from .. import extending as ext
from .._backends import simulated
from .._target import Target
from . import IMPLEMENTATIONS

# Programs compiled ahead at once, at most: each NVRTC of cuBLASDx takes about 2.2 GB while it runs, and a
# module may define many descriptions.
AHEAD_AT_ONCE = threading.BoundedSemaphore(2)


def compile_ahead(mm):
    """Start making the C++ of ``mm.tile`` and ``mm.batched`` (into a C of the accumulator's dtype, with no
    epilogue) for this machine's GPU, in background threads, the compilers in worker processes: a kernel
    that calls them finds their LTO-IR made, or waits for what is left (`_programs.build` says so). Nothing on a
    machine with no GPU, on the simulator, or with ``NUMBA_TILES_BACKGROUND=0``."""
    if simulated.simulator_enabled() or os.environ.get("NUMBA_TILES_BACKGROUND", "1") == "0":
        return

    def make(cc, ndim):
        name = f"Matmul.{'tile' if ndim == 2 else 'batched'}"
        td = ext.named(name, "c", mm.accumulator)
        try:
            with AHEAD_AT_ONCE:
                plan = mm._plan(name, cc, td.name, ndim)
                instance = IMPLEMENTATIONS[plan.implementation].instance(
                    name, mm, plan, td, {"epilogue": None, "epilogue_args": None}, ndim
                )
                _programs.build(
                    [instance], Target.for_lowering(cc, lineinfo=False), isolated=True, announce=lambda *_: None
                )
        except Exception:  # (a kernel that calls it compiles it itself, and raises what is wrong there)
            pass

    def start():
        cc = _toolchain.current_device_cc()
        if cc is not None and "sm_%d%d" % cc in _toolchain.supported_archs():
            for ndim in (2, 3):
                # (daemons: a process that ends meanwhile does not wait for them; NVRTC runs in a child)
                threading.Thread(target=make, args=(cc, ndim), daemon=True, name="numba_tiles ahead").start()

    threading.Thread(target=start, daemon=True, name="numba_tiles ahead").start()
