"""The linked cubin (no GPU needed) has CUB's reduction inlined: no calls, no local memory, shuffles."""

import subprocess

import pytest
from cuda.pathfinder import find_nvidia_binary_utility

import numba_tiles as tiles

from .. import reference


def sass(cubin, tmp_path):
    nvdisasm = find_nvidia_binary_utility("nvdisasm")
    assert nvdisasm, "nvdisasm not found: pip install nvidia-cuda-nvdisasm (part of .[test])"
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin)
    return subprocess.run([nvdisasm, "-c", str(path)], check=True, capture_output=True, text=True).stdout


def external_calls(text):
    """CALLs to anything but ptxas's own helper routines (``$__internal_...``: shuffles or votes
    under a lane mask it cannot prove uniform, which CUB issues in some warp-level paths)."""
    return [line for line in text.splitlines() if " CALL" in line and "$__internal_" not in line]


def instructions(text):
    return [line.split(";")[0].split("*/", 1)[-1].split() for line in text.splitlines() if "/*" in line and ";" in line]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype,op", [(d, op) for d in reference.DTYPES for op in ("+", "max")] + [("uint32", "^")])
def test_cub_inlined_without_local_memory(arch, dtype, op, tmp_path):
    kernel = reference.make_kernel(op, 256)
    sig = f"void({dtype}[:], int64[:], {dtype}[:], {dtype}[:])"
    code = sass(tiles.compile(kernel, sig, arch=arch), tmp_path)
    opcodes = [ins[0] if not ins[0].startswith("@") else ins[1] for ins in instructions(code) if ins]
    names = {op_.split(".")[0] for op_ in opcodes}
    assert opcodes, "no instructions disassembled"
    assert not names & {"CALL", "LDL", "STL"}, f"external call or local memory in {sorted(names)}"
    assert names & {"SHFL", "REDUX"}, f"no warp shuffle or REDUX in {sorted(names)}"
    assert "BAR" in names  # the block-wide step of CUB's reduction and the reuse barrier



@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype,op,redux", [("int32", "+", "REDUX.SUM.S32"), ("uint32", "min", "REDUX.MIN"),
                                            ("int32", "max", "REDUX.MAX.S32")])
def test_32bit_integer_reductions_use_redux(arch, dtype, op, redux, tmp_path):
    """CUB's sm_80+ warp-reduction instruction, which it picks only for transparent functors."""
    kernel = reference.make_kernel(op, 256)
    code = sass(tiles.compile(kernel, f"void({dtype}[:], int64[:], {dtype}[:], {dtype}[:])", arch=arch), tmp_path)
    assert redux in code


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", reference.DTYPES)
@pytest.mark.parametrize("warp_size", [8, 32])
def test_warp_reduce_is_shuffles_only(arch, dtype, warp_size, tmp_path):
    """CUB's shuffle warp reduction: no external calls, no local or shared memory, no block barrier.

    (For 32-bit integers on logical warps under 32 lanes CUB issues REDUX with a per-group lane
    mask, which ptxas implements with an internal helper routine.)
    """
    kernel = reference.make_warp_kernel("max", warp_size)
    code = sass(tiles.compile(kernel, f"void({dtype}[:], int64[:], {dtype}[:], {dtype}[:])", arch=arch), tmp_path)
    names = {ins[0 if not ins[0].startswith("@") else 1].split(".")[0] for ins in instructions(code) if ins}
    assert not external_calls(code)
    assert not names & {"LDL", "STL", "LDS", "STS", "BAR"}, sorted(names)
    assert names & {"SHFL", "REDUX"}, sorted(names)


def test_full_warp_int32_sum_uses_redux(tmp_path):
    kernel = reference.make_warp_kernel("+", 32)
    code = sass(tiles.compile(kernel, "void(int32[:], int64[:], int32[:], int32[:])", arch="sm_90"), tmp_path)
    assert "REDUX.SUM.S32" in code


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("algorithm", reference.ALGORITHMS)
@pytest.mark.parametrize("items", [1, 4, 7, 16])
def test_items_stay_in_registers(arch, algorithm, items, tmp_path):
    """A thread-local array of up to 16 items: no local memory and no external calls, for every
    algorithm (the raking ones' single-warp phase calls ptxas's shuffle helper on sm_80)."""
    kernel = reference.make_items_kernel("max", 128, items, algorithm, "float64")
    sig = "void(float64[:], int64[:], float64[:], float64[:], float64[:])"
    code = sass(tiles.compile(kernel, sig, arch=arch), tmp_path)
    names = {op.split(".")[0] for op in (i[1] if i[0].startswith("@") else i[0] for i in instructions(code))}
    assert not names & {"LDL", "STL"}, sorted(names)
    assert not external_calls(code)
