"""numba_tiles.extending on the CPU: the downstream package (tests/downstream) compiles with no GPU, its
SASS is clean, its storage is measured, its misuse is a TilesError, its header is in the cache key,
and its C++ errors blame it; the built-ins are declared through the same public API."""

import ast
import re
from pathlib import Path

import pytest
from numba import cuda
from numba.cuda import types
from numba.cuda.extending import overload

import numba_tiles as tiles
from numba_tiles import _programs, _target, _toolchain
from numba_tiles import extending as ext

from ..downstream import kernels
from ..downstream.tiles_extras import block_argmax, block_topk, warp_argmax
from ..support.sass import external_calls, sass

F32 = types.float32[::1]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize(
    "kernel,sig",
    [(kernels.peaks, (F32, F32, types.int32[::1], F32)), (kernels.top_means, (F32, F32))],
    ids=["peaks", "top_means"],
)
def test_kernels_through_device_functions_compile_without_gpu(kernel, sig, arch, tmp_path):
    """A kernel calls a device function that calls built-in and tiles_extras intrinsics: it links for
    each arch (the device function's intrinsics built for that arch), with no local memory and no
    external calls."""
    code = sass(tiles.compile(kernel, sig, arch=arch), tmp_path)
    assert re.search(rf"\.target\t{arch}\b|EF_CUDA_SM{arch[3:]}\b", code)  # (nvdisasm of a 13.0 / 12.9 cubin)
    assert not external_calls(code)
    assert "LDL" not in code and "STL" not in code, "local memory"
    assert "BAR.SYNC" in code


def _warp_peaks(x, out):
    i = cuda.grid(1)
    v, j = warp_argmax(x[i], i, warp_size=8)
    if i % 8 == 0:
        out[i // 8] = v + j


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_a_warp_level_downstream_intrinsic_is_shuffles(arch, tmp_path):
    code = sass(tiles.compile(_warp_peaks, (F32, F32), arch=arch), tmp_path)
    assert "SHFL.DOWN" in code and "BAR.SYNC" not in code
    assert "LDL" not in code and "STL" not in code and not external_calls(code)


def test_precompile_a_module_of_kernels_calling_device_functions():
    done = tiles.precompile("tests.downstream.kernels", arch=["sm_80", "sm_90"], progress=False)
    assert sorted((name, arch) for name, _, arch in done) == [
        ("peaks", "sm_80"),
        ("peaks", "sm_90"),
        ("top_means", "sm_80"),
        ("top_means", "sm_90"),
    ]


def test_device_function_versions_are_kept_per_arch():
    """A device function compiled for sm_80 by tiles.compile is not the one an sm_90 compile links:
    each arch's cubin links (an sm_90 object in an sm_80 link is an error)."""
    for arch in ("sm_90", "sm_80", "sm_90"):
        modules = tiles.compile(kernels.top_means, (F32, F32), arch=arch, output="ltoir")
        assert len(modules) >= 3  # Numba's, and tiles_extras' and CUB's programs


def _doubled(x):
    return 2 * x


@overload(_doubled, target="cuda")
def _doubled_impl(x):
    return lambda x: x + x


def _make_overloads_kernel(mode):
    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        # (a string against a tuple of them and a user's @overload: each of their implementations gets its own
        # dispatcher while the kernel compiles)
        if mode in ("sum", "max"):
            out[0] = tiles.block_reduce(_doubled(x[i]), "+" if mode == "sum" else "max", block_dim=128)

    return kernel


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_a_kernel_whose_compile_makes_dispatchers_compiles_for_any_arch(arch, tmp_path):
    """Numba makes a dispatcher for an @overload's implementation (a user's, or its own for a string compared
    with ``in``) in the middle of typing a kernel: tiles.compile, which reads device functions' compiled versions
    by arch while it runs, takes such a new dispatcher too."""
    code = sass(tiles.compile(_make_overloads_kernel("sum"), (F32, F32), arch=arch), tmp_path)
    assert "BAR.SYNC" in code and not external_calls(code)


@cuda.jit
def _grid_total(x, out):
    i = cuda.grid(1)
    s = tiles.block_reduce(x[i], "+", block_dim=128)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = s
    cuda.cg.this_grid().sync()
    if i == 0:
        t = 0.0
        for b in range(cuda.gridDim.x):
            t += out[b]
        out[0] = t


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_a_kernel_that_syncs_its_grid_links_the_device_runtime(arch, tmp_path):
    """A grid's sync (``cuda.cg.this_grid().sync()``) beside an intrinsic: tiles.compile links CUDA's device runtime
    as numba-cuda's launch does, so the cubin defines the runtime's ``cudaCGGetIntrinsicHandle`` it calls. Its
    shared memory is the kernel's, not that of the runtime's own kernels linked beside it (over 40 KB)."""
    code = sass(tiles.compile(_grid_total, (F32, F32), arch=arch), tmp_path)
    assert re.search(r"\.text\.cudaCGGetIntrinsicHandle\b", code) and "BAR.SYNC" in code
    assert tiles.shared_memory(_grid_total, (F32, F32), arch=arch)["total"] < 2048


def test_storage_is_measured():
    need = tiles.temp_bytes(block_argmax, types.float64, types.int32, block_dim=128)
    assert need >= 4 * 16  # a (key, value) pair per warp at least
    topk = tiles.temp_bytes(block_topk, F32, F32, k=8, block_dim=128, items_per_thread=4)
    assert topk > 128 * 4  # the radix sort's storage is over one item per thread
    usage = tiles.shared_memory(kernels.top_means, (F32, F32), arch="sm_90")
    assert any("tiles.block_topk" in name for name in usage["buffers"]), usage
    assert usage["total"] >= sum(usage["buffers"].values())


def _compile_body(body):
    source = "def kernel(x, out):\n    i = cuda.grid(1)\n" + "".join(f"    {line}\n" for line in body)
    namespace = {
        "cuda": cuda,
        "block_argmax": block_argmax,
        "block_topk": block_topk,
        "warp_argmax": warp_argmax,
        "float32": types.float32,
        "complex64": types.complex64,
    }
    exec(source, namespace)
    return tiles.compile(cuda.jit(namespace["kernel"]), (F32, F32))


@pytest.mark.parametrize(
    "body,message",
    [
        (
            ["v, j = block_argmax(complex64(x[i]), i, block_dim=128)"],
            r"tiles.block_argmax: value has type complex64, which is not supported here. Fix: pass one of int8",
        ),
        (["v, j = block_argmax(x[i], x[i], block_dim=128)"], r"tiles.block_argmax: index must be an integer"),
        (["v, j = warp_argmax(x[i], i, warp_size=3)"], r"tiles.warp_argmax: warp_size must be a power of two"),
        (
            ["v, j = block_argmax(x[i], i, block_dim=out.size)"],
            r"tiles.block_argmax: block_dim must be a compile-time constant",
        ),
        (
            [
                "a = cuda.local.array(2, float32)",
                "b = cuda.local.array(4, float32)",
                "block_topk(a, b, k=300, block_dim=128, items_per_thread=2)",
            ],
            r"tiles.block_topk: k=300 is more than the block's 256 items. Fix: pass k <= ",
        ),
        (
            ["a = cuda.local.array(2, float32)", "block_topk(a, x[0], k=4, block_dim=128, items_per_thread=2)"],
            r"tiles.block_topk: items and out must be thread-local arrays",
        ),
        (
            [
                "a = cuda.local.array(2, float32)",
                "b = cuda.local.array(4, float32)",
                "block_topk(a, b, k=0, block_dim=128, items_per_thread=2)",
            ],
            r"tiles.block_topk: k must be a positive int",
        ),
    ],
    ids=["complex", "float-index", "warp-size", "runtime-block", "k-too-big", "out-scalar", "k-zero"],
)
def test_misuse_is_a_tiles_error_naming_the_intrinsic(body, message):
    with pytest.raises(tiles.TilesError, match="^" + message):
        _compile_body(body)


def _library(tmp_path, text):
    (tmp_path / "mine.cuh").write_text(text)
    return ext.library("mine_test", tmp_path, blame="This is a bug in mine_test")


GOOD = (
    '#pragma once\n#include "common.cuh"\n'
    "namespace mine { template <typename T> __device__ T twice(T v) { return v + v; } }\n"
)


def test_the_headers_content_is_in_the_cache_key(tmp_path):
    library = _library(tmp_path, GOOD)
    header = library.header("mine.cuh")
    instance = ext.Instance(
        intrinsic="twice",
        header=header,
        template=header.template("mine::twice", T="float"),
        result=types.float32,
        params=(ext.Arg("v", types.float32),),
    )
    source = _programs.translation_unit([instance])

    def key():
        return tiles.cache.key(_programs.key_parts(source, library, _target.Target("sm_90")))

    before = key()
    assert key() == before
    (tmp_path / "mine.cuh").write_text(GOOD + "// a comment changes the header, so the key\n")
    _toolchain.directory_digest.cache_clear()  # (a process reads a directory's digest once: a new process)
    assert key() != before
    assert "mine_test" in _programs.key_parts(source, library, _target.Target("sm_90"))["versions"]
    assert _programs.build([instance], _target.Target("sm_90"))[:4] != b""  # and it compiles


def test_a_cpp_error_in_a_downstream_header_blames_it(tmp_path):
    library = _library(tmp_path, GOOD.replace("v + v", "v + undeclared"))
    header = library.header("mine.cuh")

    def rule(name, args):
        return ext.Instance(
            intrinsic=name,
            header=header,
            template=header.template("mine::twice", T="float"),
            result=types.float32,
            params=(ext.Arg("v", types.float32),),
        )

    @ext.intrinsic(consts={}, rule=rule, simulate=None)
    def twice(v):
        """v + v. Example:: (none)"""

    @cuda.jit
    def kernel(x, out):
        out[0] = twice(x[0])

    with pytest.raises(_programs.NVRTCError, match=r"tiles.twice as mine::twice<float>.*This is a bug in mine_test"):
        tiles.compile(kernel, (F32, F32))
    with pytest.raises(tiles.TilesError, match=r"tiles.twice: it has no simulator twin.*Fix: run it compiled"):
        twice(1.0)  # (a call outside a compiled kernel is the simulator's)
    tiles.compile(kernels.top_means, (F32, F32))  # and the process goes on


FACES = (
    "block.py",
    "block_sort.py",
    "block_neighbors.py",
    "warp.py",
    "tile.py",
    "matmul.py",
    "_matmul/base.py",
    "_matmul/calls.py",
    "_matmul/shared_tiles.py",
    "_matmul/cp_async.py",
    "_matmul/tma.py",
    "_matmul/wgmma.py",
    "_matmul/libmathdx.py",
)


@pytest.mark.parametrize("face", FACES)
def test_builtins_are_declared_through_the_public_api(face):
    """No back door: the built-in families take the spec mechanism from numba_tiles.extending only."""
    tree = ast.parse((Path(tiles.__file__).parent / face).read_text())
    taken = {(node.module, a.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names}
    # (an implementation may declare everything through its family's base, which takes the API)
    assert any(module in ("extending", "base") or name == "extending" for module, name in taken), taken
    # (the matmul's implementations declare libraries of their own: the wgmma block's, libmathdx's entry points)
    private = {"_spec", "_entry", "_dtypes", "_errors"} | ({"_library"} if not face.startswith("_matmul/") else set())
    assert not {m.lstrip(".") for m, _ in taken if m and m.lstrip(".") in private}, taken


@cuda.jit(device=True)
def _inner(v):
    return tiles.block_reduce(v, "max", block_dim=128)


@cuda.jit(device=True)
def _outer(v, i):
    m = _inner(v)
    p, j = block_argmax(v, i, block_dim=128)
    return m + p, j


@cuda.jit(device=True)
def _misused(v):
    return tiles.block_reduce(v, "&", block_dim=128)


def _nested(x, out):
    i = cuda.grid(1)
    s, j = _outer(x[i], i)
    out[i] = s + j


def _calls_misused(x, out):
    out[0] = _misused(x[0])


def test_nested_device_functions_across_archs_and_after_a_failure():
    """A helper calling a helper and an intrinsic, for sm_80, sm_90 and sm_80 again, with line tables too; a
    helper's misuse is its TilesError (for each arch asked), and the process goes on."""
    sizes = {arch: len(tiles.compile(_nested, (F32, F32), arch=arch)) for arch in ("sm_80", "sm_90")}
    assert sizes["sm_80"] != sizes["sm_90"]
    assert len(tiles.compile(_nested, (F32, F32), arch="sm_80")) == sizes["sm_80"]
    assert tiles.compile(_nested, (F32, F32), arch="sm_90", lineinfo=True)[:4] == b"\x7fELF"
    for arch in ("sm_90", "sm_80"):
        with pytest.raises(tiles.TilesError, match=r"^tiles.block_reduce: op '&' needs an integer dtype"):
            tiles.compile(_calls_misused, (F32, F32), arch=arch)
    usage = tiles.shared_memory(_nested, (F32, F32), arch="sm_90")
    assert {name.split(":")[0] for name in usage["buffers"]} == {"tiles.block_reduce", "tiles.block_argmax"}
    assert len(tiles.compile(_nested, (F32, F32), arch="sm_90")) == sizes["sm_90"]
