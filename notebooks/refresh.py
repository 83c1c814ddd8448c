"""Run the notebooks on a GPU and store them with their outputs and what they ran on.

    python notebooks/refresh.py [NOTEBOOK ...] [--commit REV] [--out DIR]

Each notebook (by default every ``notebooks/*.ipynb``) runs top to bottom in a fresh Jupyter
kernel of this interpreter (nbclient and ipykernel), as Jupyter runs it for a reader: in the
notebook's folder, with this environment, the repository first on ``PYTHONPATH``. It is then
written back with its outputs and ``metadata["numba_tiles"]``: the commit, the device, the date,
and the digest of its code cells and of the sources they run besides (``sources``).
tests/cpu/test_notebook_outputs.py checks that the digest is still the current code's.

Nothing is written where no GPU is found, where a cell fails, or where the commit is unknown
(no git here: pass ``--commit``). ``--out DIR`` writes the notebooks to DIR instead of in place.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NOTEBOOKS = sorted(HERE.glob("*.ipynb"))
CELL_TIMEOUT = 600  # seconds per cell: 1 GiB arrays, checks against NumPy, first compiles


def code_cells(notebook):
    """The code cells of ``notebook`` (as nbformat or json.load reads it) with their sources as text."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = cell["source"]
            yield cell, "".join(source) if isinstance(source, list) else source


def sources(notebook):
    """The files besides its code cells that a notebook's outputs come from: the helper
    ``_notebook.py``, and each ``examples/<name>.py`` it imports with ``example("<name>")`` (whose
    source it may show)."""
    code = "\n".join(source for _, source in code_cells(notebook))
    names = dict.fromkeys(re.findall(r"""\bexample\(["']([\w.]+)["']\)""", code))
    return [HERE / "_notebook.py"] + [REPO / "examples" / f"{name}.py" for name in names]


def digest(notebook):
    """SHA-256 of the notebook's code cells and of its ``sources``, each prefixed by its length."""
    h = hashlib.sha256()
    texts = [source for _, source in code_cells(notebook)] + [path.read_text() for path in sources(notebook)]
    for text in texts:
        data = text.encode()
        h.update(b"%d:" % len(data) + data)
    return h.hexdigest()


def kernel_env(simulator, **extra):
    """The environment for a notebook's kernel: this one, on the simulator or not, the repository
    first on PYTHONPATH and its other entries absolute (the kernel starts in notebooks/)."""
    env = {name: value for name, value in os.environ.items() if name != "NUMBA_ENABLE_CUDASIM"}
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    paths = [str(REPO)] + [str(Path(p).resolve()) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.update(extra)
    return env


class CellFailed(Exception):
    """A cell raised: the message names it and the error; ``notebook`` holds the run so far."""

    def __init__(self, message, notebook):
        super().__init__(message)
        self.notebook = notebook


def execute(path, env, scratch, *, timeout=CELL_TIMEOUT):
    """Run the notebook at ``path`` in a fresh IPython kernel of this interpreter, in the notebook's
    folder with the environment ``env``; return it executed (the file is not written).

    ``scratch``: a folder for the kernel spec. Raises CellFailed at the first cell that raises.
    """
    import nbclient
    import nbformat

    # Our own "python3" kernel spec, found first through JUPYTER_PATH: one installed for the user
    # may start another interpreter, without numba_tiles.
    spec = Path(scratch) / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))

    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=False,
                                     resources={"metadata": {"path": str(Path(path).parent)}})
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(spec.parents[1])
    try:
        client.execute(env=env)
    except nbclient.exceptions.CellExecutionError:
        pass  # its error output, read below, says more briefly where and what
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_PATH")
        else:
            os.environ["JUPYTER_PATH"] = saved
    for i, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                trace = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output.get("traceback", [])))
                tail = "\n".join(trace.splitlines()[-15:])
                raise CellFailed(f"{Path(path).name}: cell {i} raised {output.get('ename')}: "
                                 f"{output.get('evalue')}\n{tail}", notebook)
    return notebook


def text_outputs(notebook):
    """All the text the notebook's outputs hold (streams and text/plain or text/markdown data)."""
    parts = []
    for cell, _ in code_cells(notebook):
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            data = output.get("data", {})
            parts += [data.get("text/plain", ""), data.get("text/markdown", "")]
    return "\n".join("".join(p) if isinstance(p, list) else p for p in parts)


def current_commit():
    """``git rev-parse --short HEAD``, with "-dirty" where a tracked file differs from it (the
    notebooks themselves aside: their outputs are what is being written); None without git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", ".", ":(exclude)notebooks/*.ipynb"],
                               cwd=REPO, capture_output=True).returncode
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def notebook_device(env):
    """(simulator?, device name) as the notebooks' helper picks them in a kernel's environment."""
    probe = "import _notebook\nprint(_notebook.SIMULATOR, _notebook.DEVICE, sep='\\t')"
    found = subprocess.run([sys.executable, "-c", probe], cwd=HERE, env=env, capture_output=True, text=True)
    if found.returncode:
        sys.exit(f"refresh: the notebooks' helper failed to start:\n{found.stderr[-3000:]}")
    simulator, device = found.stdout.strip().splitlines()[-1].split("\t", 1)
    return simulator == "True", device


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebooks/*.ipynb")
    parser.add_argument("--commit", help="the commit to record (default: git's, with -dirty)")
    parser.add_argument("--out", type=Path, help="write the notebooks to this folder instead of in place")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT, help="seconds a cell may run")
    args = parser.parse_args(argv)

    commit = args.commit or current_commit()
    if not commit:
        sys.exit("refresh: no git here to tell the commit: pass --commit (git rev-parse --short HEAD where the tree is)")
    env = kernel_env(simulator=False)
    simulator, device = notebook_device(env)
    if simulator:
        sys.exit("refresh: no GPU found (the notebooks would run on Numba's CUDA simulator): nothing written")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)

    import nbformat

    failed = 0
    for path in [p.resolve() for p in args.notebooks] or NOTEBOOKS:
        start = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory() as scratch:
                notebook = execute(path, env, scratch, timeout=args.timeout)
        except CellFailed as e:
            print(f"refresh: {e}\nrefresh: {path.name} not written", file=sys.stderr)
            failed += 1
            continue
        if device not in text_outputs(notebook):
            print(f"refresh: {path.name} did not print the device {device!r}: not written", file=sys.stderr)
            failed += 1
            continue
        notebook.metadata["numba_tiles"] = {
            "commit": commit,
            "device": device,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "digest": digest(notebook),
        }
        target = (args.out / path.name) if args.out else path
        nbformat.write(notebook, target)
        cells = sum(1 for _ in code_cells(notebook))
        print(f"{path.name}: {cells} code cells executed on {device} in {time.perf_counter() - start:.0f} s "
              f"at {commit} -> {target}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
