"""Compiling a numba-cuda-mlir kernel to a cubin with no GPU, its intrinsics linked (`numba_tiles.compile`)."""

import threading

from .._errors import error
from .mlir import ASKED, to_mlir

_cc_lock = threading.Lock()


def compile_kernel(kernel, signature, cc, arch):
    """The cubin of the numba-cuda-mlir ``kernel`` for ``signature`` (numba.cuda types or a string) and
    ``arch`` (compute capability ``cc``), linked with its intrinsics: no GPU needed."""
    import numba_cuda_mlir.tools as tools
    from numba_cuda_mlir import cuda as theirs_cuda

    if not isinstance(signature, str):
        try:
            signature = tuple(to_mlir(t) for t in signature)
        except TypeError as exc:
            raise error(
                "numba_tiles.compile",
                f"{exc}: numba-cuda-mlir kernels do not take it yet",
                "compile the kernel with numba-cuda's @cuda.jit (mm.tile and mm.batched, which take "
                "mm.operands(...), are numba-cuda's only for now: see the numba-cuda-mlir guide)",
            ) from None
    with _cc_lock:  # (numba-cuda-mlir takes the host's cc from the driver, whatever chip it is given)
        saved = tools._cached_cc
        tools._cached_cc, ASKED.arch = tuple(cc[:2]), arch
        try:
            return bytes(theirs_cuda.compile_cubin(getattr(kernel, "py_func", kernel), signature, chip=arch))
        finally:
            tools._cached_cc, ASKED.arch = saved, None
