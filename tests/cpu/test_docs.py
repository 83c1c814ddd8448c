"""Every public name documents itself with an example that compiles (docs/api.md renders them); the
guide pages' code runs."""

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from numba.cuda.dispatcher import CUDADispatcher

import numba_tiles as tiles

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = [name for name in tiles.__all__ if not name.startswith("__")]


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_example_compiles(name):
    doc = inspect.cleandoc(getattr(tiles, name).__doc__)
    assert "Example::" in doc, f"tiles.{name} has no example"
    example = inspect.cleandoc(doc.split("Example::", 1)[1])
    namespace = {}
    exec(compile(example, f"<tiles.{name} example>", "exec"), namespace)
    if "cubin" in namespace:  # the example compiles its kernel itself, with its own signature
        assert namespace["cubin"][:4] == b"\x7fELF"
        return
    for kernel in (v for v in namespace.values() if isinstance(v, CUDADispatcher)):
        if kernel.py_func.__name__ != "bad":
            assert tiles.compile(kernel, "void(float32[:], float32[:])", arch="sm_90")[:4] == b"\x7fELF"


COMPILED = "<!-- docs-test: compiled -->"  # a page whose code compiles without a GPU instead of simulating


def python_blocks(page):
    """A page's ```python blocks in order (a ```{code-block} python one is shown, not run)."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)


PAGES = [p for p in sorted((ROOT / "docs").rglob("*.md")) if "_build" not in p.parts and python_blocks(p)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT / "docs").as_posix())
def test_guide_page_code_runs(page):
    """A page's code blocks run in order in a fresh process: on Numba's simulator (kernels launch and
    their results are checked against NumPy by the page's asserts), or compiled for sm_90 with no GPU
    on a page marked ``<!-- docs-test: compiled -->``."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if COMPILED not in page.read_text():
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    result = subprocess.run([sys.executable, "-c", "\n".join(python_blocks(page))], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]


def test_the_extending_api_is_documented_with_examples():
    """numba_tiles.extending: each public function of its own has an example; the module's whole example
    (a header and an intrinsic) is docs/guide/extending.md's, which test_guide_page_code_runs compiles;
    the API page lists every name."""
    from numba_tiles import extending

    api = (ROOT / "docs" / "api.md").read_text()
    assert ".. automodule:: numba_tiles.extending" in api
    for name in ("library", "intrinsic", "simulated_block", "simulated_warp"):
        assert re.search(r"Example[^\n]*::", getattr(extending, name).__doc__), name
        assert name in api, name
    namespace = {}
    exec(inspect.cleandoc(extending.library.__doc__.split("Example::", 1)[1]), namespace)
    assert namespace["MINE"].name == "mine"
    assert "block_sum_of_squares" in (ROOT / "docs" / "guide" / "extending.md").read_text()
