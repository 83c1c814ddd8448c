"""What the notebooks beside this file share: the choice of GPU or simulator, the checks against
NumPy, the timing and the bandwidth plot.

Import it before Numba: where Numba finds no GPU (or ``NUMBA_ENABLE_CUDASIM=1`` is set), it sets
``NUMBA_ENABLE_CUDASIM=1``, so that every kernel runs on Numba's CUDA simulator. ``SIMULATOR``
says which it is and ``DEVICE`` names it.
"""

import importlib.util
import inspect
import io
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIMULATOR_NAME = "Numba's CUDA simulator"


def gpu_name():
    """The name of the GPU that Numba would use, or None where it finds none.

    Asked of ``cuda.is_available()`` in a child interpreter: ``numba.cuda`` becomes either the
    simulator or the driver's API when it is first imported, so asking in this process would
    settle the choice before it is made.
    """
    probe = ("from numba import cuda\n"
             "if cuda.is_available():\n"
             "    name = cuda.gpus[0].name\n"
             "    print(name.decode() if isinstance(name, bytes) else name)\n")
    env = {name: value for name, value in os.environ.items() if name != "NUMBA_ENABLE_CUDASIM"}
    try:
        found = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (found.stdout.strip() or None) if found.returncode == 0 else None


def _simulator_asked():
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0").strip() not in ("", "0")


if "numba.cuda" not in sys.modules and not _simulator_asked() and gpu_name() is None:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
# The tiny examples and the timing's one-thread sleep launch a few blocks on purpose.
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

import numpy as np  # noqa: E402  (after the choice: Numba reads it when imported)
from IPython.display import Image, Markdown, display  # noqa: E402
from numba import cuda  # noqa: E402

SIMULATOR = bool(cuda.config.ENABLE_CUDASIM)
if SIMULATOR:
    DEVICE = SIMULATOR_NAME
else:
    DEVICE = cuda.get_current_device().name
    DEVICE = DEVICE.decode() if isinstance(DEVICE, bytes) else DEVICE


def example(name):
    """The module ``examples/<name>.py`` of this repository, imported (once) by its path."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "examples" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def host(a):
    """A result as a NumPy array (a device array is copied; the simulator's results already are NumPy's)."""
    return a if isinstance(a, np.ndarray) else a.copy_to_host()


def regular(values, seg_len):
    """The offsets of equal segments of ``seg_len`` items over ``values``."""
    return np.arange(0, values.size + 1, seg_len)


_UFUNCS = {"+": np.add, "min": np.minimum, "max": np.maximum}


def reference(values, offsets, op="+"):
    """NumPy's ``op``-reduction of each ``values[offsets[i]:offsets[i+1]]``: float sums in float64,
    the op's identity for an empty segment."""
    identity = example("segmented_reduction").identity
    exact = op != "+" or values.dtype.kind != "f"
    want = np.full(len(offsets) - 1, identity(op, values.dtype), values.dtype if exact else np.float64)
    full = offsets[:-1] < offsets[1:]
    want[full] = _UFUNCS[op].reduceat(values[: offsets[-1]], offsets[:-1][full], dtype=want.dtype)
    return want


def check(got, values, offsets, op="+"):
    """Assert that ``got[i]`` is ``values[offsets[i]:offsets[i+1]]`` reduced with ``op``, as NumPy
    computes it; return ``got`` on the host.

    Integer results and min/max must match exactly; a float sum within rounding (it adds in
    another order).
    """
    got, want = host(got), reference(values, offsets, op)
    if op == "+" and values.dtype.kind == "f":
        ok = np.abs(got - want) <= 64 * np.finfo(values.dtype).eps * reference(np.abs(values), offsets)
    else:
        ok = got == want
    bad = np.flatnonzero(~ok)
    assert not bad.size, (f"{bad.size} of {ok.size} segments differ from NumPy, "
                          f"e.g. #{bad[0]}: {got[bad[0]]} != {want[bad[0]]}")
    return got


def show(*functions):
    """Show the source of ``functions`` (through ``functools.cache``), with the file and line it is at."""
    for function in map(inspect.unwrap, functions):
        lines, first = inspect.getsourcelines(function)
        path = Path(inspect.getsourcefile(function)).resolve().relative_to(REPO)
        display(Markdown(f"`{path}`, line {first}: `{function.__name__}`\n\n```python\n{''.join(lines)}```"))


@cuda.jit
def _sleep(microseconds):
    for _ in range(microseconds):
        cuda.nanosleep(1000)


def _events(library):
    """``library``'s (new CUDA event, milliseconds between two events)."""
    if library == "cupy":
        import cupy

        return cupy.cuda.Event, cupy.cuda.get_elapsed_time
    if library == "torch":
        import torch

        return lambda: torch.cuda.Event(enable_timing=True), lambda start, stop: start.elapsed_time(stop)
    return cuda.event, cuda.event_elapsed_time


def seconds(run, library="numba"):
    """Seconds that one ``run()`` keeps the GPU busy, by ``library``'s CUDA events ("numba",
    "cupy" or "torch"); the host's clock on the simulator.

    The run is queued behind a ~1 ms GPU sleep, so that the events time the GPU's work and not
    the host's launch cost (every library here launches on the legacy default stream, which
    orders them all).
    """
    if SIMULATOR:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start
    new, elapsed_ms = _events(library)
    start, stop = new(), new()
    _sleep[1, 1](1000)
    start.record()
    run()
    stop.record()
    stop.synchronize()
    return elapsed_ms(start, stop) / 1e3


def plot_bandwidth(bandwidth, lengths, *, title, copy_gbs=None):
    """A bar chart of ``bandwidth`` ({name: {segment length: GB/s}}) over ``lengths``, shown here
    and saved to the PNG named by ``NUMBA_TILES_PLOT`` where that is set.

    Names that start with "production" are hatched; ``copy_gbs`` (a device-to-device copy) is a
    dashed line.
    """
    from matplotlib.figure import Figure  # no pyplot: the Agg renderer draws the PNG, with or without a display

    fig = Figure(figsize=(11, 5), layout="constrained")
    ax = fig.subplots()
    names = [name for name in bandwidth if bandwidth[name]]
    bar = 0.8 / len(names)
    for i, name in enumerate(names):
        xs = [k + (i - (len(names) - 1) / 2) * bar for k, L in enumerate(lengths) if L in bandwidth[name]]
        ax.bar(xs, [bandwidth[name][L] for L in lengths if L in bandwidth[name]], bar, label=name,
               hatch="//" if name.startswith("production") else None, edgecolor="white")
    if copy_gbs:
        ax.axhline(copy_gbs, color="black", linestyle="--", linewidth=1, label="device-to-device copy")
    ax.set_xticks(range(len(lengths)), [f"{L:,}" for L in lengths])
    ax.set_xlabel("items per segment")
    ax.set_ylabel("GB/s (bytes read and written / median time)")
    ax.set_title(title)
    ax.legend(fontsize="small", ncols=2)
    ax.grid(axis="y", alpha=0.3)

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)  # modest: the notebook stores it
    png = buffer.getvalue()
    if os.environ.get("NUMBA_TILES_PLOT"):
        Path(os.environ["NUMBA_TILES_PLOT"]).write_bytes(png)
    display(Image(png))
