"""tiles.matmul and 2-D tile movement with no GPU: the C++ they render, the program they compile in
(cuBLASDx's own library), tensor cores in the SASS, and misuse as clear compile-time errors."""

import functools
import re

import pytest
from numba import cuda

import numba_tiles as tiles
from examples import gemm
from numba_tiles import _programs, _toolchain
from numba_tiles._matmul import mma_tiles

from ..support.programs import observed_programs
from ..support.sass import external_calls, instructions, opcode_names, registers, sass

SIG = "void(float16[:, :], float16[:, :], float32[:, :], int64)"


def test_a_gemm_kernel_compiles_to_tensor_cores_without_local_memory(tmp_path, monkeypatch):
    """examples/gemm.py's fp16 x fp16 -> fp32 kernel (the README's) for sm_90: HMMA by the warps' MMA atoms,
    inlined after LTO (no calls), no local memory. The matmul compiles in a program that includes only mma.cuh
    (CuTe's atoms: no cuBLASDx GEMM instantiated); the tile moves in a CUB one."""
    monkeypatch.setenv("NUMBA_TILES_CACHE", "0")
    seen = observed_programs(monkeypatch)
    kernel = gemm.make_gemm((64, 64, 32), "float16", "float32", 128)
    code = sass(
        tiles.compile(kernel, "void(float16[:, :], float16[:, :], float32[:, :], float64, float64)", arch="sm_90"),
        tmp_path,
    )
    opcodes = {ins[1 if ins[0].startswith("@") else 0].split(".")[0] for ins in instructions(code) if ins}
    assert "HMMA" in opcodes, sorted(opcodes)
    assert not opcodes & {"CALL", "LDL", "STL"}, sorted(opcodes)
    includes = sorted(re.findall(r'#include "([^"]+)"', source) for source, _ in seen)
    assert includes == [["common.cuh", "tile.cuh"], ["mma.cuh"]], includes
    assert [flags.get("device_as_default_execution_space") for source, flags in sorted(seen)] == [None, True]
    # Its shared memory is the three tiles (the same kernel again: its programs come from this process's memo).
    signature = "void(float16[:, :], float16[:, :], float32[:, :], float64, float64)"
    assert tiles.shared_memory(kernel, signature)["total"] == (64 * 32 + 32 * 64) * 2 + 64 * 64 * 4


@pytest.mark.heavy
def test_matmul_renders_cublasdx_with_the_tiles_arrangement(monkeypatch):
    """A column-major A (a transposed shared array), row-major B and C; sizes and block as given (by cuBLASDx:
    ``NUMBA_TILES_MATMUL_ATOMS=0``)."""
    monkeypatch.setenv(mma_tiles.ENABLED, "0")
    with _programs.recording() as lowered:
        tiles.compile(
            gemm.make_gemm((32, 16, 8), "float64", "float64", 64, ("F", "C")),
            "void(float64[:, :], float64[:, ::1], float64[:, :], float64, float64)",
            output="ltoir",
        )
    templates = {i.template for i, _ in lowered}
    assert (
        "numba_tiles::matmul<32, 16, 8, double, double, double, double, double, false, true, true, 32, 16, 16, "
        "0, 64, 1, 1>"
    ) in templates
    assert {"numba_tiles::tile_load<double, 64, 1, 1, false>", "numba_tiles::tile_store<double, 64, 1, 1>"} < templates


KERNEL = """
def kernel(a, b, c, n):
    sa = cuda.shared.array((64, 32), float16)
    sb = cuda.shared.array((32, 64), float16)
    sc = cuda.shared.array((64, 64), float32)
    padded = cuda.shared.array((64, 40), float16)
    {body}
"""


@pytest.mark.parametrize(
    "body,sig,message",
    [
        ("tiles.matmul(sa, sb, sc, block_dim=128)", None, r"missing a required argument: 'shape'"),
        ("tiles.matmul(sa, sb, sc, shape=(64, 64), block_dim=128)", None, r"shape must be a tuple \(M, N, K\)"),
        (
            "tiles.matmul(sa, sb, sc, shape=(64, 64, 0), block_dim=128)",
            None,
            r"shape must be a tuple \(M, N, K\) of positive",
        ),
        ("tiles.matmul(sa, sb, sc, shape=(n, 64, 32), block_dim=128)", None, r"shape must be a compile-time constant"),
        (
            "tiles.matmul(sa, sb, sc, shape=(64, 64, 32), block_dim=n)",
            None,
            r"block_dim must be a compile-time constant",
        ),
        (
            "tiles.matmul(sa, sb, sc, shape=(64, 64, 32), block_dim=2048)",
            None,
            r"block_dim=2048 is not a valid CUDA block",
        ),
        ("tiles.matmul(sa, sb, sc[0], shape=(64, 64, 32), block_dim=128)", None, r"c must be a 2-D array"),
        (
            "tiles.matmul(sa, sb, sc, shape=(64, 64, 32), block_dim=(4, 4))",
            None,
            r"cuBLASDx computes with whole warps; block_dim=\(4, 4, 1\) has 16 threads.*Fix: launch blocks of 32",
        ),
        ("tiles.matmul(sa, sc, sc, shape=(64, 64, 32), block_dim=128)", None, r"b holds float32 but a holds float16"),
        (
            "tiles.matmul(a, b, c, shape=(64, 64, 32), block_dim=128)",
            "void(float16[:, ::1], float16[:, ::1], float64[:, ::1], int64)",
            r"float16 A and B with float64 C is not a supported precision.*Fix: use float16 A",
        ),
        (
            "tiles.matmul(a, b, c, shape=(64, 64, 32), block_dim=128)",
            "void(int32[:, ::1], int32[:, ::1], int32[:, ::1], int64)",
            r"int32 A and B with int32 C is not a supported precision",
        ),
        (
            "tiles.matmul(a, b, c, shape=(64, 64, 32), block_dim=128)",
            "void(complex64[:, ::1], complex64[:, ::1], complex128[:, ::1], int64)",
            r"complex64 A and B with complex128 C is not a supported precision",
        ),
        (
            "tiles.matmul(sa, sb, sc, shape=(64, 64, 32), block_dim=128, arrangement=('row', 'col', 'row'))",
            None,
            r"arrangement must be a 3-tuple of 'row_major'/'col_major'",
        ),
        (
            "tiles.matmul(padded[:, :32], sb, sc, shape=(64, 64, 32), block_dim=128)",
            None,
            r"a is a strided view.*Fix: pass arrangement=",
        ),
        ("tiles.matmul(sa, sb, sc, a, shape=(64, 64, 32), block_dim=128)", None, r"alpha must be a number"),
        (
            "tiles.matmul(padded[:, :32], sb, sc, shape=(64, 64, 32), block_dim=128, arrangement=('row_major', "
            "'row_major', 'row_major'), ld=(30, 64, 64))",
            None,
            r"ld=\(30, 64, 64\) is less than the tiles' \(32, 64, 64\)",
        ),
        (
            "tiles.matmul(sa, sb, sc, shape=(64, 64, 32), block_dim=128, ld=40)",
            None,
            r"ld must be a tuple of 3 positive",
        ),
        ("tiles.matmul(sa, sb, sc, 1.0, sa, shape=(64, 64, 32), block_dim=128)", None, r"beta must be a number"),
        (
            "tiles.matmul(sa, sb, sc, shape=(64, 64, 32), block_dim=128, precision='fp8')",
            None,
            r"precision='fp8' is not supported.*Fix: use one of None, 'tf32', 'bf16'",
        ),
        (
            "tiles.matmul(sa, sb, sc, shape=(64, 64, 32), block_dim=128, precision='bf16')",
            None,
            r"precision='bf16' takes A and B of int16 or uint16 and C of float32, got float16 and float32",
        ),
        (
            "tiles.matmul(sa, sb, sc, shape=(64, 64, 32), block_dim=128, alignment=8)",
            None,
            r"alignment=8 is not supported.*Fix: use one of None, 16",
        ),
        (
            "tiles.matmul(padded[:, :36], sb[:36], sc, shape=(64, 64, 36), block_dim=128, alignment=16, "
            "arrangement=('row_major',) * 3, ld=(38, 64, 64))",
            None,
            r"alignment=16 needs each tile row \(or column\) to start 16-byte aligned; a's leading dimension 38 is 76 "
            r"bytes.*Fix: pad the tiles to a leading dimension of a multiple of 8 items",
        ),
        ("tiles.tile_load(a, sa, 0, 0)", None, r"missing a required argument: 'block_dim'"),
        ("tiles.tile_load(a[0], sa, 0, 0, block_dim=128)", None, r"src must be a 2-D array"),
        ("tiles.tile_load(c, sa, 0, 0, block_dim=128)", None, r"src holds float32 but tile holds float16"),
        ("tiles.tile_load(a, sa, 0.5, 0, block_dim=128)", None, r"row must be an integer, got float64"),
        (
            "tiles.tile_load(a, sa, 0, 0, 1.0, block_dim=(7, 9, 3, 2))",
            None,
            r"block_dim must be an int or a tuple of 1 to 3",
        ),
        ("tiles.tile_store(sc, a, 0, 0, block_dim=128)", None, r"dst holds float16 but tile holds float32"),
        ("tiles.tile_load(a, sa, 0, 0, block_dim=128, asynchronous=1)", None, r"asynchronous must be True or False"),
        ("tiles.tile_wait(-1, block_dim=128)", None, r"pending must be a non-negative int, got -1"),
        ("tiles.tile_wait(1.5, block_dim=128)", None, r"pending must be an integer, got float64"),
        ("tiles.tile_store(sc, c, 0, n * 1.0, block_dim=128)", None, r"col must be an integer, got float64"),
    ],
)
def test_misuse_is_a_clear_compile_time_error(body, sig, message):
    from numba.cuda.types import float16, float32

    namespace = {"cuda": cuda, "tiles": tiles, "float16": float16, "float32": float32}
    exec(KERNEL.format(body=body), namespace)
    with pytest.raises(tiles.TilesError) as info:
        tiles.compile(namespace["kernel"], sig or SIG, arch="sm_90", output="ltoir")
    text = str(info.value).splitlines()[0]
    assert text.startswith(f"tiles.{body.split('(')[0].split('.')[1]}:") and "Fix:" in text, text
    assert re.search(message, text), text


@pytest.mark.heavy
@pytest.mark.parametrize("dtype,tile", [("complex64", (32, 32, 16)), ("complex128", (16, 16, 16))])
def test_complex_products_compile_without_local_memory(dtype, tile, tmp_path):
    """cuBLASDx's complex type over numba's complex64/128 tiles (the same two values, size and alignment)."""
    kernel = gemm.make_gemm(tile, dtype, dtype, 128, ("C", "F"))
    code = sass(
        tiles.compile(kernel, f"void({dtype}[:, :], {dtype}[:, :], {dtype}[:, :], {dtype}, {dtype})", arch="sm_90"),
        tmp_path,
    )
    assert "LDL" not in code and "STL" not in code and not external_calls(code)
    assert ("DFMA" if dtype == "complex128" else "FFMA") in code


def test_asynchronous_tile_loads_are_cp_async(tmp_path):
    """Two asynchronous tile loads (the next pair during a product): 16-byte LDGSTS (cp.async.cg), waited
    for by DEPBAR."""
    from numba.cuda.types import float16, float32

    @cuda.jit
    def pipelined(a, b, c):  # (its product is the tiles.matmul docstring's: one program for both)
        sa = cuda.shared.array((2, 64, 64), float16)
        sb = cuda.shared.array((2, 64, 64), float16)
        sc = cuda.shared.array((64, 64), float32)
        i = 2 * cuda.blockIdx.x
        for j in range(2):
            tiles.tile_load(a[i + j], sa[j], 0, 0, block_dim=128, asynchronous=True)
            tiles.tile_load(b[i + j], sb[j], 0, 0, block_dim=128, asynchronous=True)
        tiles.tile_wait(2, block_dim=128)  # the first pair is in; the second may not be
        tiles.matmul(sa[0], sb[0], sc, shape=(64, 64, 64), block_dim=128)
        tiles.tile_wait(block_dim=128)
        tiles.matmul(sa[1], sb[1], sc, 1.0, 1.0, shape=(64, 64, 64), block_dim=128)
        tiles.tile_store(sc, c[i], 0, 0, block_dim=128)

    code = sass(tiles.compile(pipelined, "void(float16[:, :, ::1], float16[:, :, ::1], float32[:, :, ::1])"), tmp_path)
    assert "LDGSTS.E.BYPASS.128" in code and "DEPBAR" in code
    assert "LDL" not in code and "STL" not in code


@pytest.mark.parametrize("pending,expected", [("2", {"0x2"}), ("0", {"0x0"}), ("n", {f"0x{i}" for i in range(8)})])
def test_tile_wait_folds_a_constant_and_branches_on_a_run_time_count(pending, expected, tmp_path):
    """cp.async.wait_group takes an immediate (SASS: DEPBAR.LE SB0, N): a constant count is one wait, a
    run-time one a wait per value it may take, the largest for any count from 7 on."""
    namespace = {"cuda": cuda, "tiles": tiles}
    exec(
        f"""
def kernel(x, out):
    n = out.shape[0]
    tile = cuda.shared.array((16, 16), float32)
    tiles.tile_load(x, tile, 0, 0, block_dim=256, asynchronous=True)
    tiles.tile_wait({pending}, block_dim=256)
    out[cuda.threadIdx.x] = tile[cuda.threadIdx.x // 16, cuda.threadIdx.x % 16]
""",
        {**namespace, "float32": cuda.types.float32},
        namespace,
    )
    code = sass(tiles.compile(namespace["kernel"], "void(float32[:, ::1], float32[::1])"), tmp_path)
    assert set(re.findall(r"DEPBAR\.LE SB0, (0x[0-9a-f]+)", code)) == expected


@pytest.mark.heavy
def test_aligned_tiles_are_read_with_ldmatrix(tmp_path, monkeypatch):
    """alignment=16 by cuBLASDx (``NUMBA_TILES_MATMUL_ATOMS=0``; it issues warp-level mma.sync, no wgmma):
    A and B read with LDSM, C written with STSM; still no local memory."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import gemm_variants as bench

    monkeypatch.setenv(mma_tiles.ENABLED, "0")
    kernel = bench.shared_kernel(64, "float16", "float16", 128, alignment=16)
    code = sass(tiles.compile(kernel, "void(float16[:, :, ::1], float16[:, :, ::1], float16[:, :, ::1])"), tmp_path)
    assert "LDSM" in code and "STSM" in code and "HMMA" in code
    assert "LDL" not in code and "STL" not in code


ATOM_KERNEL = """
def kernel(h, c32, c64):
    ha = cuda.shared.array((64, 32), float16, alignment=16)
    hb = cuda.shared.array((64, 32), float16, alignment=16)
    fa = cuda.shared.array((32, 16), float32, alignment=16)
    fb = cuda.shared.array((32, 16), float32, alignment=16)
    da = cuda.shared.array((16, 8), float64)
    db = cuda.shared.array((8, 16), float64)
    s32 = cuda.shared.array((64, 64), float32)
    t32 = cuda.shared.array((32, 32), float32)
    s64 = cuda.shared.array((16, 16), float64)
    tiles.tile_load(h, ha, 0, 0, block_dim=128)
    tiles.tile_load(h, hb, 0, 0, block_dim=128)
    tiles.tile_load(c32, fa, 0, 0, block_dim=128)
    tiles.tile_load(c32, fb, 0, 0, block_dim=128)
    tiles.tile_load(c64, da, 0, 0, block_dim=128)
    tiles.tile_load(c64, db, 0, 0, block_dim=128)
    tiles.matmul(ha, hb.T, s32, shape=(64, 64, 32), block_dim=128, alignment=16)
    tiles.matmul(fa, fb.T, t32, shape=(32, 32, 16), block_dim=128, precision="tf32", alignment=16)
    tiles.matmul(da, db, s64, 0.5, 1.0, shape=(16, 16, 8), block_dim=128)
    tiles.tile_store(s32, c32, 0, 0, block_dim=128)
    tiles.tile_store(t32, c32, 0, 0, block_dim=128)
    tiles.tile_store(s64, c64, 0, 0, block_dim=128)
"""


def test_the_warps_form_multiplies_on_mma_atoms_fed_by_ldmatrix(tmp_path, monkeypatch):
    """On sm_80, fp16 (B column-major), tf32 and fp64 tiles of whole atoms are multiplied by the block's warps on
    CuTe's atoms: HMMA and DMMA, 16-bit and tf32 operands read by LDSM (the transposing one for none here), no local
    memory, no calls; programs of mma.cuh alone, no cuBLASDx GEMM (matmul.cuh) among them."""
    monkeypatch.setenv(mma_tiles.ENABLED, "1")
    seen = observed_programs(monkeypatch)
    from numba.cuda.types import float16, float32, float64

    namespace = {"cuda": cuda, "tiles": tiles, "float16": float16, "float32": float32, "float64": float64}
    exec(ATOM_KERNEL, namespace)
    kernel = cuda.jit(namespace["kernel"])
    code = sass(tiles.compile(kernel, "void(float16[:, :], float32[:, :], float64[:, :])", arch="sm_80"), tmp_path)
    ops = opcode_names(code)
    assert {"HMMA", "DMMA", "LDSM"} <= ops, sorted(ops)
    assert "HMMA.16816.F32" in code and "HMMA.1688.F32.TF32" in code and "LDSM.16.M88.4" in code
    assert not ops & {"LDL", "STL"}, sorted(ops)
    # the only calls are the run-time checks' message and stop (the global matrices' strides are run-time)
    assert set(re.findall(r"CALL[.A-Z]* `\((\w+)\)", code)) <= {"vprintf", "__assertfail"}
    programs = [re.findall(r'#include "([^"]+)"', source) for source, _ in seen]
    assert ["mma.cuh"] in programs and not any("matmul.cuh" in p for p in programs), programs


def test_fp64_atoms_take_a_16_byte_load_for_two(tmp_path, monkeypatch):
    """fp64 tiles go by K-steps of two DMMAs, each lane's two items of A's row (B's column) one 16-byte load where
    they are adjacent on 16-byte lines: a 16 x 16 C with K = 16 against K = 8 adds one such step, two loads of A and
    two of B for eight DMMAs, and no 8-byte load."""
    monkeypatch.setenv(mma_tiles.ENABLED, "1")
    counts = []
    for k in (8, 16):
        kernel = gemm.make_gemm((16, 16, k), "float64", "float64", 32, order=("C", "F"), alignment=16)
        code = sass(
            tiles.compile(kernel, "void(float64[:, :], float64[:, :], float64[:, :], float64, float64)", arch="sm_80"),
            tmp_path,
        )
        ops = [i[1] if i[0].startswith("@") else i[0] for i in instructions(code) if i]
        counts.append({name: sum(op.startswith(name) for op in ops) for name in ("DMMA", "LDS.128", "LDS.64")})
    added = {name: counts[1][name] - counts[0][name] for name in counts[0]}
    assert added == {"DMMA": 8, "LDS.128": 4, "LDS.64": 0}, counts


@pytest.mark.parametrize(
    "compute,shape,threads,cc,tile",
    [
        ("__half", (64, 64, 32), 128, (8, 0), (32, 32)),  # the README's: a 32 x 32 quarter a warp
        ("__half", (128, 128, 32), 128, (9, 0), (32, 64)),  # two rounds of the largest that fits the registers
        ("__half", (128, 128, 32), 256, (8, 6), (32, 64)),
        ("__half", (64, 64, 32), 1024, (8, 0), (16, 16)),  # (64 registers a thread: small accumulators)
        ("double", (16, 16, 16), 32, (8, 0), (16, 16)),
        ("cublasdx::tfloat32_t", (48, 80, 24), 96, (8, 0), (48, 16)),  # (3 warps: 2 rounds of 5 tiles, not 5 of 15)
        ("__half", (64, 64, 32), 128, (7, 5), None),  # (before sm_80: cuBLASDx)
        ("__half", (64, 72, 32), 128, (8, 0), None),  # (N not of whole 16-column pairs of atoms)
        ("cublasdx::tfloat32_t", (64, 64, 12), 128, (8, 0), None),  # (K not of whole 8-item steps)
        ("float", (64, 64, 32), 128, (8, 0), None),  # (float32 SIMT products: cuBLASDx)
        ("__half", (64, 64, 32), 48, (8, 0), None),  # (a partial warp)
        ("__half", (64, 64, 32), 128, None, None),  # (the simulator)
    ],
)
def test_the_warps_form_takes_whole_atoms_and_deals_tiles_evenly(compute, shape, threads, cc, tile, monkeypatch):
    monkeypatch.setenv(mma_tiles.ENABLED, "1")
    assert mma_tiles.warp_tile(compute, shape, threads, cc) == tile


def test_tiles_inside_the_matrix_move_in_16_byte_vectors(tmp_path):
    """Aligned whole rows go as LDG.E.128 / STS.128 (and back as LDS.128 / STG.E.128); the edge path stays."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import gemm_variants as bench

    kernel = bench.shared_kernel(64, "float16", "float32", 128)  # (the tiles.matmul docstring's product)
    code = sass(tiles.compile(kernel, "void(float16[:, :, ::1], float16[:, :, ::1], float32[:, :, ::1])"), tmp_path)
    for vector in ("LDG.E.128", "STS.128", "LDS.128", "STG.E.128"):
        assert vector in code, vector
    assert "LDG.E.U16" in code  # the item-by-item path, for tiles that overhang the edge


def test_a_matmul_description_checks_and_sizes_itself_with_no_compile():
    """tiles.Matmul is plain Python: sizes for the kernel's arrays, and misuse as a TilesError naming the fix."""
    mm = tiles.Matmul((64, 32, 16), "float16", block_dim=128)
    assert (mm.a_items, mm.b_items, mm.accumulator_items, mm.threads) == (64 * 16, 16 * 32, 64 * 32 // 128, 128)
    assert mm.shared_memory_bytes == (64 * 16 + 16 * 32) * 2 and mm.accumulator == "float32"
    assert mm.c_items == 64 * (32 + 8)  # float32 rows padded by 32 bytes
    assert mm == tiles.Matmul([64, 32, 16], cuda.types.float16, block_dim=(128,)) and len({mm, mm}) == 1
    bf16 = tiles.Matmul((32, 32, 32), "int16", block_dim=64, precision="bf16", arrangement=("col_major", "row_major"))
    assert bf16.accumulator == "float32" and bf16.accumulator_items == 16
    # the default block: 128 threads for tiles of up to 64 x 64, else 256
    assert (
        tiles.Matmul((64, 64, 16), "float16").threads == 128 and tiles.Matmul((128, 64, 16), "float16").threads == 256
    )
    for kwargs, message in [
        (dict(shape=(64, 64), dtype="float16", block_dim=128), "shape must be a tuple (M, N, K)"),
        (dict(shape=(16, 16, 16), dtype="float16", block_dim=512), "does not divide among the block's 512 threads"),
        (dict(shape=(16, 16, 16), dtype="float16", block_dim=16), "whole warps"),
        (dict(shape=(16, 16, 16), dtype="int8", block_dim=32), "int8 A and B with int8 C is not a supported"),
        (dict(shape=(16, 16, 16), dtype="float32", block_dim=32, precision="bf16"), "precision='bf16' takes A and B"),
        (dict(shape=(16, 16, 16), dtype="float32", block_dim=32, arrangement=("row",)), "arrangement must be"),
        (dict(shape=(16, 16, 16), dtype="quaternion", block_dim=32), "not a dtype numba_tiles knows"),
        (dict(shape=(16, 16, 16), dtype="complex64", block_dim=32), "the register form takes real types"),
        (dict(shape=(16, 16, 16), dtype="float16", stages=1), "stages=1 is not supported"),
    ]:
        with pytest.raises(tiles.TilesError, match=re.escape(message)) as info:
            tiles.Matmul(**kwargs)
        assert str(info.value).startswith("tiles.Matmul:") and "Fix:" in str(info.value)


@pytest.mark.heavy
def test_cublasdx_suggests_a_block_with_no_gpu():
    """Matmul.suggested_block_dim: cuBLASDx's choice, evaluated by NVRTC; a Matmul takes it."""
    block = tiles.Matmul.suggested_block_dim((64, 64, 32), cuda.types.float16)
    assert len(block) == 3 and all(isinstance(d, int) for d in block) and block[0] * block[1] * block[2] % 32 == 0
    assert tiles.Matmul((64, 64, 32), "float16", block_dim=block).threads == block[0] * block[1] * block[2]
    assert tiles.Matmul.suggested_block_dim((32, 32, 32), "int16", precision="bf16", arch="sm_80")[0] >= 32
    with pytest.raises(tiles.TilesError, match=r"tiles.Matmul.suggested_block_dim: shape must be"):
        tiles.Matmul.suggested_block_dim((64, 64), "float16")


def test_the_register_form_compiles_to_tensor_cores_cp_async_and_no_local_memory(tmp_path, monkeypatch):
    """examples/gemm.py's own-loop kernel (fp16 -> fp32, C staged) on sm_80: its steps on CuTe's MMA atoms
    (programs of mma_steps.cuh and tile.cuh's wait, no cuBLASDx GEMM among them): HMMA fed by LDSM from
    numba_tiles' swizzled tiles, 16-byte cp.async loads (LDGSTS), C through shared memory in vectors, the
    accumulator in registers (no LDL/STL), no calls but the checks' message; its (dynamic) shared memory is two
    buffers of A and B and the stage."""
    monkeypatch.setenv(mma_tiles.ENABLED, "1")
    seen = observed_programs(monkeypatch)
    mm = tiles.Matmul((64, 64, 32), "float16", block_dim=128)  # (Matmul's docstrings' MM, whose programs it shares)
    kernel = gemm.make_own_loop(mm, staged=True)
    signature = "void(float16[:, ::1], float16[:, ::1], float32[:, ::1], float64, float64)"
    code = sass(tiles.compile(kernel, signature, arch="sm_80"), tmp_path)
    for instruction in ("HMMA.16816.F32", "LDSM.16.M88.4", "LDSM.16.MT88.4", "LDGSTS.E.BYPASS.LTC128B.128", "LDS.128"):
        assert instruction in code, instruction
    assert "STG.E.128" in code and "STS.64" in code  # (the fragments' pairs into the stage, out in vectors)
    opcodes = {ins[1 if ins[0].startswith("@") else 0].split(".")[0] for ins in instructions(code) if ins}
    assert not opcodes & {"LDL", "STL"}, sorted(opcodes)
    # the only calls are the run-time checks' message and stop (a global matrix's strides are run-time)
    assert set(re.findall(r"CALL[.A-Z]* `\((\w+)\)", code)) <= {"vprintf", "__assertfail"}
    assert kernel.shared_bytes == 2 * mm.shared_memory_bytes + mm.c_items * 4
    assert tiles.shared_memory(kernel, signature, arch="sm_80")["total"] == 0  # all of it dynamic
    programs = [re.findall(r'#include "([^"]+)"', source) for source, _ in seen]
    assert ["mma_steps.cuh"] in programs and not any("matmul.cuh" in p for p in programs), programs


@pytest.mark.parametrize(
    "shape,dtype,more,cc,grid",
    [
        ((64, 64, 32), "float16", {}, (8, 0), (2, 2)),  # the docstrings' MM: a 32 x 32 quarter a warp
        ((128, 128, 32), "float16", {"block_dim": 256}, (9, 0), (4, 2)),  # 32 x 64 a warp
        ((64, 64, 32), "int16", {"precision": "bf16"}, (8, 6), (2, 2)),
        ((64, 64, 16), "float32", {"precision": "tf32"}, (8, 0), (2, 2)),
        ((32, 32, 8), "float64", {"block_dim": 64}, (8, 0), (2, 1)),
        ((16, 64, 16), "float16", {"block_dim": 128}, (8, 0), (1, 4)),  # (one atom's rows: the warps side by side)
        ((64, 64, 32), "float16", {"accumulator": "float16"}, (8, 0), None),  # (a half accumulator: cuBLASDx)
        ((64, 64, 32), "float32", {}, (8, 0), None),  # (float32 SIMT products: cuBLASDx)
        ((64, 64, 32), "float16", {}, (7, 5), None),  # (before sm_80)
        ((16, 16, 16), "float16", {"block_dim": 64}, (8, 0), None),  # (no whole atoms a warp)
        ((64, 64, 32), "float16", {}, None, None),  # (the simulator)
    ],
)
def test_the_register_form_takes_a_grid_of_warp_tiles_of_whole_atoms(shape, dtype, more, cc, grid, monkeypatch):
    monkeypatch.setenv(mma_tiles.ENABLED, "1")
    mm = tiles.Matmul(shape, dtype, **more)
    assert mma_tiles.warp_grid(mm, cc) == grid
    if grid is not None:  # each warp an equal share: the accumulator the host counts
        (wm, wn), (m, n, _) = grid, shape
        assert m // wm * (n // wn) // 32 == mm.accumulator_items


@pytest.mark.heavy
def test_an_epilogue_is_inlined_into_the_store(tmp_path):
    """examples/gemm_epilogue.py's register-form kernel, C staged, with relu(value * scale[row] + bias[col]) of
    two arrays passed along: the user's function inlined into the store's loops (FMNMX, no calls but the
    checks' message), nothing in local memory (the epilogue's arrays and the fragments stay in registers)."""
    from examples import gemm_epilogue

    from ..support import epilogues

    mm = tiles.Matmul((64, 64, 32), "float16", block_dim=128)
    kernel = gemm_epilogue.make_own_loop(mm, epilogues.scaled_relu, staged=True)
    code = sass(
        tiles.compile(
            kernel,
            "void(float16[:, ::1], float16[:, ::1], float32[:, ::1], float64, float64, UniTuple(float32[::1], 2))",
            arch="sm_80",
        ),
        tmp_path,
    )
    opcodes = {ins[1 if ins[0].startswith("@") else 0].split(".")[0] for ins in instructions(code) if ins}
    assert {"HMMA", "FMNMX", "STG"} <= opcodes and not opcodes & {"LDL", "STL"}, sorted(opcodes)
    assert set(re.findall(r"CALL[.A-Z]* `\((\w+)\)", code)) <= {"vprintf", "__assertfail"}


def batched_kernel(mm, c, arch):
    """examples/gemm.py's batched kernel of ``mm`` compiled for ``arch`` with a C of ``c``: (SASS, cubin, plan)."""
    kernel = gemm.make_batched(mm)
    signature = (mm.operands_type(c, batched=True), cuda.types.float64, cuda.types.float64)
    cubin = tiles.compile(kernel, signature, arch=arch)
    assert tiles.shared_memory(kernel, signature, arch=arch)["total"] == 0  # all of it dynamic
    return cubin, mm._plan("test", (int(arch[3]), int(arch[4])), c, 3)


@pytest.mark.heavy
def test_batched_products_compile_to_one_pipelined_loop(tmp_path):
    """Matmul.batched by cp.async (fp16 64 x 64 x 32, float32 C, 4 stages, sm_80: the program of Matmul.batched's
    docstring): HMMA fed by LDSM, 16-byte cp.async loads (LDGSTS) and the group waits of a pipeline (DEPBAR), C
    through shared memory in 16-byte vectors; no local memory but the run-time checks' message arguments (before
    any product); its shared memory is all dynamic, four buffers of A and B and the stage. At most 168 registers
    a thread, three blocks an SM (it takes 166 on MMA atoms; with its edge path unrolled, an fp16 64^3 kernel took
    229, two blocks an SM)."""
    mm = tiles.Matmul((64, 64, 32), "float16", block_dim=128)
    cubin, plan = batched_kernel(mm, "float32", "sm_80")
    code = sass(cubin, tmp_path)
    for instruction in (
        "HMMA.16816.F32",
        "LDSM.16",
        "LDGSTS.E.BYPASS.LTC128B.128",
        "DEPBAR.LE SB0, 0x2",
        "LDS.128",
        "STG.E.128",
    ):
        assert instruction in code, instruction
    assert registers(cubin) <= 168, registers(cubin)
    lines = code.splitlines()
    first_product = next(i for i, line in enumerate(lines) if "HMMA" in line)
    assert not any("LDL" in line for line in lines)
    assert all(i < first_product for i, line in enumerate(lines) if "STL" in line)
    assert set(re.findall(r"CALL[.A-Z]* `\((\w+)\)", code)) <= {"vprintf", "__assertfail"}
    assert plan.implementation == "cp.async" and plan.shared_bytes == 4 * 8192 + 64 * 72 * 4


@functools.cache
def bare_tma_loop():
    """The TMA loop of fp16 64^3 products (128 threads, 2 stages) into an fp16 C, for sm_90a: (mm, cubin)."""
    mm = tiles.Matmul((64, 64, 64), "float16", block_dim=128, stages=2)
    ops = mm.operands_type("float16", batched=True, implementation="tma")
    return mm, tiles.compile(gemm.make_batched(mm), (ops, cuda.types.float64, cuda.types.float64), arch="sm_90a")


@pytest.mark.heavy
def test_batched_tma_products_load_with_tma(tmp_path):
    """Matmul.batched of 16-bit operands by TMA (fp16 64^3, fp16 C, 2 stages, sm_90a): the tiles come by TMA
    (UTMALDG) counted on mbarriers (SYNCS), no cp.async; HMMA fed by LDSM from the swizzled boxes; C rounded to
    fp16 in registers, staged as such (over the buffer just multiplied) and out in 16-byte vectors; no
    local-memory loads."""
    mm, cubin = bare_tma_loop()
    code = sass(cubin, tmp_path)
    plan = mm._plan("test", (9, 0), "float16", 3)
    for instruction in (
        "UTMALDG.3D",
        "SYNCS.ARRIVE.TRANS64",
        "SYNCS.PHASECHK.TRANS64.TRYWAIT",
        "HMMA.16816.F32",
        "LDSM.16",
        "F2FP.F16.F32.PACK_AB",
        "LDS.128",
        "STG.E.128",
    ):
        assert instruction in code, instruction
    assert "LDGSTS" not in code and "LDL" not in code
    # (the fp16 stage written over the buffer just multiplied; a float32 one, copied out in bulk, of its own)
    assert plan.implementation == "tma" and plan.shared_bytes == 1008 + 2 * 2 * 8192 + 16
    assert mm._plan("test", (9, 0), "float32", 3).shared_bytes == 1008 + 2 * 2 * 8192 + 64 * 72 * 4 + 16


@pytest.mark.heavy
def test_a_batched_epilogue_keeps_the_bare_loops_registers(tmp_path):
    """The TMA loop of fp16 64^3 products into an fp16 C, 128 threads, with relu(value + bias[col]): no more
    registers than without the epilogue, at most 80 (six blocks an SM, as many as its shared memory lets in):
    the store's loop for whole tiles has no edge tests (its epilogue's bias loads unpredicated), and a tile
    across C's edge goes item by item through a rolled loop, its items in local memory (LDL/STL past the first
    product)."""
    from examples import gemm_epilogue

    mm, bare = bare_tma_loop()
    ops = mm.operands_type("float16", batched=True, implementation="tma")
    fused = tiles.compile(
        gemm_epilogue.make_batched(mm, gemm_epilogue.batched_bias_relu),
        (ops, cuda.types.float64, cuda.types.float64, cuda.types.Tuple((cuda.types.float32[::1],))),
        arch="sm_90a",
    )
    assert registers(fused) <= max(registers(bare), 80)
    lines = sass(fused, tmp_path).splitlines()
    first_product = next(i for i, line in enumerate(lines) if "HMMA" in line)
    local = [i for i, line in enumerate(lines) if re.search(r"\b(LDL|STL)\b", line) and i > first_product]
    relu = [i for i, line in enumerate(lines) if "FMNMX" in line]
    assert local and len(relu) >= 32
    unpredicated = [line for line in lines if re.search(r"^\s*/\*\w+\*/\s+LDG\.E [^.]", line)]
    assert len(unpredicated) >= 8, unpredicated  # (the bias's items, a thread's 16 columns, issued together)


@pytest.mark.heavy
def test_batched_float64_accumulates_on_plain_dmma(tmp_path):
    """float64 (32 x 32 x 16 tiles, 128 threads, products over several K-tiles): ptxas would fold the
    accumulator's zero at a product's first K-tile into the first DMMAs' zero-accumulator form (a uniform
    predicate operand), which left rows 8-15 of every 16 of C wrong on an H200; the zero it cannot see
    keeps every DMMA a plain accumulate. No local memory among the products."""
    mm = tiles.Matmul((32, 32, 16), "float64", block_dim=128, stages=2)
    cubin, _ = batched_kernel(mm, "float64", "sm_90")
    lines = sass(cubin, tmp_path).splitlines()
    dmma = [i for i, line in enumerate(lines) if "DMMA" in line]
    assert dmma
    assert not [lines[i] for i in dmma if re.search(r"DMMA[^;]*,\s*!?UP\d", lines[i])]
    assert not [line for line in lines[dmma[0] : dmma[-1]] if "LDL" in line or "STL" in line]


BATCHED_KERNEL = """
MM = tiles.Matmul((64, 64, 32), float16, block_dim=128)
def kernel(ops, a2, n):
    {body}
"""


@pytest.mark.parametrize(
    "body,message",
    [
        ("MM.batched(a2)", r"ops must be what mm.operands\(a, b, c\) returns"),
        ("MM.batched(ops, a2)", r"alpha must be a number"),
        ("MM.batched(ops, stages=2)", r"unknown keyword argument 'stages'"),
        ("MM.tile(ops, 0, 0)", r"ops describe a batch \(3-D arrays\).*Fix: call mm.batched\(ops, ...\)"),
        ("MM.batched(ops, epilogue=abs)", r"epilogue must be a @cuda.jit\(device=True\) function"),
    ],
)
def test_batched_misuse_is_a_clear_compile_time_error(body, message):
    from numba.cuda.types import float16

    namespace = {"cuda": cuda, "tiles": tiles, "float16": float16}
    exec(BATCHED_KERNEL.format(body=body), namespace)
    mm = namespace["MM"]
    with pytest.raises(tiles.TilesError) as info:
        tiles.compile(
            namespace["kernel"],
            (mm.operands_type("float32", batched=True), cuda.types.float16[:, :], cuda.types.int64),
            arch="sm_90",
            output="ltoir",
        )
    text = str(info.value).splitlines()[0]
    assert re.match(r"tiles\.Matmul\.(batched|tile):", text) and "Fix:" in text, text
    assert re.search(message, text), text


MATMUL_KERNEL = """
MM = tiles.Matmul((64, 64, 32), float16, block_dim=128)
def kernel(a, b, c, n):
    sa = cuda.shared.array(MM.a_items, float16, alignment=16)
    sb = cuda.shared.array(MM.b_items, float16, alignment=16)
    s32 = cuda.shared.array(MM.a_items, float32, alignment=16)
    acc = cuda.local.array(MM.accumulator_items, float32)
    acc16 = cuda.local.array(MM.accumulator_items, float16)
    epilogue = bias if n > 0 else None
    {body}
"""


@pytest.mark.parametrize(
    "body,message",
    [
        ("MM.load_a(a, s32, 0, 0)", r"tile must be an array of float16 \(this Matmul's tiles\), got array\(float32"),
        ("MM.load_b(c, sb, 0, 0)", r"src holds float32 but tile holds float16"),
        ("MM.load_a(a, sa, 0.5, 0)", r"row must be an integer"),
        ("MM.load_a(a, sa, 0, 0, asynchronous=n)", r"asynchronous must be a compile-time constant"),
        ("MM.load_a(a[0], sa, 0, 0)", r"src must be a 2-D array"),
        ("MM.multiply(sa, sb, acc16)", r"acc must be an array of float32"),
        ("MM.multiply(sa, s32, acc)", r"b must be an array of float16 \(this Matmul's tiles\), got array\(float32"),
        (
            "MM.store(acc, cuda.local.array((2, 2), float64), 0, 0)",
            r"dst holds float64; this Matmul stores its float32 accumulator as float32 or rounded to float16",
        ),
        ("MM.store(acc16, c, 0, 0)", r"acc must be an array of float32"),
        ("MM.store(acc, c, 0, 0, 1.0, 0.0, sa)", r"stage must be a shared array of float32"),
        ("MM.store(acc, c, 0, 0, a)", r"alpha must be a number"),
        ("MM.wait(-1)", r"pending must be a non-negative int"),
        ("MM.wait(n * 0.5)", r"pending must be an integer"),
        # epilogues
        (
            "MM.store(acc, c, 0, 0, epilogue=abs)",
            r"epilogue must be a @cuda.jit\(device=True\) function, got <built-in",
        ),
        ("MM.store(acc, c, 0, 0, epilogue_args=(c,))", r"epilogue_args given without an epilogue"),
        (
            "MM.store(acc, c, 0, 0, epilogue=bias, epilogue_args=c[0])",
            r"epilogue_args must be a tuple .* after "
            r"\(value, row, col\), got array\(float32, 1d, A\).*Fix: pass epilogue_args=\(bias,\)",
        ),
        (
            "MM.store(acc, c, 0, 0, epilogue=bias)",
            r"the epilogue bias does not compile for \(float32, int64, int64\) "
            r"\(value, row, col\): .*Fix: make bias take \(value, row, col\)",
        ),
        ("MM.store(acc, c, 0, 0, epilogue=epilogue)", r"epilogue must be a compile-time constant"),
    ],
)
def test_matmul_misuse_is_a_clear_compile_time_error(body, message):
    from numba.cuda.types import float16, float32, float64

    @cuda.jit(device=True)
    def bias(value, row, col, vector):
        return value + vector[col]

    namespace = {"cuda": cuda, "tiles": tiles, "float16": float16, "float32": float32, "float64": float64, "bias": bias}
    exec(MATMUL_KERNEL.format(body=body), namespace)
    with pytest.raises(tiles.TilesError) as info:
        tiles.compile(
            namespace["kernel"],
            "void(float16[:, :], float16[:, :], float32[:, :], int64)",
            arch="sm_90",
            output="ltoir",
        )
    text = str(info.value).splitlines()[0]
    assert text.startswith(f"tiles.Matmul.{body.split('(')[0].split('.')[1]}:") and "Fix:" in text, text
    assert re.search(message, text), text


@pytest.mark.skipif(_toolchain.cuda_line() != "cu12", reason="the CUDA 12 line's choice: make test-compile CUDA=cu12")
def test_the_cuda_12_line_computes_hopper_tiles_without_libmathdx(tmp_path):
    """libmathdx 0.4 (the pipelines' producer) has no CUDA 12 wheel: Matmul.tile on Hopper is our wgmma block where it
    takes the tile (NVRTC 12.9 builds it for sm_90a: HGMMA), the register form's loop where libmathdx's pipeline
    would run (tf32)."""
    mm = tiles.Matmul((128, 128, 64), "int16", precision="bf16")
    tf32 = tiles.Matmul((128, 128, 32), "float32", precision="tf32", arrangement=("row_major", "col_major"))
    assert mm._plan("test", (9, 0), "float32", 2).implementation == "wgmma"
    assert tf32._plan("test", (9, 0), "float32", 2).implementation == "cp.async"

    @cuda.jit
    def kernel(ops):
        mm.tile(ops, cuda.blockIdx.y, cuda.blockIdx.x)

    text = sass(tiles.compile(kernel, (mm.operands_type("float32"),), arch="sm_90a"), tmp_path)
    assert " HGMMA.64x128x16.F32.BF16" in text
