"""Precompiled headers of a library's base (CUB's common.cuh): made in the background, for the current GPU at import
and after a process's first program, so that later programs skip most of their parse."""

import atexit
import json
import os
import shutil
import tempfile
import threading
import time

from . import _stats, _toolchain
from ._target import Target

_lock = threading.Lock()  # (the table of precompiled bases)
_pch_dir = None
_pchs = {}  # (library, options) → its `_PrecompiledBase` in this process
_background = []  # the threads NVRTC may be running in


def _in_background(work):
    # Not a daemon: Python joins such threads before any atexit handler runs. A process that exited
    # right after `import numba_tiles` on a GPU machine died with SIGSEGV while this thread was still
    # in cuInit/NVRTC: the atexit handlers registered after ours (by the CUDA modules the thread
    # imports) ran first and tore down what it was using.
    thread = threading.Thread(target=work, name="numba_tiles NVRTC")
    _background.append(thread)
    thread.start()
    return thread


@atexit.register
def _at_exit():
    if _pch_dir is not None:
        shutil.rmtree(_pch_dir, ignore_errors=True)


class _PrecompiledBase:
    """A library's base header (what its headers share, most of a program's parse) precompiled
    for one option set, in a background thread (NVRTC releases the GIL).

    Every program of the library includes its base first, so one precompiled header serves
    them all, whatever their other headers. NVRTC accepts a precompiled header only in the
    process that made it (the file records that process's heap address), so they go to a
    temporary directory of this process, not to the disk cache.
    """

    def __init__(self, library, flags):
        global _pch_dir
        if _pch_dir is None:
            _pch_dir = tempfile.mkdtemp(prefix="numba_tiles_pch_")
        self.path = os.path.join(_pch_dir, f"{len(_pchs)}.pch")
        self.created = False
        self._thread = _in_background(lambda: self._make(library, flags))

    def _make(self, library, flags):
        from cuda.core import Program, ProgramOptions

        program = Program(
            f'#include "{library.base}"\n',
            "c++",
            options=ProgramOptions(
                name="numba_tiles_pch", include_path=library.include_path(), create_pch=self.path, **flags
            ),
        )
        try:
            program.compile("ltoir" if flags.get("link_time_optimization") else "cubin")
        except Exception:  # (a program that includes the base will say what is wrong)
            return
        # A PCH NVRTC did not make (heap too small, ...) is never asked for: use_pch on a
        # missing file is an error, not a plain compile.
        self.created = program.pch_status == "created"

    def options(self):
        """NVRTC's options to use it, once made (waiting for it if it is under way), or {}."""
        start = time.perf_counter()
        self._thread.join()
        _stats.count("pch_wait_seconds", time.perf_counter() - start)
        if not self.created:
            return {}
        _stats.count("pch_used")
        return {"use_pch": self.path}


def made(library, flags):
    """The precompiled base of ``library`` with the NVRTC options ``flags``, if this process has begun one."""
    return _pchs.get(_tag(library, flags))


def _tag(library, flags):
    return library.name, json.dumps(flags, sort_keys=True)


def start(library, flags):
    """Start precompiling ``library``'s base header for ``flags``, unless this process has already."""
    with _lock:
        if _tag(library, flags) not in _pchs:
            _pchs[_tag(library, flags)] = _PrecompiledBase(library, flags)


def prepare_for_current_device(library):
    """Start precompiling ``library``'s base header for this machine's GPU (device 0), if it has one.

    Called when numba_tiles is imported: Numba types and lowers the user's first kernel in
    the next second or so, and that kernel's program then finds most of its headers parsed
    (see docs/performance.md, "Time to first result"). It costs one background parse, about half a second
    of one CPU core; a machine with no GPU pays nothing. It initializes the CUDA driver in that
    thread; ``NUMBA_TILES_PREPARE=0`` turns it off (for processes that fork CUDA-using children).
    """

    def for_the_gpu():
        cc = _toolchain.current_device_cc()
        if cc is not None and "sm_%d%d" % cc in _toolchain.supported_archs():
            start(library, library.program_options(Target.for_lowering(cc, lineinfo=False)))

    _in_background(for_the_gpu)


def wait_for_precompiled_headers():
    """Wait until the precompiled headers under way are made."""
    for thread in list(_background):
        thread.join()
