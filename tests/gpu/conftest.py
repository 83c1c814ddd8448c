import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles
from numba_tiles import _compile

from .. import reference


@pytest.fixture(scope="session", autouse=True)
def precompiled():
    """Compile every instantiation the GPU tests use in one NVRTC program (seconds, not minutes).

    The kernels then find their LTO-IR in the in-process memo; the kernel path itself is the
    one users take (typing, lowering, link), only NVRTC's work is batched.
    """
    if not cuda.is_available():
        return
    cc = cuda.get_current_device().compute_capability
    spec = tiles.block_reduce.spec
    instances = [
        spec.resolve_values(np.dtype(d).type(0), op, block_dim=bd, num_valid=nv)[0]
        for d, op in reference.cases()
        for bd in BLOCK_DIMS
        for nv in (None, np.int32(0))
    ]
    _compile.build_instances(instances, "sm_%d%d" % cc)


BLOCK_DIMS = [32, 128, 256, 1024, (16, 16), (8, 8, 4)]
