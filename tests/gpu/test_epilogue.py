"""Fused epilogues on the GPU against NumPy, every store of the tile matmul (the checks: tests/support/epilogues.py)."""

import pytest
from numba import cuda

from ..support import epilogues

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda.is_available(), reason="no CUDA GPU")]
HOPPER = cuda.is_available() and cuda.get_current_device().compute_capability == (9, 0)
hopper = pytest.mark.skipif(not HOPPER, reason="no Hopper (sm_90) GPU")


@pytest.mark.parametrize(
    "precision,out,staged",
    [(None, "float32", False), (None, "float32", True), (None, "float16", True), ("bf16", "int16", False)],
)
def test_the_register_form_stores_through_the_epilogue(precision, out, staged, rng):
    epilogues.register_form(rng, (64, 64, 32), 128, precision, out, staged)


@pytest.mark.parametrize("full", [False, True], ids=["smaller products", "whole tiles"])
@pytest.mark.parametrize("implementation", ["cp.async", pytest.param("tma", marks=hopper)])
@pytest.mark.parametrize("precision,out", [(None, "float16"), (None, "float32"), ("bf16", "int16")])
def test_a_batch_stores_through_the_epilogue(precision, out, implementation, full, rng):
    epilogues.batch(rng, (64, 64, 64), 128, precision, out, implementation, full=full)


@hopper
@pytest.mark.parametrize("full", [False, True], ids=["smaller products", "whole tiles"])
@pytest.mark.parametrize("precision,out", [(None, "float16"), ("bf16", "float32")])
def test_the_wgmma_batch_stores_through_the_epilogue(precision, out, full, rng):
    epilogues.batch(rng, (128, 128, 32), 256, precision, out, "wgmma", stages=4, full=full)


@pytest.mark.parametrize(
    "implementation", [pytest.param("wgmma", marks=hopper), pytest.param("libmathdx", marks=hopper), "cp.async"]
)
@pytest.mark.parametrize("out", ["int16", "float32"])
@pytest.mark.parametrize("call", ["tile", "gemm"])
def test_a_tile_stores_through_the_epilogue(out, implementation, call, rng):
    epilogues.tile(rng, (128, 128, 64), out, implementation, call=call)


@pytest.mark.parametrize(
    "implementation", [pytest.param("wgmma", marks=hopper), pytest.param("libmathdx", marks=hopper), "cp.async"]
)
def test_a_fastmath_epilogue_keeps_its_fastmath(implementation, rng):
    """The tanh GELU under fastmath=True (one MUFU.TANH an item), beta 0: C of bf16 within its rounding."""
    epilogues.tile(rng, (128, 128, 64), "int16", implementation, tanh=True)
