"""Matrix helpers the matmul tests share: bfloat16 bits, values as float64, the relative error of a product."""

import numpy as np


def bf16_bits(x):
    """float32 values → the int16 bits of their bfloat16 rounding (to nearest even)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).view(np.int16)


def values(x, precision=None):
    """What A or B holds, as float64 (bfloat16 bits widened)."""
    if precision == "bf16":
        return (np.asarray(x).view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)


def relative_error(result, a, b, c, alpha, beta, precision=None):
    """‖result − (alpha·A·B + beta·C)‖_F / ‖reference‖_F, the reference in float64."""
    expected = alpha * (values(a, precision) @ values(b, precision)) + beta * values(c)
    return float(np.linalg.norm(values(result) - expected) / np.linalg.norm(expected))
