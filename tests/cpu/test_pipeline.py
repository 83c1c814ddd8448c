"""tiles.Matmul's Hopper code with no GPU: which implementation a description gets, our wgmma block and libmathdx's
pipeline linked for sm_90a for ``tile``, and our wgmma loop for ``batched`` (SASS: wgmma and TMA, a K-tile's wgmma
issued back to back, no calls, no local memory read or in the K loop; the launch check's message only under
NUMBA_TILES_DEBUG), and misuse of the operands as a TilesError naming the fix.

One libmathdx pipeline is made here (bf16 128 x 128 x 64, 2 stages): libmathdx takes 15-35 s for each of its
traits and its code on 2 cores the first time, then the disk cache answers (tests/gpu/test_pipeline.py runs the
others, tf32's among them).
"""

import re

import numpy as np
import pytest
from numba import cuda
from numba.cuda import types

import numba_tiles as tiles

from ..support.sass import external_calls, instructions, sass

MM = tiles.Matmul((128, 128, 64), "int16", precision="bf16")
WIDE = tiles.Matmul((128, 256, 64), "float16", stages=3)  # (wgmma's 128 rows take at most 192 columns)
TF32 = tiles.Matmul((128, 128, 32), "float32", precision="tf32", arrangement=("row_major", "col_major"))


@cuda.jit
def gemm(ops, alpha, beta):
    t = cuda.blockIdx.x
    while t < 6:
        MM.tile(ops, t // 3, t % 3, alpha, beta)
        t += cuda.gridDim.x


SIGNATURE = (MM.operands_type("float32"), types.float32, types.float32)


def names_of(text):
    return {(i[1:] if i[0].startswith("@") else i)[0].split(".")[0] for i in instructions(text) if i}


def test_the_implementation_is_chosen_by_gpu_dtypes_and_shape():
    """`Matmul._plan` (what operands() and the kernel's typing both ask): Hopper's code where it serves, the
    register form's loops elsewhere; the block and shared memory each launch needs."""
    f16 = tiles.Matmul((64, 64, 64), "float16", stages=2)
    bf16 = tiles.Matmul((128, 128, 32), "int16", precision="bf16", stages=4)
    f32 = tiles.Matmul((64, 64, 32), "float32", stages=4)
    cases = [
        (bf16, (9, 0), "int16", 3, "wgmma", (384, 1, 1)),
        (f16, (9, 0), "float16", 3, "tma", (128, 1, 1)),
        (f16, (10, 0), "float16", 3, "tma", (128, 1, 1)),
        (f16, (8, 0), "float16", 3, "cp.async", (128, 1, 1)),
        (bf16, (8, 6), "int16", 3, "cp.async", (256, 1, 1)),
        (f32, (9, 0), "float32", 3, "cp.async", (128, 1, 1)),
        (f32, (9, 0), "float32", 2, "cp.async", (128, 1, 1)),
        (MM, (9, 0), "float32", 2, "wgmma", (384, 1, 1)),
        (f16, (9, 0), "float16", 2, "wgmma", (256, 1, 1)),
        (WIDE, (9, 0), "float32", 2, "libmathdx", None),
        (TF32, (9, 0), "float32", 2, "libmathdx", None),
        (MM, (8, 0), "float32", 2, "cp.async", (256, 1, 1)),
        (f16, (9, 0), "float64", 2, "cp.async", (128, 1, 1)),
    ]
    for mm, cc, c, ndim, implementation, block in cases:
        assert mm._implementations(cc, c, ndim)[0] == implementation, (mm, cc, c, ndim)
        if block:  # (WIDE's and TF32's plans would have libmathdx generate pipelines no other test here uses)
            plan = mm._plan("test", cc, c, ndim)
            assert (plan.implementation, plan.block) == (implementation, block), (mm, cc, c, ndim, plan)
    # 1 KiB of alignment, 4 stages of A's 128 x 32 and B's 32 x 128 bf16 tiles, C's 128 x 128 tile, the barriers
    assert bf16._plan("test", (9, 0), "int16", 3).shared_bytes == 1024 + 4 * 2 * 8192 + 32768 + 4 * 20 + 16
    # the cp.async loop: 4 stages of A's and B's 64 x 32 float32 tiles, C's stage of 64 rows of 64 + 8 floats
    assert f32._plan("test", (8, 0), "float32", 3).shared_bytes == 4 * 2 * 64 * 32 * 4 + 64 * 72 * 4
    # the TMA loop: up to 1 KiB of alignment, 2 stages of 8 KiB tiles, a float16 C's stage over a buffer, barriers
    assert f16._plan("test", (9, 0), "float16", 3).shared_bytes == 1008 + 2 * 2 * 8192 + 2 * 8


def test_operands_check_the_arrays_naming_the_fix():
    for arrays, message in (
        (((128, 64), (64, 128), (128, 64)), "they must be m x k, k x n and m x n"),
        (((4, 128, 64), (4, 64, 128), (4, 128, 64)), "they must be count x m x k, count x k x n and count x m x n"),
        (((4, 160, 64), (4, 64, 128), (4, 160, 128)), "each product of a batch is one 128 x 128 tile"),
        (((4, 128, 64), (4, 64, 128), (128, 128)), "c must be a 3-D array of float32 or int16 like a"),
        (((128, 64), (64, 128), (128, 128)), "a is a host array"),
    ):
        with pytest.raises(tiles.TilesError, match=re.escape(message)) as info:
            MM.operands(*(np.zeros(s, np.int16) for s in arrays[:2]), np.zeros(arrays[2], np.float32))
        assert str(info.value).startswith("tiles.Matmul.operands: ") and "Fix:" in str(info.value)


@pytest.mark.parametrize(
    "implementation,ndim", [("cp.async", 2), ("cp.async", 3), ("tma", 3), ("wgmma", 2), ("wgmma", 3), ("libmathdx", 2)]
)
def test_operands_pass_a_kernel_only_the_arrays_their_code_reads(implementation, ndim):
    """A launch marshals each array of ``ops`` on the host, every launch: the TMA forms pass ``pipe`` (A's and B's
    tensor maps, C's sizes in C) and C, the register loop A, B and C; each in the order and of the dtype and
    dimensions of its type's members. A compile signature without an implementation holds all four."""
    from numba import typeof

    from numba_tiles._operands import Operands

    lead = (3,) if ndim == 3 else ()
    a, b = np.zeros((*lead, 128, 64), np.int16), np.zeros((*lead, 64, 128), np.int16)
    c, pipe = np.zeros((*lead, 128, 128), np.float32), np.zeros(512, np.uint8)
    ops = Operands(MM, MM._plan("test", (9, 0), "float32", ndim, implementation), pipe, a, b, c)
    expected = [a, b, c] if implementation == "cp.async" else [pipe, c]
    passed, member_types = list(ops), ops._numba_type_.types
    assert len(ops) == len(passed) == len(member_types) == len(expected)
    assert all(x is y for x, y in zip(passed, expected))
    assert all((typeof(x).dtype, typeof(x).ndim) == (t.dtype, t.ndim) for x, t in zip(passed, member_types))
    assert [m for m, _ in MM.operands_type("float32", batched=ndim == 3).members] == ["pipe", "a", "b", "c"]


@pytest.mark.parametrize("implementation", ["wgmma", "libmathdx"])
def test_the_kernel_links_for_sm_90a_to_wgmma_and_tma_without_local_memory(implementation, tmp_path):
    signature = (MM.operands_type("float32", implementation=implementation), *SIGNATURE[1:])
    text = sass(tiles.compile(gemm, signature, arch="sm_90a"), tmp_path)
    ops = [i[1:] if i[0].startswith("@") else i for i in instructions(text) if i]
    names = {op[0].split(".")[0] for op in ops}
    assert {"HGMMA", "UTMALDG", "SYNCS"} <= names, sorted(names)
    # No local memory is read, and none is written in the K loop (between the first and last wgmma). Outside it,
    # libmathdx's tile writes its accumulator frame once (after the loop; never read back: dead stores ptxas keeps,
    # 16 STL.128 a tile).
    assert "LDL" not in names
    products = [i for i, op in enumerate(ops) if op[0].startswith("HGMMA")]
    assert not [op for op in ops[products[0] : products[-1]] if op[0].startswith("STL")], "local memory in the K loop"
    assert not external_calls(text)
    assert any(" HGMMA.64x128x16.F32.BF16" in line for line in text.splitlines())
    assert_wgmma_not_serialized(text)


def assert_wgmma_not_serialized(text):
    """A K-tile's wgmma go out back to back, one wait after the last. (With any call in the kernel, a printf's
    included, ptxas waits after each one: warning C7509. On an H200 the 8192^3 GEMMs went from 508 to 582 TFLOP/s
    in bf16 and from 317 to 362 in tf32 without it.)"""
    products = sum(" HGMMA." in line for line in text.splitlines())
    waits = sum(" WARPGROUP.DEPBAR" in line for line in text.splitlines())
    assert products >= 2 and waits < products, f"{products} HGMMA, {waits} WARPGROUP.DEPBAR: serialized"


def test_an_epilogue_keeps_its_fastmath_and_inner_tiles_skip_the_edge_tests(tmp_path):
    """examples/gemm_epilogue.py's tanh GELU, declared ``fastmath=True``, in the wgmma tile's store: its tanh is
    MUFU.TANH (libdevice's tanhf without fastmath), and the warpgroups inside C run a copy of the store loop with no
    test of each item's row and column: some MUFU.TANH there are unpredicated."""
    from examples import gemm_epilogue

    found = {}
    for name, epilogue in (
        ("fast", gemm_epilogue.bias_gelu_tanh),
        ("precise", cuda.jit(device=True)(gemm_epilogue.bias_gelu_tanh.py_func)),
    ):
        kernel = gemm_epilogue.make_tile_gemm(MM, epilogue)
        signature = (MM.operands_type("int16"), types.float32, types.float32, types.Tuple((types.float32[::1],)))
        found[name] = [
            line
            for line in sass(tiles.compile(kernel, signature, arch="sm_90a"), tmp_path).splitlines()
            if "MUFU.TANH" in line
        ]
    assert not found["precise"] and found["fast"], {k: len(v) for k, v in found.items()}
    assert [line for line in found["fast"] if "@" not in line.split("*/")[1]], "every tanh behind an edge test"


@pytest.mark.filterwarnings("ignore::numba.cuda.core.errors.NumbaPerformanceWarning")  # (serialized, as it says)
def test_debug_builds_keep_the_launch_check_message(tmp_path, monkeypatch):
    """NUMBA_TILES_DEBUG=1 compiles the launch check's message in (wgmma then serialized, as any call makes them);
    without it a wrong launch traps with no call in the kernel (tests/gpu/test_pipeline.py launches both)."""
    monkeypatch.setenv("NUMBA_TILES_DEBUG", "1")
    cubin = tiles.compile(gemm, SIGNATURE, arch="sm_90a")
    # (the calls' targets are relocations, which nvdisasm does not name)
    assert external_calls(sass(cubin, tmp_path)) and b"tiles.Matmul.tile: launched with other threads" in cubin


def test_a_kernel_whose_wgmma_ptxas_serializes_warns_at_its_link(tmp_path):
    """A print() in a kernel of Hopper's tile is a call, so ptxas serializes its wgmma: the link warns, naming the
    kernel and the fix. (A fresh string in the kernel each run, so that its link is not in the disk cache.)"""
    import uuid

    from numba.cuda.core.errors import NumbaPerformanceWarning

    source = f"""
@cuda.jit
def noisy(ops, alpha, beta):
    if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
        print("{uuid.uuid4().hex}")
    MM.tile(ops, 0, 0, alpha, beta)
"""
    scope = {"cuda": cuda, "MM": MM}
    exec(compile(source, str(tmp_path / "noisy.py"), "exec"), scope)
    with pytest.warns(
        NumbaPerformanceWarning,
        match=r"ptxas serialized the wgmma .* of kernel .*noisy, due to "
        r".*function call.* keep calls out of kernels",
    ):
        tiles.compile(scope["noisy"], SIGNATURE, arch="sm_90a")


def test_sm_90_without_its_arch_specific_features_is_refused_naming_the_fix():
    with pytest.raises(
        tiles.TilesError,
        match=re.compile(
            r"which links only for sm_90a, not sm_90 .*Fix: pass "
            r"arch='sm_90a'",
            re.S,
        ),
    ):
        tiles.compile(gemm, SIGNATURE, arch="sm_90")


OTHER = tiles.Matmul((128, 128, 32), "int16", precision="bf16")


@pytest.mark.parametrize(
    "signature,message",
    [
        ((types.int32[::1], types.float32, types.float32), "ops must be what mm.operands(a, b, c) returns"),
        ((OTHER.operands_type("float32"), types.float32, types.float32), "ops were made by another description"),
        (
            (MM.operands_type("float32", batched=True), types.float32, types.float32),
            "ops describe a batch (3-D arrays)",
        ),
        (
            (MM.operands_type("float64"), types.float32, types.float32),
            "c holds float64; this Matmul stores its float32",
        ),
        ((MM.operands_type("float32"), types.float32[::1], types.float32), "alpha must be a number"),
    ],
    ids=str,
)
def test_misuse_in_a_kernel_is_a_clear_compile_time_error(signature, message):
    with pytest.raises(tiles.TilesError, match=re.escape(message)) as info:
        tiles.compile(gemm, signature, arch="sm_90a")
    first = str(info.value).splitlines()[0]
    assert first.startswith("tiles.Matmul.tile: ") and message in first and "Fix:" in first


# Matmul.batched by wgmma: our warp-specialized loop on CuTe's GMMA atoms (lto_libs/wgmma.cuh), no libmathdx.
BMM = tiles.Matmul((128, 128, 32), "int16", precision="bf16", stages=4)


@cuda.jit
def bmm(ops, alpha, beta):
    BMM.batched(ops, alpha, beta)


BATCHED = (BMM.operands_type("int16", batched=True), types.float32, types.float32)


@pytest.mark.parametrize(
    "shape,dtype,c_dtype,arrangement,stages,atom",
    [
        ((128, 128, 32), "int16", "int16", ("row_major", "row_major"), 4, "64x128x16.F32.BF16"),
        ((128, 192, 16), "float16", "float16", ("row_major", "col_major"), 8, "64x192x16.F32"),
        ((128, 64, 128), "int16", "float32", ("col_major", "row_major"), 2, "64x64x16.F32.BF16"),
    ],
    ids=str,
)
def test_batched_links_for_sm_90a_to_wgmma_and_tma_without_local_memory(
    shape, dtype, c_dtype, arrangement, stages, atom, tmp_path
):
    mm = tiles.Matmul(
        shape, dtype, precision="bf16" if dtype == "int16" else None, arrangement=arrangement, stages=stages
    )

    @cuda.jit
    def kernel(ops, alpha, beta):
        mm.batched(ops, alpha, beta)

    assert mm._plan("test", (9, 0), c_dtype, 3).implementation == "wgmma"
    text = sass(
        tiles.compile(kernel, (mm.operands_type(c_dtype, batched=True), types.float32, types.float32), arch="sm_90a"),
        tmp_path,
    )
    names = names_of(text)
    # TMA loads and stores, the products' counter, and no local memory: N / 2 floats of C a thread stay in registers
    assert {"HGMMA", "UTMALDG", "UTMASTG", "ATOMG", "SYNCS"} <= names and not {"LDL", "STL"} & names, sorted(names)
    assert any(f" HGMMA.{atom}" in line for line in text.splitlines())
    assert not external_calls(text)
    if shape[2] > 16:  # (a K-step of 16 is one wgmma, then the loop's own wait)
        assert_wgmma_not_serialized(text)


def test_gemm_links_for_sm_90a_to_one_pipeline_over_the_tiles(tmp_path):
    """``mm.gemm`` by wgmma: one loop over C's tiles whose loading thread takes them from the counter (ATOMG), TMA in
    and out, no local memory, no calls, its wgmma not serialized. (The `Matmul` docstring's description and
    kernel: its gemm example compiles the same program.)"""
    mm = tiles.Matmul((64, 64, 32), "float16")

    @cuda.jit
    def gemm_all(ops, alpha, beta):
        mm.gemm(ops, alpha, beta)

    assert mm._plan("test", (9, 0), "float32", 2).implementation == "wgmma"
    text = sass(
        tiles.compile(gemm_all, (mm.operands_type("float32"), types.float32, types.float32), arch="sm_90a"), tmp_path
    )
    names = names_of(text)
    assert {"HGMMA", "UTMALDG", "UTMASTG", "ATOMG", "SYNCS"} <= names and not {"LDL", "STL"} & names, sorted(names)
    assert not external_calls(text)
    assert_wgmma_not_serialized(text)


def test_batched_ops_in_a_tile_call_is_a_clear_compile_time_error():
    @cuda.jit
    def kernel(ops):
        BMM.tile(ops, 0, 0)

    with pytest.raises(tiles.TilesError, match=re.escape("tiles.Matmul.tile: ops describe a batch (3-D arrays)")):
        tiles.compile(kernel, BATCHED[:1], arch="sm_90a")

    @cuda.jit
    def whole(ops):
        BMM.gemm(ops)

    with pytest.raises(tiles.TilesError, match=re.escape("tiles.Matmul.gemm: ops describe a batch (3-D arrays)")):
        tiles.compile(whole, BATCHED[:1], arch="sm_90a")


def test_the_batched_loop_links_in_a_second_kernel_after_a_refused_one(tmp_path):
    """A refused call (sm_90) and then the same kernel for sm_90a in one process: the second links."""
    with pytest.raises(tiles.TilesError):
        tiles.compile(bmm, BATCHED, arch="sm_90")
    text = sass(tiles.compile(bmm, BATCHED, arch="sm_90a"), tmp_path)
    assert " HGMMA.64x128x16.F32.BF16" in text


def test_a_description_compiles_its_code_ahead_and_a_kernel_waits_for_it(monkeypatch, capfd):
    """On a machine with a GPU (here an sm_90 one, as the driver would say), a description makes the C++ of its
    tile and batched in the background at once; a kernel compiled meanwhile waits for what is being made, with a
    notice and (in Jupyter, as here) the time NVRTC has taken, and compiles none of it again: two NVRTC programs in
    all."""
    import sys
    import threading
    import types as pytypes

    from numba_tiles import _notices, _stats, _toolchain

    monkeypatch.setenv("NUMBA_TILES_BACKGROUND", "1")
    monkeypatch.delenv("NUMBA_TILES_QUIET", raising=False)
    monkeypatch.setitem(sys.modules, "ipykernel", pytypes.ModuleType("ipykernel"))
    monkeypatch.setattr(_notices, "TICK_S", 0.05)
    monkeypatch.setattr(_toolchain, "current_device_cc", lambda: (9, 0))
    before = _stats.snapshot()["nvrtc"]
    # (a description no other test compiles: Hopper's block, whose programs take seconds, not cuBLASDx's tens)
    mm = tiles.Matmul((128, 64, 64), "float16", stages=3)

    @cuda.jit
    def tile_gemm(ops):
        mm.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x)

    @cuda.jit
    def bmm(ops):
        mm.batched(ops)

    tiles.compile(tile_gemm, (mm.operands_type("float32"),), arch="sm_90a")
    tiles.compile(bmm, (mm.operands_type("float32", batched=True),), arch="sm_90a")
    err = capfd.readouterr().err
    assert "which NVRTC has been compiling in the background" in err
    assert re.search(r"\rnumba_tiles: NVRTC has been compiling it for \d+ s", err), err
    for thread in [t for t in threading.enumerate() if t.name == "numba_tiles ahead"]:
        thread.join()
    assert _stats.snapshot()["nvrtc"] - before == 2
