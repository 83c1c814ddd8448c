"""The linked cubin (no GPU needed) has CUB's reduction inlined: no calls, no local memory, shuffles."""

import pytest

import numba_tiles as tiles

from ..support import reference
from ..support.sass import external_calls, instructions, opcode_names, registers, sass


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
@pytest.mark.parametrize(
    "dtype,op,redux",
    [("int32", "+", "REDUX.SUM.S32"), ("uint32", "min", "REDUX.MIN"), ("int32", "max", "REDUX.MAX.S32")],
)
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


def pipeline_kernel(items, dtype, load="direct", store="direct"):
    """Every block-level collective on one thread-local array, as a kernel to disassemble."""
    import numpy as np
    from numba import cuda, uint32

    DT = np.dtype(dtype)

    @cuda.jit
    def kernel(x, out, counts):
        mine = cuda.local.array(items, DT)
        start = cuda.blockIdx.x * 128 * items
        tiles.block_load(x[start:], mine, block_dim=128, items_per_thread=items, algorithm=load)
        tiles.block_exchange(mine, "blocked_to_warp_striped", block_dim=128, items_per_thread=items)
        tiles.block_radix_sort(mine, block_dim=128, items_per_thread=items, descending=True)
        tiles.block_scan(mine, "max", block_dim=128, items_per_thread=items, exclusive=True)
        hist = cuda.shared.array(64, uint32)
        tiles.block_histogram(mine, hist, block_dim=128, items_per_thread=items, bins=64)
        tiles.block_store(out[start:], mine, block_dim=128, items_per_thread=items, algorithm=store)
        counts[cuda.threadIdx.x % 64] = hist[cuda.threadIdx.x % 64]

    return kernel


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("items", [1, 4, 7, 16])
def test_collectives_stay_in_registers(arch, items, tmp_path):
    """Load, exchange, radix sort, scan, histogram and store of up to 16 items per thread: no local
    memory and no calls (the array-size checks fold away for cuda.local.array)."""
    kernel = pipeline_kernel(items, "uint32", load="warp_transpose", store="transpose")
    code = sass(tiles.compile(kernel, "void(uint32[::1], uint32[::1], uint32[::1])", arch=arch), tmp_path)
    names = opcode_names(code)
    assert not names & {"LDL", "STL"}, sorted(names)
    assert not external_calls(code)  # nor the checks' printf and assertion: they fold away


def test_vectorize_issues_128_bit_loads_and_stores(tmp_path):
    kernel = pipeline_kernel(4, "uint32", load="vectorize", store="vectorize")
    code = sass(tiles.compile(kernel, "void(uint32[::1], uint32[::1], uint32[::1])", arch="sm_90"), tmp_path)
    assert "LDG.E.128" in code and "STG.E.128" in code


def test_strided_array_layout_gets_a_runtime_check(tmp_path):
    """Arrays typed float32[:] (layout A) may be strided: the load checks, prints and stops the kernel
    (the calls of printf and of the assertion handler); [::1] arrays need no check."""
    kernel = pipeline_kernel(4, "uint32")
    checked = sass(tiles.compile(kernel, "void(uint32[:], uint32[:], uint32[::1])", arch="sm_90"), tmp_path)
    plain = sass(tiles.compile(kernel, "void(uint32[::1], uint32[::1], uint32[::1])", arch="sm_90"), tmp_path)
    assert len(external_calls(checked)) >= 2 and not external_calls(plain)


def test_debug_mode_checks_the_launch_shape_and_who_calls(monkeypatch, tmp_path):
    """NUMBA_TILES_DEBUG=1 compiles in a block-shape check and a count of the threads that make the call (a
    reducing barrier: printf, then a failed assertion); by default neither."""
    kernel = reference.make_kernel("+", 256)
    sig = "void(float32[::1], int64[::1], float32[::1], float32[::1])"
    plain = sass(tiles.compile(kernel, sig, arch="sm_90"), tmp_path)
    monkeypatch.setenv("NUMBA_TILES_DEBUG", "1")
    checked = sass(tiles.compile(kernel, sig, arch="sm_90"), tmp_path)
    assert not external_calls(plain) and "BAR.RED.POPC" not in plain
    assert len(external_calls(checked)) >= 2 and "BAR.RED.POPC" in checked


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_python_ops_are_inlined(arch, tmp_path):
    """A @cuda.jit(device=True) op and comparison, compiled by Numba and linked as LTO-IR, are inlined."""
    from numba import cuda, float32

    from ..support import collectives

    @cuda.jit
    def kernel(x, out):
        keys = cuda.local.array(8, float32)
        for j in range(8):
            keys[j] = x[cuda.grid(1) * 8 + j]
        tiles.block_merge_sort(keys, collectives.by_magnitude, block_dim=128, items_per_thread=8)
        out[cuda.grid(1)] = tiles.block_reduce(keys, collectives.absmax, block_dim=128, items_per_thread=8)

    code = sass(tiles.compile(kernel, "void(float32[::1], float32[::1])", arch=arch), tmp_path)
    assert not external_calls(code)
    assert not opcode_names(code) & {"LDL", "STL"}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_a_shared_temp_stays_shared_memory(arch, tmp_path):
    """Collectives given one cuda.shared.array as temp: their storage is addressed as shared memory
    (LDS/STS, no generic LD/ST), the buffer's size check folds away (no calls), no local memory."""
    from .test_compile import one_collective

    kernel, _ = one_collective("temp")
    code = sass(tiles.compile(kernel, "void(float32[::1], float32[::1])", arch=arch), tmp_path)
    names = opcode_names(code)
    assert {"LDS", "STS", "BAR"} <= names and not names & {"LD", "ST", "LDL", "STL"}, sorted(names)
    assert not external_calls(code)


@pytest.mark.parametrize("block_dim", [992, 1000, (10, 100), 1024])
@pytest.mark.parametrize("ipt", [3, 5])
def test_big_blocks_are_compiled_to_fit(block_dim, ipt):
    """The issue's unlaunchable kernels: a big block's registers fit an SM's 64K (launch bounds from block_dim)."""
    from numba import cuda, int32

    @cuda.jit
    def sort_and_scan(x):
        keys = cuda.local.array(ipt, int32)
        tiles.block_load(x, keys, block_dim=block_dim, items_per_thread=ipt)
        tiles.block_radix_sort(keys, block_dim=block_dim, items_per_thread=ipt)
        tiles.block_scan(keys, block_dim=block_dim, items_per_thread=ipt)
        tiles.block_store(x, keys, block_dim=block_dim, items_per_thread=ipt)

    threads = block_dim if isinstance(block_dim, int) else block_dim[0] * block_dim[1]
    ptx = tiles.compile(sort_and_scan, "void(int32[::1])", output="ptx").decode()
    assert f".maxntid {threads}, 1, 1" in ptx
    warps = -(-threads // 32)
    assert registers(tiles.compile(sort_and_scan, "void(int32[::1])")) * warps * 32 <= 65536


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_histogram_lanes_counts_with_shared_atomics_in_registers(arch, tmp_path):
    """block_histogram's default for 256 bins ("lanes"): one shared atomic per item, the copies cleared and summed
    with 16-byte shared accesses; no local memory, no calls, no global atomics but the kernel's own."""
    from numba import cuda, uint8, uint32

    @cuda.jit
    def kernel(x, out):
        items = cuda.local.array(32, uint8)
        counts = cuda.shared.array(256, uint32)
        tiles.block_load(x[cuda.blockIdx.x * 512 * 32 :], items, block_dim=512, items_per_thread=32)
        tiles.block_histogram(items, counts, block_dim=512, items_per_thread=32, bins=256)
        out[cuda.threadIdx.x % 256] = counts[cuda.threadIdx.x % 256]

    code = sass(tiles.compile(kernel, "void(uint8[::1], uint32[::1])", arch=arch), tmp_path)
    ops = [i[1] if i[0].startswith("@") else i[0] for i in instructions(code) if i]
    assert sum(op.startswith("ATOMS") for op in ops) == 32, sorted(set(ops))
    assert any(op.startswith("LDS.128") for op in ops) and any(op.startswith("STS.128") for op in ops)
    assert any(op.startswith("LDG.E.128") for op in ops)  # (block_load's default: 16-byte loads)
    assert not opcode_names(code) & {"LDL", "STL", "ATOMG", "RED"} and not external_calls(code)
