"""NVRTC in a process of its own, so that a kernel's programs compile side by side: NVRTC runs
one compile at a time in a process, and one cuBLASDx product alone takes over 10 s to instantiate.

`_compile` runs it as a script through `ask` (a worker needs cuda.core only, not numba): it reads the
pickled ``(source, options, output)`` from stdin and writes `run`'s pickled result. `_compile` also
calls `run` itself for the programs it compiles in its own process; `_libmathdx`'s worker speaks the
same protocol through `ask`.
"""

import pickle
import subprocess
import sys


def run(source, options, output):
    """NVRTC's ``output`` for ``source``: ``("ok", bytes)``, or ``("error", log)``."""
    from cuda.core import Program, ProgramOptions

    try:
        return "ok", bytes(Program(source, "c++", options=ProgramOptions(**options)).compile(output).code)
    except Exception as exc:  # cuda.core raises its own error types; keep NVRTC's log
        return "error", str(exc)


def ask(script, request, what):
    """Run the worker ``script`` (this file or another of the same protocol) in a fresh Python with the pickled
    ``request`` on stdin: its pickled ``("ok", result)`` or ``("error", log)``, or an error naming ``what``
    worker failed. (Parent side; a worker's own ``main`` imports no more than it needs.)"""
    done = subprocess.run([sys.executable, script], input=pickle.dumps(request), capture_output=True)
    if done.returncode != 0:
        return "error", f"the {what} worker process failed ({done.returncode}): {done.stderr.decode()[-2000:]}"
    return pickle.loads(done.stdout)


def main():
    del sys.path[0]  # this file's directory: its module names are numba_tiles', not top-level ones
    pickle.dump(run(*pickle.load(sys.stdin.buffer)), sys.stdout.buffer)


if __name__ == "__main__":
    main()
