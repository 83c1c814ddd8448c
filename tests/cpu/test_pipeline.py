"""tiles.PipelineMatmul with no GPU: the description's checks, libmathdx's code linked for sm_90a (SASS: wgmma and
TMA, a K-tile's wgmma issued back to back, no calls, no local memory read or in the K loop; the launch check's
message only under NUMBA_TILES_DEBUG), and misuse as a TilesError naming the fix.

Two pipelines are made here (bf16 128 x 128 x 64, 2 stages, 256 threads; tf32 128 x 128 x 32): libmathdx takes
15-35 s each on 2 cores the first time, then the disk cache answers (tests/gpu/test_pipeline.py runs the others).
"""

import re

import pytest
from numba import cuda

import numba_tiles as tiles

from .test_sass import external_calls, instructions, sass

MM = tiles.PipelineMatmul((128, 128, 64), "int16", precision="bf16")  # (the one of its docstring's example)


@cuda.jit
def gemm(pipe, c, alpha, beta):
    t = cuda.blockIdx.x
    while t < 6:
        MM.tile(pipe, c, t // 3, t % 3, alpha, beta)
        t += cuda.gridDim.x


SIGNATURE = "void(uint8[::1], float32[:, ::1], float32, float32)"


def test_the_description_checks_and_sizes_itself_with_no_compile():
    mm = tiles.PipelineMatmul((64, 64, 32), "float16", block_dim=128, stages=3)
    assert (mm.m, mm.n, mm.k, mm.threads, mm.c_dtype) == (64, 64, 32, 128, "float32")
    assert mm.grid((130, 64)) == (3, 1) and mm == tiles.PipelineMatmul((64, 64, 32), "float16", block_dim=128, stages=3)
    for kwargs, message in (
            (dict(shape=(100, 128, 64), dtype="float16"), "wgmma tiles are multiples of 64 rows"),
            (dict(shape=(128, 128, 64), dtype="float32"), "or dtype=float32 with precision='tf32'"),
            (dict(shape=(128, 128, 32), dtype="float16", precision="tf32"), "dtype float16 with precision='tf32'"),
            (dict(shape=(128, 128, 32), dtype="float32", precision="tf32"), "A row-major and B column-major"),
            (dict(shape=(128, 128, 32), dtype="float32", precision="tf32", arrangement=("row_major", "col_major"),
                  c_dtype="float16"), "C is float32 or A's dtype"),
            (dict(shape=(128, 128, 64), dtype="float16", precision="bf16"), "dtype float16 with precision='bf16'"),
            (dict(shape=(128, 128, 64), dtype="float16", c_dtype="float64"), "C is float32 or A's dtype"),
            (dict(shape=(128, 128, 64), dtype="float16", stages=0), "stages must be an int from 1 to 16"),
            (dict(shape=(128, 128, 64), dtype="float16", block_dim=96), "whole warpgroups of 128 threads"),
            (dict(shape=(128, 128, 64), dtype="float16", block_dim=(128, 2)), "whole warpgroups of 128 threads"),
            (dict(shape=(128, 128), dtype="float16"), "shape must be a tuple (M, N, K)"),
            (dict(shape=(128, 128, 64), dtype="float16", arrangement=("row_major",)), "arrangement must be a 2-tuple")):
        with pytest.raises(tiles.TilesError, match=re.escape(message)) as info:
            tiles.PipelineMatmul(**kwargs)
        assert "tiles.PipelineMatmul" in str(info.value) and "Fix:" in str(info.value)


def test_the_kernel_links_for_sm_90a_to_wgmma_and_tma_without_local_memory(tmp_path):
    text = sass(tiles.compile(gemm, SIGNATURE, arch="sm_90a"), tmp_path)
    ops = [i[1:] if i[0].startswith("@") else i for i in instructions(text) if i]
    names = {op[0].split(".")[0] for op in ops}
    assert {"HGMMA", "UTMALDG", "SYNCS"} <= names, sorted(names)
    # No local memory is read, and none is written in the K loop (between the first and last wgmma). Outside it,
    # a tile's accumulator frame is written once (after the loop; never read back: dead stores ptxas keeps, 16
    # STL.128 a tile).
    assert "LDL" not in names
    products = [i for i, op in enumerate(ops) if op[0].startswith("HGMMA")]
    assert not [op for op in ops[products[0]:products[-1]] if op[0].startswith("STL")], "local memory in the K loop"
    assert not external_calls(text)
    assert any(" HGMMA.64x128x16.F32.BF16" in line for line in text.splitlines())
    assert_wgmma_not_serialized(text)


def assert_wgmma_not_serialized(text):
    """A K-tile's wgmma go out back to back, one wait after the last. (With any call in the kernel, a printf's
    included, ptxas waits after each one: warning C7509. On an H200 the 8192^3 GEMMs went from 508 to 582 TFLOP/s
    in bf16 and from 317 to 362 in tf32 without it: benchmarks/results/matmul-2026-11-24-pipeline-{printf,trap}.json.)"""
    products = sum(" HGMMA." in line for line in text.splitlines())
    waits = sum(" WARPGROUP.DEPBAR" in line for line in text.splitlines())
    assert products >= 2 and waits < products, f"{products} HGMMA, {waits} WARPGROUP.DEPBAR: serialized"


@pytest.mark.filterwarnings("ignore::numba.cuda.core.errors.NumbaPerformanceWarning")  # (serialized, as it says)
def test_debug_builds_keep_the_launch_check_message(tmp_path, monkeypatch):
    """NUMBA_TILES_DEBUG=1 compiles the launch check's message in (wgmma then serialized, as any call makes them);
    without it a wrong launch traps with no call in the kernel (tests/gpu/test_pipeline.py launches both)."""
    monkeypatch.setenv("NUMBA_TILES_DEBUG", "1")
    text = sass(tiles.compile(gemm, SIGNATURE, arch="sm_90a"), tmp_path)
    calls = " ".join(external_calls(text))
    assert "vprintf" in calls and "__assertfail" in calls, calls


def test_a_kernel_whose_wgmma_ptxas_serializes_warns_at_its_link(tmp_path):
    """A print() in a PipelineMatmul kernel is a call, so ptxas serializes its wgmma: the link warns, naming the
    kernel and the fix. (A fresh string in the kernel each run, so that its link is not in the disk cache.)"""
    import uuid

    from numba.cuda.core.errors import NumbaPerformanceWarning

    source = f"""
@cuda.jit
def noisy(pipe, c, alpha, beta):
    if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
        print("{uuid.uuid4().hex}")
    MM.tile(pipe, c, 0, 0, alpha, beta)
"""
    scope = {"cuda": cuda, "MM": MM}
    exec(compile(source, str(tmp_path / "noisy.py"), "exec"), scope)
    with pytest.warns(NumbaPerformanceWarning, match=r"ptxas serialized the wgmma .* of kernel .*noisy, due to the "
                                                     r"presence of Extern calls.* keep calls out of kernels"):
        tiles.compile(scope["noisy"], SIGNATURE, arch="sm_90a")


TF32 = tiles.PipelineMatmul((128, 128, 32), "float32", precision="tf32", arrangement=("row_major", "col_major"))


@cuda.jit
def gemm_tf32(pipe, c, alpha, beta):
    TF32.tile(pipe, c, cuda.blockIdx.y, cuda.blockIdx.x, alpha, beta)


def test_tf32_links_to_wgmma_of_tf32_from_tma_tiles(tmp_path):
    text = sass(tiles.compile(gemm_tf32, SIGNATURE, arch="sm_90a"), tmp_path)
    names = {(i[1:] if i[0].startswith("@") else i)[0].split(".")[0] for i in instructions(text) if i}
    assert {"HGMMA", "UTMALDG"} <= names and "LDL" not in names, sorted(names)
    assert any(" HGMMA.64x128x8.F32.TF32" in line for line in text.splitlines())
    assert_wgmma_not_serialized(text)


@pytest.mark.parametrize("arch,message", [
    ("sm_90", r"which links only for sm_90a, not sm_90 .*Fix: pass arch='sm_90a'"),
    ("sm_80", r"runs on Hopper \(sm_90\) only.*Fix: use tiles.Matmul on other GPUs"),
])
def test_other_targets_are_refused_naming_the_fix(arch, message):
    with pytest.raises(tiles.TilesError, match=re.compile(message, re.S)):
        tiles.compile(gemm, SIGNATURE, arch=arch)


@pytest.mark.parametrize("signature,message", [
    ("void(int32[::1], float32[:, ::1], float32, float32)", "pipe must be the uint8 array mm.prepare(a, b) returned"),
    ("void(uint8[::1], int16[:, ::1], float32, float32)", "c holds int16; this PipelineMatmul's C is float32"),
    ("void(uint8[::1], float32[::1], float32, float32)", "c must be a 2-D array"),
])
def test_misuse_in_a_kernel_is_a_clear_compile_time_error(signature, message):
    with pytest.raises(tiles.TilesError, match=re.escape(message)) as info:
        tiles.compile(gemm, signature, arch="sm_90a")
    first = str(info.value).splitlines()[0]
    assert first.startswith("tiles.PipelineMatmul.tile: ") and message in first and "Fix:" in first


# PipelineMatmul.batched: our warp-specialized loop on CuTe's GMMA atoms (lto_libs/wgmma.cuh), no libmathdx.
BMM = tiles.PipelineMatmul((128, 128, 32), "int16", precision="bf16", c_dtype="int16", stages=4)


@cuda.jit
def bmm(pipe, c, alpha, beta):
    BMM.batched(pipe, c, alpha, beta)


BATCHED = "void(uint8[::1], int16[:, :, ::1], float32, float32)"


def test_batched_sizes_itself_on_the_host():
    # 1 KiB of alignment, 4 stages of A's 128 x 32 and B's 32 x 128 bf16 tiles, C's 128 x 128 tile, the barriers
    assert BMM.batched_threads == 384 and BMM.batched_shared_memory_bytes == 1024 + 4 * 2 * 8192 + 32768 + 4 * 20 + 16
    assert tiles.PipelineMatmul((64, 256, 64), "float16", stages=2).batched_threads == 256


@pytest.mark.parametrize("shape,dtype,c_dtype,arrangement,stages,atom", [
    ((128, 128, 32), "int16", "int16", ("row_major", "row_major"), 4, "64x128x16.F32.BF16"),
    ((64, 256, 64), "float16", "float32", ("col_major", "col_major"), 2, "64x256x16.F32"),
    ((128, 192, 16), "float16", "float16", ("row_major", "col_major"), 8, "64x192x16.F32"),
    ((128, 64, 128), "int16", "float32", ("col_major", "row_major"), 2, "64x64x16.F32.BF16"),
], ids=str)
def test_batched_links_for_sm_90a_to_wgmma_and_tma_without_local_memory(shape, dtype, c_dtype, arrangement, stages,
                                                                        atom, tmp_path):
    mm = tiles.PipelineMatmul(shape, dtype, precision="bf16" if dtype == "int16" else None, c_dtype=c_dtype,
                              arrangement=arrangement, stages=stages)

    @cuda.jit
    def kernel(pipe, c, alpha, beta):
        mm.batched(pipe, c, alpha, beta)

    text = sass(tiles.compile(kernel, f"void(uint8[::1], {c_dtype}[:, :, ::1], float32, float32)", arch="sm_90a"),
                tmp_path)
    names = {(i[1:] if i[0].startswith("@") else i)[0].split(".")[0] for i in instructions(text) if i}
    # TMA loads and stores, the products' counter, and no local memory: N / 2 floats of C a thread stay in registers
    assert {"HGMMA", "UTMALDG", "UTMASTG", "ATOMG", "SYNCS"} <= names and not {"LDL", "STL"} & names, sorted(names)
    assert any(f" HGMMA.{atom}" in line for line in text.splitlines())
    assert not external_calls(text)
    if shape[2] > 16:  # (a K-step of 16 is one wgmma, then the loop's own wait)
        assert_wgmma_not_serialized(text)


@pytest.mark.parametrize("make,signature,arch,message", [
    (dict(shape=(128, 128, 32), dtype="float32", precision="tf32", arrangement=("row_major", "col_major")),
     "void(uint8[::1], float32[:, :, ::1], float32, float32)", "sm_90a", "it multiplies fp16 and bf16 operands"),
    (dict(shape=(128, 256, 64), dtype="float16", c_dtype="float16"), "void(uint8[::1], float16[:, :, ::1], "
     "float32, float32)", "sm_90a", "use M = 64 with N of 64 to 256, or M = 128 with N of 64 to 192"),
    (dict(shape=(128, 128, 64), dtype="float16", c_dtype="float16", stages=8), "void(uint8[::1], float16[:, :, ::1], "
     "float32, float32)", "sm_90a", "over the 232448 a block can have"),
    (dict(shape=(128, 128, 32), dtype="float16"), "void(uint8[::1], float16[:, :, ::1], float32, float32)", "sm_90a",
     "c holds float16; this PipelineMatmul's C is float32"),
    (dict(shape=(128, 128, 32), dtype="float16"), "void(uint8[::1], float32[:, ::1], float32, float32)", "sm_90a",
     "c must be a 3-D array"),
    (dict(shape=(128, 128, 32), dtype="float16"), "void(int64[::1], float32[:, :, ::1], float32, float32)", "sm_90a",
     "pipe must be the uint8 array mm.prepare_batched(a, b, c) returned"),
    (dict(shape=(128, 128, 32), dtype="float16"), "void(uint8[::1], float32[:, :, ::1], float32, float32)", "sm_80",
     "runs on Hopper (sm_90) only"),
    (dict(shape=(128, 128, 32), dtype="float16"), "void(uint8[::1], float32[:, :, ::1], float32, float32)", "sm_90",
     "which links only for sm_90a, not sm_90"),
], ids=lambda v: v if isinstance(v, str) and v.startswith("sm_") else None)
def test_batched_misuse_is_a_clear_compile_time_error(make, signature, arch, message):
    mm = tiles.PipelineMatmul(**make)

    @cuda.jit
    def kernel(pipe, c, alpha, beta):
        mm.batched(pipe, c, alpha, beta)

    with pytest.raises(tiles.TilesError, match=re.escape(message)) as info:
        tiles.compile(kernel, signature, arch=arch)
    first = str(info.value).splitlines()[0]
    assert first.startswith("tiles.") and "PipelineMatmul" in first and message in first and "Fix:" in first


@pytest.mark.parametrize("shapes,message", [
    (((4, 128, 64), (4, 64, 128), (4, 128, 64)), "they must be count x m x k, count x k x n and count x m x n"),
    (((4, 160, 64), (4, 64, 128), (4, 160, 128)), "each product is one 128 x 128 tile here"),
    (((4, 128, 64), (4, 64, 128)), "c must be a 3-D array of int16"),
])
def test_batched_prepare_checks_the_arrays_naming_the_fix(shapes, message):
    import numpy as np

    arrays = [np.zeros(s, np.int16) for s in shapes]
    if len(arrays) == 2:  # (a 2-D C)
        arrays.append(np.zeros((128, 128), np.int16))
    with pytest.raises(tiles.TilesError, match=re.escape(message)) as info:
        BMM.prepare_batched(*arrays)
    assert "tiles.PipelineMatmul.prepare_batched" in str(info.value) and "Fix:" in str(info.value)


def test_the_batched_loop_links_in_a_second_kernel_after_a_refused_one(tmp_path):
    """A refused call (sm_90) and then the same kernel for sm_90a in one process: the second links."""
    with pytest.raises(tiles.TilesError):
        tiles.compile(bmm, BATCHED, arch="sm_90")
    text = sass(tiles.compile(bmm, BATCHED, arch="sm_90a"), tmp_path)
    assert " HGMMA.64x128x16.F32.BF16" in text
