"""numba-cuda's ``numba_cuda_extensions`` entry point (``init``, declared in pyproject.toml), and
numba-cuda-mlir's ``numba_cuda_mlir_extensions``.

numba-cuda calls it before a process's first kernel compile, so that numba_tiles' intrinsics
and its adaptations of numba-cuda (line tables, device functions, ``cache=True``) are in place
whatever the kernel's module imported. Importing numba_tiles here starts no NVRTC work
(`numba_cuda_compile.loaded_as_extension`).
"""


def init():
    """Import numba_tiles (registering its intrinsics).

    Example::

        from numba_tiles._autoload import init
        init()
    """
    import numba_tiles  # noqa: F401
