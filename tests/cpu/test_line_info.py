"""Line tables (no GPU needed): with ``lineinfo=True`` a kernel's SASS maps to the user's Python
call line, to the ``lto_libs`` header and to CUB's own headers, through the inlined entry point."""

import inspect
import re
import subprocess

import pytest
from cuda.pathfinder import find_nvidia_binary_utility
from numba import cuda, float32, int32

import numba_tiles as tiles

SIG = "void(float32[::1], float32[::1])"


def reduce_kernel(x, out):
    items = cuda.local.array(4, float32)
    tiles.block_load(x, items, block_dim=128, items_per_thread=4)
    total = tiles.block_reduce(items, "+", block_dim=128, items_per_thread=4)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = total


def scan_kernel(x, out):
    i = cuda.grid(1)
    running = tiles.block_scan(x[i], "+", block_dim=128)
    out[i] = running


def sort_kernel(x, out):
    keys = cuda.local.array(4, int32)
    for j in range(4):
        keys[j] = int32(x[cuda.grid(1) * 4 + j])
    tiles.block_radix_sort(keys, block_dim=128, items_per_thread=4)
    for j in range(4):
        out[cuda.grid(1) * 4 + j] = keys[j]


CASES = {
    "block_reduce": (reduce_kernel, "block_reduce.cuh", "cub/block/block_reduce.cuh"),
    "block_scan": (scan_kernel, "block_scan.cuh", "cub/block/block_scan.cuh"),
    "block_radix_sort": (sort_kernel, "block_radix_sort.cuh", "cub/block/block_radix_sort.cuh"),
}


def line_table(cubin, tmp_path):
    """nvdisasm's SASS with each instruction's source line and the lines it is inlined at."""
    nvdisasm = find_nvidia_binary_utility("nvdisasm")
    assert nvdisasm, "nvdisasm not found: pip install nvidia-cuda-nvdisasm (part of .[test])"
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin)
    return subprocess.run(
        [nvdisasm, "-c", "--print-line-info-inline", str(path)], check=True, capture_output=True, text=True
    ).stdout


def call_line(kernel, name):
    lines, first = inspect.getsourcelines(kernel)
    return first + next(i for i, line in enumerate(lines) if f"tiles.{name}(" in line)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", list(CASES))
def test_sass_maps_to_the_python_call_and_the_cuda_headers(name, arch, tmp_path):
    kernel, ours, cubs = CASES[name]
    table = line_table(tiles.compile(kernel, SIG, arch=arch, lineinfo=True), tmp_path)
    here, line = re.escape(__file__), call_line(kernel, name)
    # the entry point (marked as the line declaring our template) inlined at the kernel's call
    assert re.search(rf'File "[^"]*lto_libs/{ours}", line \d+ inlined at "{here}", line {line}\n', table), table[:3000]
    # CUB's code inlined into ours (directly, or through a helper of common.cuh)
    assert re.search(rf'File "[^"]*{cubs}", line \d+ inlined at "[^"]*lto_libs/\w+\.cuh"', table)
    # and the kernel's own lines
    assert re.search(rf'File "{here}", line {line}\n', table)


def test_without_lineinfo_there_is_no_line_table(tmp_path):
    assert "//## File" not in line_table(tiles.compile(reduce_kernel, SIG, arch="sm_90"), tmp_path)


def helper_that_scans(x):
    return tiles.block_scan(x, "+", block_dim=128)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", ["reduce", "scan", "sort", "device function"])
def test_a_debug_build_is_refused_and_lineinfo_builds_after_it(kernel, arch, tmp_path):
    """``debug=True``: ptxas's -G code lost a value live across an intrinsic's call on the H200, so the
    build is refused at typing, naming the intrinsic and the fix; the same kernel then builds with line info."""

    def through_a_helper(debug):
        helper = cuda.jit(device=True, debug=debug, opt=not debug)(helper_that_scans)

        def kernel(x, out):
            out[cuda.grid(1)] = helper(x[cuda.grid(1)])

        return kernel

    pyfunc, name = {
        "reduce": (lambda debug: reduce_kernel, "block_load"),
        "scan": (lambda debug: scan_kernel, "block_scan"),
        "sort": (lambda debug: sort_kernel, "block_radix_sort"),
        "device function": (through_a_helper, "block_scan"),
    }[kernel]
    with pytest.raises(
        tiles.TilesError,
        match=rf"^tiles\.{name}: debug builds \(debug=True\) of kernels that call "
        r"intrinsics are refused.*Fix: build with lineinfo=True instead",
    ):
        tiles.compile(pyfunc(True), SIG, arch=arch, debug=True)
    table = line_table(tiles.compile(pyfunc(False), SIG, arch=arch, lineinfo=True), tmp_path)
    assert "lto_libs/" in table
