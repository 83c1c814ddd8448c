"""The intrinsics in numba-cuda-mlir kernels, with no GPU: typed by the same rules, lowered to MLIR that calls the
same entry points, linked with the same LTO-IR by ``tiles.compile``; each kernel against the same kernel compiled by
numba-cuda (its intrinsics' SASS: the same shuffles, barriers and no calls). And the numba-cuda-mlir hooks the
adapter (``numba_tiles/_mlir.py``) relies on. Runs where numba-cuda-mlir is installed (the cu13 environment of
``make venv``: ``pip install 'numba-tiles[cu13,mlir]'``)."""

import re

import pytest

pytest.importorskip("numba_cuda_mlir")

from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402
from numba_cuda_mlir import cuda as mlir_cuda  # noqa: E402

import numba_tiles as tiles  # noqa: E402

from .test_sass import instructions, sass  # noqa: E402

# (name, kernel body: one statement per line, over x and out (float32 or int32 arrays) and the tile `items`)
CASES = {
    "block_reduce": "s = tiles.block_reduce(x[i], '+', block_dim=128)\nout[i] = s",
    "block_reduce max, 4 items": "tiles.block_load(x[base:], items, block_dim=128, items_per_thread=4)\n"
                                 "out[i] = tiles.block_reduce(items, 'max', block_dim=128, items_per_thread=4)",
    "block_sum, 2-D block": "out[i] = tiles.block_sum(x[i], block_dim=(16, 8))",
    "block_scan exclusive": "out[i] = tiles.block_scan(x[i], '+', block_dim=128, exclusive=True)",
    "load, radix sort, store": "tiles.block_load(x[base:], items, block_dim=128, items_per_thread=4)\n"
                               "tiles.block_radix_sort(items, block_dim=128, items_per_thread=4)\n"
                               "tiles.block_store(out[base:], items, block_dim=128, items_per_thread=4)",
    "load transpose, exchange, store": "tiles.block_load(x[base:], items, block_dim=128, items_per_thread=4, "
                                       "algorithm='transpose')\n"
                                       "tiles.block_exchange(items, 'striped_to_blocked', block_dim=128, "
                                       "items_per_thread=4)\n"
                                       "tiles.block_store(out[base:], items, block_dim=128, items_per_thread=4)",
    "warp_reduce": "out[i] = tiles.warp_reduce(x[i], 'min')",
    "warp_scan": "out[i] = tiles.warp_scan(x[i], '+', exclusive=True)",
    "warp_sum, 16 lanes": "out[i] = tiles.warp_sum(x[i], warp_size=16)",
    "block_shuffle offset": "out[i] = tiles.block_shuffle(x[i], 'offset', block_dim=128, distance=1)",
}
# (the same over a loaded tile of int32 items, stored back)
TILE = {
    "block_sum of items": "out[i] = tiles.block_sum(items, block_dim=128, items_per_thread=4)",
    "block_scan of items": "tiles.block_scan(items, '+', block_dim=128, items_per_thread=4)",
    "merge sort": "tiles.block_merge_sort(items, '<', block_dim=128, items_per_thread=4)",
    "adjacent difference": "tiles.block_adjacent_difference(items, '-', block_dim=128, items_per_thread=4)",
    "discontinuity": "flags = cuda.local.array(4, np.int32)\n"
                     "tiles.block_discontinuity(items, block_dim=128, items_per_thread=4, heads=flags)",
    "histogram": "counts = cuda.shared.array(16, np.int32)\n"
                 "tiles.block_histogram(items, counts, block_dim=128, items_per_thread=4, bins=16)",
}
CASES.update({name: "tiles.block_load(x[base:], items, block_dim=128, items_per_thread=4)\n" + body + "\n"
              "tiles.block_store(out[base:], items, block_dim=128, items_per_thread=4)" for name, body in TILE.items()})
KERNEL = """
def kernel(x, out):
    items = cuda.local.array(4, np.{dtype})
    i = cuda.grid(1)
    base = cuda.blockIdx.x * 512
{body}
"""


def kernel_of(compiler, body, dtype):
    """The case's kernel made with ``compiler`` (``cuda.jit`` of numba-cuda or of numba-cuda-mlir)."""
    import numpy as np

    scope = {"cuda": mlir_cuda if compiler is mlir_cuda.jit else cuda, "tiles": tiles, "np": np}
    exec(KERNEL.format(dtype=dtype, body="\n".join("    " + line for line in body.splitlines())), scope)
    return compiler(scope["kernel"])


def compiled(compiler, body, dtype, tmp_path):
    """SASS of the case's kernel made with ``compiler``."""
    ty = getattr(types, dtype)
    return sass(tiles.compile(kernel_of(compiler, body, dtype), (ty[::1], ty[::1]), arch="sm_90"), tmp_path)


def counts(text):
    names = [(op[1:] if op[0].startswith("@") else op)[0].split(".")[0] for op in instructions(text) if op]
    return {name: names.count(name) for name in ("SHFL", "BAR", "CALL", "LDL", "STL", "REDUX")}, len(names)


@pytest.mark.parametrize("case", CASES)
def test_each_collective_compiles_to_the_same_code_as_under_numba_cuda(case, tmp_path):
    dtype = "int32" if "sort" in case or "exchange" in case or case in TILE else "float32"
    ours, total = counts(compiled(mlir_cuda.jit, CASES[case], dtype, tmp_path))
    theirs, total_theirs = counts(compiled(cuda.jit, CASES[case], dtype, tmp_path))
    assert ours["CALL"] == 0 and ours["LDL"] == 0 and ours["STL"] == 0, ours
    assert ours == theirs, (ours, theirs)
    # (the kernels' own code around the calls differs a little: indexing, the arrays' descriptors)
    assert abs(total - total_theirs) <= max(16, 0.1 * total_theirs), (total, total_theirs)


def test_block_reduce_is_cubs_warp_shuffles_and_barriers(tmp_path):
    ours, _ = counts(compiled(mlir_cuda.jit, CASES["block_reduce"], "float32", tmp_path))
    assert ours["SHFL"] >= 5 and ours["BAR"] >= 1 and ours["CALL"] == 0, ours


def test_a_device_function_calls_them_and_any_arch_compiles(tmp_path):
    """An intrinsic in a @cuda.jit(device=True) helper of numba-cuda-mlir; the cubin is the arch asked for (its ELF
    flags), whatever the host (numba-cuda-mlir takes the host's from the driver: `_mlir.compile_kernel`)."""
    import struct

    @mlir_cuda.jit(device=True)
    def total(v):
        return tiles.block_reduce(v, "+", block_dim=128)

    @mlir_cuda.jit
    def kernel(x, out):
        out[mlir_cuda.blockIdx.x] = total(x[mlir_cuda.grid(1)])

    for arch, sm in (("sm_80", 80), ("sm_90", 90), ("sm_100", 100)):
        cubin = tiles.compile(kernel, (types.float32[::1], types.float32[::1]), arch=arch)
        assert struct.unpack_from("<I", cubin, 0x30)[0] >> 8 & 0xFF == sm, arch
        assert counts(sass(cubin, tmp_path))[0]["SHFL"] >= 5


def test_shared_memory_and_precompile_take_its_kernels():
    """tiles.shared_memory gives a numba-cuda-mlir kernel's static shared memory and its intrinsics' buffers, as for
    the same kernel under numba-cuda; tiles.precompile compiles it."""
    sig = (types.int32[::1], types.int32[::1])
    usage = {jit: tiles.shared_memory(kernel_of(jit, CASES["load, radix sort, store"], "int32"), sig, arch="sm_90")
             for jit in (mlir_cuda.jit, cuda.jit)}
    assert usage[mlir_cuda.jit] == usage[cuda.jit] and usage[cuda.jit]["buffers"], usage
    kernel = kernel_of(mlir_cuda.jit, CASES["block_reduce"], "float32")
    done = tiles.precompile(kernel, arch=["sm_80", "sm_90"], progress=False,
                            signatures={kernel: [(types.float32[::1], types.float32[::1])]})
    assert [arch for _, _, arch in done] == ["sm_80", "sm_90"]


def test_misuse_is_the_same_clear_error():
    @mlir_cuda.jit
    def kernel(x, out):
        out[0] = tiles.block_reduce(x[0], "^^", block_dim=128)

    with pytest.raises(tiles.TilesError, match=re.escape("tiles.block_reduce: op '^^' is not supported. Fix:")) as info:
        tiles.compile(kernel, (types.float32[::1], types.float32[::1]), arch="sm_90")
    # then where the call stands, as under numba-cuda
    assert re.search(r'File ".*test_mlir\.py", line \d+, in .*kernel:\n +out\[0\] = tiles\.block_reduce', str(info.value))


def test_a_call_with_a_user_function_is_refused_naming_the_compiler_that_takes_it():
    @mlir_cuda.jit(device=True)
    def larger(a, b):
        return max(a, b)

    @mlir_cuda.jit
    def kernel(x, out):
        out[0] = tiles.block_reduce(x[0], larger, block_dim=128)

    with pytest.raises(tiles.TilesError, match=r"tiles\.block_reduce: .*not supported in numba-cuda-mlir kernels yet"
                                               r".*Fix: compile the kernel with numba-cuda's @cuda\.jit"):
        tiles.compile(kernel, (types.float32[::1], types.float32[::1]), arch="sm_90")


def test_numba_cuda_mlirs_extension_loader_imports_us():
    """Our numba_cuda_mlir_extensions entry point: numba-cuda-mlir's loader (on its launch path) imports numba_tiles,
    whose import registers the intrinsics."""
    import subprocess
    import sys

    code = ("import sys\nfrom numba_cuda_mlir.numba_cuda.core import entrypoints\nentrypoints.init_all()\n"
            "print('numba_tiles' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True"], done.stdout + done.stderr


def test_the_numba_cuda_mlir_hooks_the_adapter_uses_are_there():
    """numba_tiles/_mlir.py's private hooks, by name: a numba-cuda-mlir upgrade that moves one fails here."""
    import numba_cuda_mlir.tools as tools
    from numba_cuda_mlir import extending, lowering_utilities, models
    from numba_cuda_mlir.descriptor import mlir_target
    from numba_cuda_mlir.mlir_lowering import MLIRLower

    assert hasattr(tools, "_cached_cc")
    assert isinstance(mlir_target._typingctx_initialized, bool) and isinstance(mlir_target._targetctx_initialized, bool)
    for name in ("get_or_insert_function", "memref_data_pointer", "constant"):
        assert callable(getattr(lowering_utilities, name)), name
    for name in ("alloca", "get_storage_type", "as_storage", "from_storage", "lower_cast", "link_external_item",
                 "load_var", "store_var", "get_numba_type"):
        assert callable(getattr(MLIRLower, name)), name
    assert hasattr(extending, "typing_registry") and callable(extending.lower_builtin)
    from numba_cuda_mlir.numba_cuda.core.typeinfer import CallConstraint, ConstraintNetwork

    assert {"constraint", "typeinfer"} <= set(ConstraintNetwork.propagate.__code__.co_varnames)
    assert {"func", "loc"} <= set(CallConstraint.__init__.__code__.co_varnames)
    assert callable(models.mlir_data_manager.lookup)
