"""What a user sees of a long compile: a notice when one starts (how long such a compile took, from the benchmark
results), the time it has taken so far on a terminal or in Jupyter, and a bar of programs compiled side by side."""

import contextlib
import os
import re
import sys
import threading
import time


def quiet():
    """Whether ``NUMBA_TILES_QUIET`` (set and not ``0``) silences the notices of long compiles."""
    return os.environ.get("NUMBA_TILES_QUIET", "0") not in ("", "0")


def say(message):
    """Tell the user on stderr, once as it starts, that a compile will take a while (else they see a
    silent wait of seconds); nothing under ``NUMBA_TILES_QUIET=1``. In Jupyter, stderr shows in the cell."""
    if not quiet():
        print(f"numba_tiles: {message}", file=sys.stderr, flush=True)


def _interactive():
    """Whether a person reads stderr as it comes: a terminal, or a Jupyter cell (which, as a terminal does, rewrites
    a line after a carriage return). A log (a file, a pipe) is not rewritten: it gets the notices alone."""
    return sys.stderr.isatty() or "ipykernel" in sys.modules


TICK_S = 1.0  # how often a long wait's elapsed time is rewritten


class _Ticker(threading.Thread):
    """Calls ``tick()`` every `TICK_S` seconds, in a daemon thread, until `halt` (which waits for the last call)."""

    def __init__(self, tick):
        super().__init__(daemon=True, name="numba_tiles ticker")
        self._tick, self._halted = tick, threading.Event()
        self.start()

    def run(self):
        while not self._halted.wait(TICK_S):
            self._tick()

    def halt(self):
        self._halted.set()
        self.join()


@contextlib.contextmanager
def elapsed(what, since=None, when=None):
    """While the block runs, ``numba_tiles: <what> for 12 s`` on one line of stderr, rewritten each second from
    the first (the seconds since ``since``, a ``time.perf_counter()``, by default the block's start), then cleared:
    a long wait that a notice announced, seen to go on rather than silent. Only where a person reads it as it
    comes (`_interactive`), and not under ``NUMBA_TILES_QUIET=1``. ``when``: shown only once ``when()`` holds
    (checked each second: a wait that may turn out to be a cache hit).

    Example (on a terminal, ``numba_tiles: NVRTC has been compiling for 1 s`` until the block ends)::

        import time
        from numba_tiles._notices import elapsed

        with elapsed("NVRTC has been compiling"):
            time.sleep(1.5)
    """
    if quiet() or not _interactive():
        yield
        return
    start = time.perf_counter() if since is None else since
    width = 0

    def tick():
        nonlocal width
        if when is None or when():
            line = f"numba_tiles: {what} for {time.perf_counter() - start:.0f} s"
            sys.stderr.write("\r" + line.ljust(width))
            sys.stderr.flush()
            width = max(width, len(line))

    ticker = _Ticker(tick)
    try:
        yield
    finally:
        ticker.halt()
        if width:
            sys.stderr.write("\r" + " " * width + "\r")
            sys.stderr.flush()


# Whether a compile is long is decided by what it compiles, not by a timer: a notice then comes at
# the start of the wait, and a small program never prints, however busy the machine. A program of
# cuBLASDx takes seconds to a minute of NVRTC, one of cuFFTDx seconds; one of CUB alone, under a second.
# The figure a notice gives is the measured first compile of its form (`_compile_times`, which
# benchmarks/report.py makes from the benchmark results, as it makes the matmul guide's); a form no
# benchmark times gets none.
_FORMS = {
    "matmul": "tiles.matmul",
    **{f"Matmul.{entry}": "tiles.Matmul" for entry in ("load_a", "load_b", "multiply", "store")},
    **{f"FFT.{entry}": "tiles.FFT" for entry in ("execute", "load", "store", "index")},
}
_LONG = {"cublasdx": "cuBLASDx", "cufftdx": "cuFFTDx"}  # (a library's version key: the name a notice gives it)
UNTIMED = "tens of seconds the first time"
CONSTANT_TIME = "a few seconds the first time"  # (a cuBLASDx constant: its headers' parse, most of it)


def cold_time(instances):
    """What a notice says of the first compile of ``instances`` (MathDx's, of one or more programs): how long a
    first kernel of their form took, measured (`_compile_times.COLD`), or `UNTIMED` for a form not measured (or
    several forms at once)."""
    from ._compile_times import COLD

    forms = {_FORMS.get(i.intrinsic) for i in instances}
    return COLD.get(forms.pop(), UNTIMED) if len(forms) == 1 else UNTIMED


def long_library(library):
    """The MathDx library whose templates ``library``'s programs instantiate (its version is in their key), which
    makes their compile long: ``"cuBLASDx"`` or ``"cuFFTDx"``; None for a short one (CUB's)."""
    versions = library.versions()
    return next((name for key, name in _LONG.items() if key in versions), None)


def described(instances):
    """What the user wrote that makes ``instances``: ``tiles.matmul 64x64x64 (float16, float32)`` (the
    intrinsics; their templates' first three arguments where all are integers, as cuBLASDx's M, N, K;
    and their element types)."""
    from ._dtypes import SCALARS

    names = {d.cxx: d.name for d in SCALARS}
    shapes, dtypes = {}, {}
    for i in instances:
        arguments = re.split(r",\s*", i.template.partition("<")[2][:-1])
        shape = [a for a in arguments[:3] if a.isdigit()]
        if len(shape) == 3:
            shapes["x".join(shape)] = None
        dtypes.update(dict.fromkeys(names[a] for a in arguments if a in names))
    text = ", ".join(dict.fromkeys(f"tiles.{i.intrinsic}" for i in instances))
    text += "".join(f" {shape}" for shape in shapes)
    return text + (f" ({', '.join(dtypes)})" if dtypes else "")


def announce(instances, target):
    """The notice of one program about to compile, if it is long (MathDx's); returns whether it is."""
    long = long_library(instances[0].header.library)
    if long:
        say(
            f"compiling {described(instances)} with {long} for {target.arch} (NVRTC; {cold_time(instances)}; "
            "cached afterwards)"
        )
    return bool(long)


class SideBySide:
    """The notice and progress bar of ``programs`` built side by side in ``jobs`` worker processes: nothing while
    they come from the cache; at the first that NVRTC compiles, one notice, then a bar of the programs done and
    the time taken, redrawn each second (on a terminal or in Jupyter; a log gets the notice alone)."""

    def __init__(self, programs, jobs):
        self.programs, self.jobs, self.done, self.bar, self.ticker = programs, jobs, 0, None, None
        self._lock = threading.Lock()

    def compiling(self, instances, target):
        with self._lock:
            if self.bar is not None or quiet():
                return
            everything = [i for p in self.programs for i in p._sorted()]
            long = sorted({long_library(p.library) for p in self.programs} - {None})
            time_taken, kinds = (f"; {cold_time(everything)};", " and ".join(long) + " ") if long else (",", "")
            say(
                f"compiling {len(self.programs)} {kinds}programs side by side for "
                f"{target.arch}: {described(everything)} (NVRTC in {self.jobs} worker "
                f"processes{time_taken} cached afterwards)"
            )
            from tqdm import tqdm

            self.bar = tqdm(
                total=len(self.programs),
                initial=self.done,
                desc="numba_tiles NVRTC",
                unit="program",
                file=sys.stderr,
                leave=False,
                disable=not _interactive(),
            )
            if not self.bar.disable:  # (tqdm redraws as programs finish: its elapsed time would stand still)
                self.ticker = _Ticker(self._redraw)

    def _redraw(self):
        with self._lock:
            self.bar.refresh()

    def attempt(self, work):
        """Run ``work`` (one program's build), then count it done: its result, or the exception it raised."""
        try:
            result = work()
        except BaseException as exc:
            result = exc
        with self._lock:
            self.done += 1
            if self.bar is not None:
                self.bar.update()
        return result

    def close(self):
        if self.ticker is not None:
            self.ticker.halt()
        if self.bar is not None:
            self.bar.close()
