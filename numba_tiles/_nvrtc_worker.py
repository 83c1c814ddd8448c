"""NVRTC in a process of its own, so that a kernel's programs compile side by side: NVRTC runs
one compile at a time in a process, and one cuBLASDx product alone takes over 10 s to instantiate.

`_compile` runs it as a script (a worker needs cuda.core only, not numba): it reads the pickled
``(source, options, output)`` from stdin and writes `run`'s pickled result. `_compile` also calls `run`
itself for the programs it compiles in its own process.
"""

import pickle
import sys


def run(source, options, output):
    """NVRTC's ``output`` for ``source``: ``("ok", bytes)``, or ``("error", log)``."""
    from cuda.core import Program, ProgramOptions

    try:
        return "ok", bytes(Program(source, "c++", options=ProgramOptions(**options)).compile(output).code)
    except Exception as exc:  # cuda.core raises its own error types; keep NVRTC's log
        return "error", str(exc)


def main():
    del sys.path[0]  # this file's directory: its module names are numba_tiles', not top-level ones
    pickle.dump(run(*pickle.load(sys.stdin.buffer)), sys.stdout.buffer)


if __name__ == "__main__":
    main()
