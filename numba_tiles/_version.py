"""The package version (its own module, so that modules below the package can read it)."""

__version__ = "0.1.0"
