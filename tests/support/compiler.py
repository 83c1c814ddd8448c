"""The compiler the shared test kernels are built with: numba-cuda's ``cuda``, or numba-cuda-mlir's under
``NUMBA_TILES_TEST_COMPILER=mlir`` (``make gpu-test-mlir``: the GPU tests of the collectives under it)."""

import os

MLIR = os.environ.get("NUMBA_TILES_TEST_COMPILER") == "mlir"
if MLIR:
    from numba_cuda_mlir import cuda  # noqa: F401
else:
    from numba import cuda  # noqa: F401
