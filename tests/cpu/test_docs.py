"""Every public name documents itself with an example that compiles; docs/api.md is generated from them."""

import inspect
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


def test_api_reference_is_current():
    result = subprocess.run([sys.executable, str(ROOT / "docs" / "generate.py"), "--check"])
    assert result.returncode == 0, "docs/api.md is stale: run python docs/generate.py"
