"""NVRTC in a process of its own, so that a kernel's programs compile side by side: NVRTC runs
one compile at a time in a process, and one cuBLASDx product alone takes over 10 s to instantiate.

Run as a script by `_compile` (not imported: a worker needs cuda.core only): reads the pickled
``(source, options, output)`` from stdin, writes the pickled ``("ok", bytes)`` or ``("error", log)``.
"""

import pickle
import sys


def main():
    del sys.path[0]  # this file's directory: its module names are numba_tiles', not top-level ones
    from cuda.core import Program, ProgramOptions

    source, options, output = pickle.load(sys.stdin.buffer)
    try:
        result = ("ok", bytes(Program(source, "c++", options=ProgramOptions(**options)).compile(output).code))
    except Exception as exc:  # cuda.core's errors carry NVRTC's log
        result = ("error", str(exc))
    pickle.dump(result, sys.stdout.buffer)


if __name__ == "__main__":
    main()
