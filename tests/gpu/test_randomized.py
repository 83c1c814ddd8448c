"""Seeded random configurations of every intrinsic over odd block shapes on the GPU, against NumPy.

tests/support/random_cases.py draws them (the CPU test compiles a prefix of this set): every family in
block shapes 33, 96, 200, 1000, (7, 9, 3), (5, 5, 5), (31, 1, 2) (and 32, 128, 256), items_per_thread
1, 3, 5, 11, 13, every algorithm, num_valid of 0, 1, partial, full and more, sampled dtypes. Several
configurations of one family and block shape share a kernel, launched on 5 blocks of fresh random
data; every output of every block is checked. The configurations a rule rejects are the CPU test's.
"""

import pytest
from numba import cuda

from ..support import random_cases as rc

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]

# ~530 configurations in ~170 kernels: under a minute on 14 workers (NVRTC ~0.3-0.5 s a kernel there).
CASES = rc.generate(per_family=48)
BATCHES = rc.batches(CASES)


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: b.id)
def test_random_configurations(batch, rng):
    print(rc.describe_seed(), batch, sep="\n")
    batch.run(rng)
