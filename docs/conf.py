"""Sphinx configuration: `make docs` builds docs/_build/html with warnings as errors."""

import numba_tiles

project = "numba_tiles"
version = release = numba_tiles.__version__
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
# `name` in a docstring is a cross-reference where Sphinx can resolve it, plain code otherwise.
default_role = "py:obj"
autodoc_member_order = "bysource"
myst_heading_anchors = 3
html_theme = "alabaster"
html_title = f"numba_tiles {version}"
