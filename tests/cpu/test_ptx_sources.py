"""The C++ in lto_libs/ issues PTX through libraries (CCCL's cuda::ptx, MathDx's CuTe and CUTLASS, the CUDA
headers' pipeline primitives): inline `asm` only where none does it as well, each statement under a comment saying
why; and the copy engine's instructions those calls issue are in the SASS of a batched TMA kernel with a float C
(TMA loads, mbarriers, the bulk copy out and its waits)."""

import re
from pathlib import Path

from numba import cuda

import numba_tiles as tiles
from examples import gemm

from ..support.sass import instructions, sass

LTO_LIBS = Path(__file__).resolve().parents[2] / "lto_libs"
ASM = re.compile(r"\basm\b\s*(?:volatile\b\s*)?\(")
MOST = 6  # inline PTX statements lto_libs/ may hold (one only under NUMBA_TILES_DEBUG: its counting barrier)


def asm_statements():
    """(file, line index, the file's lines) of each asm statement in lto_libs/, outside comments."""
    for path in sorted(LTO_LIBS.glob("*.cuh")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if ASM.search(line.split("//")[0]):
                yield path.name, i, lines


def test_inline_ptx_is_rare_and_each_statement_says_why():
    found = list(asm_statements())
    assert len(found) <= MOST, [f"{name}:{i + 1}" for name, i, _ in found]
    for name, i, lines in found:
        above = lines[i - 1].strip() if i > 0 else ""
        assert above.startswith("//"), (
            f"lto_libs/{name}:{i + 1}: an asm statement with no comment just above it "
            "saying why no library call (cuda::ptx, CuTe, CUTLASS) does it"
        )


def test_the_counter_sees_asm_statements_and_ignores_comments():
    assert ASM.search('asm volatile("bar.sync %0, 128;" ::"r"(id));')
    assert ASM.search('asm("mov.u32 %0, %%laneid;" : "=r"(lane));')
    assert not ASM.search("(an empty asm: ptxas cannot see through it)")
    assert not ASM.search("cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);")


def test_batched_tma_issues_the_copy_engines_instructions(tmp_path):
    """Matmul.batched of fp16 16^3 tiles with a float32 C (sm_90, by TMA): the tiles by TMA (UTMALDG) counted on
    mbarriers (initialized: SYNCS.EXCH; the leader's arrival with the bytes it expects; the threads' parity
    waits; invalidated at the end: SYNCS.CCTL.IV), C's stage fenced for the copy engine and out by one bulk
    copy a whole product (UBLKCP), whose group is waited for (DEPBAR on SB0); the threads' 16-byte copy kept
    for the rest (a blend, a ragged product). (sm_80 has no bulk copy: Matmul.batched's docstring example, a
    float C on sm_80, compiles the threads' copy alone.)"""
    mm = tiles.Matmul((16, 16, 16), "float16", block_dim=32, stages=2)
    assert mm._plan("test", (9, 0), "float32", 3).implementation == "tma"
    signature = (mm.operands_type("float32", batched=True), cuda.types.float64, cuda.types.float64)
    code = sass(tiles.compile(gemm.make_batched(mm), signature, arch="sm_90"), tmp_path)
    opcodes = {" ".join(ins[1:] if ins[0].startswith("@") else ins) for ins in instructions(code) if ins}
    for expected in (
        "UTMALDG.3D",
        "SYNCS.EXCH.64",
        "SYNCS.ARRIVE.TRANS64",
        "SYNCS.PHASECHK.TRANS64.TRYWAIT",
        "SYNCS.CCTL.IV",
        "FENCE.VIEW.ASYNC.S",
        "UBLKCP.G.S",
        "DEPBAR.LE SB0, 0x0",
        "STG.E.128",
    ):
        assert any(op.startswith(expected) for op in opcodes), expected
    assert "LDL" not in code and "LDGSTS" not in code
