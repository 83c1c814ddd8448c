"""Sphinx configuration: `make docs` builds docs/_build/html with warnings as errors."""

import inspect
import sys

from sphinx.errors import PycodeError
from sphinx.pycode import ModuleAnalyzer

import numba_tiles
from numba_tiles import _spec

project = "numba_tiles"
version = release = numba_tiles.__version__
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.autosummary"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
# `name` in a docstring is a cross-reference where Sphinx can resolve it, plain code otherwise.
default_role = "py:obj"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True  # (``over=CUB``, not the repr of the library)
autosummary_generate = False  # (the API page's tables only: every entry is on the page itself)
myst_heading_anchors = 3
html_theme = "alabaster"
html_title = f"numba_tiles {version}"


def in_kernel_signature(app, obj, bound_method):
    """A description's in-kernel method (``Matmul.load_a``, a `numba_tiles.extending.method`) has its declaration's
    signature, whose ``self`` autodoc leaves out as for any method."""
    if isinstance(obj, _spec.method):
        obj.__signature__ = inspect.signature(obj.declaration)


def constant_docstring(app, what, name, obj, options, lines):
    """A constant that a module imports (``numba_tiles.extending.CUB``) has the docstring it has where it is
    assigned (the string after ``CUB = Library(...)`` in ``numba_tiles._library``), not its type's."""
    if what != "data" or not name.startswith("numba_tiles."):
        return
    short = name.rsplit(".", 1)[1]
    for module in [m for n, m in sorted(sys.modules.items()) if n.startswith("numba_tiles.")]:
        if vars(module).get(short) is obj:
            try:
                docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
            except PycodeError:
                continue
            if ("", short) in docs:
                lines[:] = docs["", short]
                return


def setup(app):
    app.connect("autodoc-before-process-signature", in_kernel_signature)
    app.connect("autodoc-process-docstring", constant_docstring)
