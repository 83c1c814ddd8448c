"""The package version (its own module, so that modules below the package can read it)."""

__version__ = "0.1.0"
"""This numba_tiles' version, as ``numba-tiles --version`` prints it.

Example::

    import numba_tiles as tiles

    print(tiles.__version__)   # 0.1.0
"""
