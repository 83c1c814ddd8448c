"""Compiling a description's code ahead, in the background, when it is made on a GPU machine: a kernel that calls
it then finds its LTO-IR made, or waits for what is left (`_programs.build` says so)."""

import os
import threading

from . import _programs, _toolchain
from ._backends import simulated
from ._target import Target

# Programs compiled ahead at once, at most: each NVRTC of cuBLASDx takes about 2.2 GB while it runs, and a
# module may define many descriptions.
AT_ONCE = threading.BoundedSemaphore(2)


def start(*instances):
    """Make the C++ of each of ``instances`` (functions of the GPU's compute capability that give an `Instance`)
    for this machine's GPU, each in a background thread, the compiler in a worker process. Nothing on a machine
    with no GPU, on the simulator, or with ``NUMBA_TILES_BACKGROUND=0``.

    Example (on a machine with no GPU: nothing starts)::

        from numba_tiles import _ahead

        _ahead.start(lambda cc: None)
    """

    def make(cc, instance):
        with AT_ONCE:
            target = Target.for_lowering(cc, lineinfo=False)
            _programs.build([instance(cc)], target, isolated=True, announce=lambda *_: None)

    for instance in instances:
        run(lambda cc, instance=instance: make(cc, instance))


def run(work):
    """Call ``work(cc)`` with this machine's GPU's compute capability in a background thread, under `start`'s
    conditions (a GPU whose arch this toolkit supports, no simulator, ``NUMBA_TILES_BACKGROUND`` not 0); its
    exceptions are dropped (a kernel that needs its result makes it itself, and raises what is wrong there).

    Example (on a machine with no GPU: nothing runs)::

        from numba_tiles import _ahead

        _ahead.run(print)
    """
    if simulated.simulator_enabled() or os.environ.get("NUMBA_TILES_BACKGROUND", "1") == "0":
        return

    def begin():
        cc = _toolchain.current_device_cc()
        if cc is not None and "sm_%d%d" % cc in _toolchain.supported_archs():
            try:
                work(cc)
            except Exception:
                pass

    # (a daemon: a process that ends meanwhile does not wait for it; compilers run in children)
    threading.Thread(target=begin, daemon=True, name="numba_tiles ahead").start()
