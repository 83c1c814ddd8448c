"""tiles.compile with no GPU, the per-process memo of NVRTC products, and the compile key."""

import re

import numpy as np
import pytest
from numba import cuda, float64

import numba_tiles as tiles
from numba_tiles import _compile, _library, _programs, _toolchain, cache
from numba_tiles._library import CUB
from numba_tiles._target import Target

from ..support.programs import observed_programs
from ..support.sass import registers
from ..support.shared_kernels import COLLECTIVES, one_collective

SIG = "void(float32[:], float32[:])"


def sum_kernel(block_dim, op="+"):
    def kernel(x, out):
        i = cuda.grid(1)
        s = tiles.block_reduce(x[i] if i < x.size else 0.0, op, block_dim=block_dim)
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s

    return kernel


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120"])
def test_cubin_for_any_arch(arch):
    cubin = tiles.compile(sum_kernel(96), SIG, arch=arch)
    assert cubin[:4] == b"\x7fELF"


def test_ptx_and_ltoir_outputs():
    ptx = tiles.compile(sum_kernel(64), SIG, arch="sm_90", output="ptx").decode()
    assert ".target sm_90" in ptx and "shfl.sync" in ptx
    modules = tiles.compile(sum_kernel(64), SIG, arch="sm_90", output="ltoir")
    assert len(modules) == 2 and all(isinstance(m, bytes) and m for m in modules)


def test_jit_dispatcher_is_accepted():
    @cuda.jit
    def kernel(x, out):
        out[0] = tiles.block_sum(x[cuda.threadIdx.x + 8 * cuda.threadIdx.y], block_dim=(8, 8))

    assert tiles.compile(kernel, SIG, arch="sm_80")[:4] == b"\x7fELF"


def test_the_kernels_own_options_shape_what_compile_builds():
    """tiles.compile builds what a launch builds: a @cuda.jit kernel's fastmath, launch_bounds and
    max_registers (they were dropped with the dispatcher: an exact division, no minimum of blocks an SM,
    no register cap)."""

    def divide(x, out):
        i = cuda.grid(1)
        out[i] = tiles.block_sum(x[i], block_dim=64) / x[i]

    def ptx(**options):
        return tiles.compile(cuda.jit(**options)(divide), SIG, arch="sm_90", output="ptx").decode()

    plain, fast, bounded = ptx(), ptx(fastmath=True), ptx(launch_bounds=(64, 6))
    assert "div.rn.f32" in plain and "div.rn.f32" not in fast and "div.approx.ftz.f32" in fast
    assert ".minnctapersm 6" in bounded and ".minnctapersm" not in plain

    def chain(x, out):  # 16 values live through a loop: 32 registers uncapped
        i = cuda.grid(1)
        a0, a1, a2, a3, a4, a5, a6, a7 = x[i], x[i + 1], x[i + 2], x[i + 3], x[i + 4], x[i + 5], x[i + 6], x[i + 7]
        a8, a9, a10, a11 = x[i + 8], x[i + 9], x[i + 10], x[i + 11]
        a12, a13, a14, a15 = x[i + 12], x[i + 13], x[i + 14], x[i + 15]
        for _ in range(100):
            a0, a1, a2, a3 = a0 * a1 + a2, a1 * a2 + a3, a2 * a3 + a4, a3 * a4 + a5
            a4, a5, a6, a7 = a4 * a5 + a6, a5 * a6 + a7, a6 * a7 + a8, a7 * a8 + a9
            a8, a9, a10, a11 = a8 * a9 + a10, a9 * a10 + a11, a10 * a11 + a12, a11 * a12 + a13
            a12, a13, a14, a15 = a12 * a13 + a14, a13 * a14 + a15, a14 * a15 + a0, a15 * a0 + a1
        out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15

    uncapped = registers(tiles.compile(cuda.jit(chain), SIG, arch="sm_90"))
    capped = registers(tiles.compile(cuda.jit(max_registers=24)(chain), SIG, arch="sm_90"))
    assert capped <= 24 < uncapped, (capped, uncapped)


def test_arch_specific_target_is_what_numba_cuda_links_on_hopper():
    """arch="sm_90a" (numba-cuda's own link on an H100/H200): Numba's part for compute_90a, the
    intrinsics' LTO-IR the very modules of sm_90 (one cache entry, no new NVRTC program)."""
    kernel = sum_kernel(160)
    plain = tiles.compile(kernel, SIG, arch="sm_90", output="ltoir")
    before = tiles.cache.stats()["nvrtc"]
    specific = tiles.compile(kernel, SIG, arch="sm_90a", output="ltoir")
    assert specific[1:] == plain[1:] and specific[0] != plain[0]
    assert tiles.cache.stats()["nvrtc"] == before
    assert ".target sm_90a" in tiles.compile(kernel, SIG, arch="sm_90a", output="ptx").decode()
    assert tiles.compile(kernel, SIG, arch="sm_100a")[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ["sm_35", "compute_90", "90", None, "sm_80a", "sm_90b"])
def test_bad_arch(arch):
    oldest, nvrtc = _toolchain.supported_archs()[0], "%d\\.%d" % _toolchain.nvrtc_version()
    with pytest.raises(ValueError, match=rf"arch must be one of {oldest}, .*sm_90.*what NVRTC {nvrtc} supports"):
        tiles.compile(sum_kernel(32), SIG, arch=arch)


def test_bad_output():
    with pytest.raises(ValueError, match="output must be 'cubin', 'ptx' or 'ltoir'"):
        tiles.compile(sum_kernel(32), SIG, output="sass")


def test_same_instantiation_compiles_once_per_process():
    before = tiles.cache.stats()["nvrtc"]
    tiles.compile(sum_kernel((4, 4, 4), "max"), SIG, arch="sm_90")
    assert tiles.cache.stats()["nvrtc"] == before + 1
    # Another kernel, other spellings of the same op and shape: no new NVRTC run.
    tiles.compile(sum_kernel((4, 4, 4), max), "void(float32[:], float32[:])", arch="sm_90")

    def other(x, out):
        out[1] = tiles.block_reduce(float64(x[0]), np.maximum, block_dim=(4, 4, 4))

    tiles.compile(other, SIG, arch="sm_90")
    assert tiles.cache.stats()["nvrtc"] == before + 1
    # Another arch is another product.
    tiles.compile(sum_kernel((4, 4, 4), "max"), SIG, arch="sm_80")
    assert tiles.cache.stats()["nvrtc"] == before + 2


def test_one_nvrtc_program_per_kernel():
    def kernel(x, out):
        i = cuda.grid(1)
        a = tiles.block_reduce(x[i], "+", block_dim=40)
        b = tiles.block_reduce(x[i], "max", block_dim=40)
        c = tiles.block_sum(x[i], block_dim=40, num_valid=7)
        out[0] = a + b + c

    before = tiles.cache.stats()["nvrtc"]
    tiles.compile(kernel, SIG, arch="sm_90")
    assert tiles.cache.stats()["nvrtc"] == before + 1


def key(source="int x;", **target):
    return cache.key(_programs.key_parts(source, CUB, Target(**{"arch": "sm_90", **target})))


def test_key_covers_source_target_options_and_versions():
    parts = _programs.key_parts("int x;", CUB, Target("sm_90"))
    assert set(parts) == {"source", "output", "target", "options", "versions"}
    assert parts["versions"]["nvrtc"] == "%d.%d" % _toolchain.nvrtc_version()
    assert parts["versions"]["numba_tiles"] == tiles.__version__
    assert set(parts["versions"][CUB.name]) == {"cccl", "cuda_headers", "lto_libs"}
    assert len({key(), key("int y;"), key(arch="sm_80")}) == 3


def test_key_changes_with_every_target_mode_and_option(monkeypatch):
    keys = {key(), key(checks=True), key(lineinfo=True)}
    monkeypatch.setitem(_library._BASE_OPTIONS, "std", "c++17")
    keys.add(key())
    assert len(keys) == 4


def test_lineinfo_reaches_nvrtc(monkeypatch):
    """From @cuda.jit's flags (here through tiles.compile) to the target, NVRTC's options and its output."""
    from numba_tiles._elf import sections

    monkeypatch.setenv("NUMBA_TILES_CACHE", "0")
    seen = observed_programs(monkeypatch)
    with _programs.recording() as lowered:
        tiles.compile(sum_kernel(160), SIG, arch="sm_90", output="ltoir", lineinfo=True)
    ((instance, target),) = lowered
    assert target == Target("sm_90", lineinfo=True)
    ((source, flags),) = seen
    assert flags["lineinfo"] is True
    # NVRTC honours it: the same program and options compiled to a cubin carry a line table.
    plain = _programs._nvrtc(source, CUB, Target("sm_90"), "plain", [instance], output="cubin")
    given = _programs._nvrtc(source, CUB, target, "given", [instance], output="cubin")
    assert ".debug_line" not in {s[0] for s in sections(plain)} and ".debug_line" in {s[0] for s in sections(given)}


def test_a_kernel_compiles_only_the_headers_its_intrinsics_use(monkeypatch):
    """Its library's base (precompiled once per process), then only its intrinsics' headers."""
    monkeypatch.setenv("NUMBA_TILES_CACHE", "0")
    seen = observed_programs(monkeypatch)
    tiles.compile(sum_kernel(224), SIG, arch="sm_90")

    def reduce_and_scan(x, out):
        i = cuda.grid(1)
        out[i] = tiles.block_reduce(x[i], "max", block_dim=224) + tiles.block_scan(x[i], block_dim=224)

    tiles.compile(reduce_and_scan, SIG, arch="sm_90")
    includes = [re.findall(r'#include "([^"]+)"', source) for source, _ in seen]
    assert includes == [["common.cuh", "block_reduce.cuh"], ["common.cuh", "block_reduce.cuh", "block_scan.cuh"]], (
        includes
    )


def test_entry_point_renders_the_cub_template():
    instance, _ = tiles.block_sum.spec.resolve_values(np.int64(0), block_dim=(16, 16), num_valid=3)
    source = _programs.translation_unit([instance])
    assert source.startswith('#include "common.cuh"\n#include "block_reduce.cuh"\n\n')
    assert (
        "numba_tiles::block_reduce<::cuda::std::int64_t, ::cuda::std::plus<>, 16, 16, 1, 1, "
        "cub::BLOCK_REDUCE_WARP_REDUCTIONS, true, false>(*value, *num_valid, *identity, "
        "::numba_tiles::own_storage{})"
    ) in source
    assert f'extern "C" __device__ void {instance.symbol}(const ::cuda::std::int64_t* value, ' in source
    assert (_toolchain.lto_libs_dir() / "block_reduce.cuh").is_file()


def test_template_arguments_are_named_as_the_header_declares_them():
    header = CUB.header("block_reduce.cuh")
    assert (
        header.template("numba_tiles::block_reduce_storage", T="float", BX=1, BY=2, BZ=3, Algo="A", Broadcast=True)
        == "numba_tiles::block_reduce_storage<float, 1, 2, 3, A, true>"
    )
    with pytest.raises(
        AssertionError,
        match=r"block_reduce_storage in block_reduce.cuh takes <T, BX, BY, BZ, "
        r"Algo, Broadcast>; the rule gives <T, BY, BX>",
    ):
        header.template("numba_tiles::block_reduce_storage", T="float", BY=1, BX=2)


def test_precompile_needs_signatures():
    with pytest.raises(ValueError, match="precompile: no signatures for kernel; pass signatures="):
        tiles.precompile(sum_kernel(32), arch="sm_90")


def test_precompile_fills_the_cache_for_each_arch():
    kernel = sum_kernel(72)
    before = tiles.cache.stats()["writes"]
    done = tiles.precompile(kernel, arch=["sm_80", "sm_90"], signatures={"kernel": [SIG]}, progress=False)
    assert [d[2] for d in done] == ["sm_80", "sm_90"]
    assert tiles.cache.stats()["writes"] == before + 2


def test_scalar_and_one_item_array_are_distinct_entry_points():
    """Same C++ template, different entry signatures: they must not share a symbol (or an object)."""
    spec = tiles.block_reduce.spec
    scalar, _ = spec.resolve_values(np.float32(0), "+", block_dim=64)
    array, _ = spec.resolve_values(np.zeros(1, np.float32), "+", block_dim=64, items_per_thread=1)
    assert scalar.template == array.template and scalar.symbol != array.symbol


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_every_item_of_the_thread_array_is_read(dtype):
    """Each of the 4 items is loaded and reduced.

    CCCL 3.0 compiled without cuda_fp16.h on the include path reduces only the first item of a
    32-bit array (its half-precision SIMD path is then enabled for every type).
    """
    item = np.dtype(dtype)

    def kernel(x, out):
        t = cuda.threadIdx.x
        mine = cuda.local.array(4, item)
        for j in range(4):
            mine[j] = x[t * 4 + j]
        out[t] = tiles.block_reduce(mine, "max", block_dim=64, items_per_thread=4)

    ptx = tiles.compile(kernel, f"void({dtype}[:], {dtype}[:])", arch="sm_90", output="ptx").decode()
    width = 64 if dtype.endswith("64") else 32
    loads = len(re.findall(rf"\bld(?:\.global)?\.[fsub]{width}\s", ptx))
    assert loads >= 4, loads


@pytest.mark.parametrize("which", COLLECTIVES)
def test_shared_memory_of_each_storage_matches_the_linked_kernel(which):
    """Two independent measures: NVRTC's sizeof of each storage type, and the linked cubin's
    shared section (less, on sm_80+, the 1 KiB the system reserves; see the GPU test)."""
    sig = "void(float32[::1], float32[::1])"
    for arch in ("sm_75", "sm_90"):
        kernel, own = one_collective(which)
        usage = tiles.shared_memory(kernel, sig, arch=arch)
        assert usage["total"] == sum(usage["buffers"].values()) + own, usage
        if which == "temp":
            assert usage["buffers"] == {}, usage
        else:
            assert len(usage["buffers"]) == 1 and list(usage["buffers"].values())[0] > 0, usage
    if which == "two_reductions":
        assert list(usage["buffers"])[0].startswith("tiles.block_sum, tiles.block_reduce: "), usage


def test_a_shared_temp_is_the_largest_storage_not_their_sum():
    sig = "void(float32[::1], float32[::1])"
    kernel, need = one_collective("temp")
    separate = tiles.shared_memory(one_collective("separate")[0], sig)
    sizes = sorted(separate["buffers"].values())
    assert len(sizes) == 3 and separate["total"] == sum(sizes), separate
    # the largest storage, with room to align it anywhere (at most 16-byte alignment: 15 bytes)
    assert sizes[-1] <= need < sizes[-1] + 16, (need, sizes)
    assert tiles.shared_memory(kernel, sig)["total"] == need < sum(sizes)


def test_shared_memory_counts_the_users_arrays_too():
    from numba import cuda, uint32

    @cuda.jit
    def kernel(x, out):
        counts = cuda.shared.array(300, uint32)
        counts[cuda.threadIdx.x] = 1
        out[cuda.grid(1)] = tiles.block_sum(x[cuda.grid(1)], block_dim=128) + counts[0]

    usage = tiles.shared_memory(kernel, "void(float32[::1], float32[::1])", arch="sm_75")
    assert usage["total"] == sum(usage["buffers"].values()) + 300 * 4
    assert [name.split(":")[0] for name in usage["buffers"]] == ["tiles.block_sum"]


def test_a_failing_library_header_is_blamed_on_its_library(tmp_path, monkeypatch):
    """NVRTC's failure names the instantiation and the library's own blame; the whole log is kept."""
    from numba.cuda import types

    from numba_tiles._library import Library
    from numba_tiles.extending import Instance

    monkeypatch.setenv("NUMBA_TILES_CACHE", "0")
    (tmp_path / "broken.cuh").write_text(
        "#pragma once\nnamespace mypkg {\ntemplate <typename T, int N>\n__device__ void broken() {\n"
        '  static_assert(N < 0, "mypkg: N must be negative");\n}\n}\n'
    )
    library = Library(
        "mypkg",
        include_dirs=lambda: (tmp_path, *CUB.include_dirs()),
        versions=lambda: {"mypkg": "1"},
        blame="This is a bug in mypkg; report it to mypkg",
    )
    header = library.header("broken.cuh")
    instance = Instance(
        intrinsic="mine",
        header=header,
        template=header.template("mypkg::broken", T="int", N=3),
        result=types.none,
        params=(),
    )
    with pytest.raises(_programs.NVRTCError) as info:
        _programs.build([instance], Target("sm_90"))
    message = str(info.value)
    assert "tiles.mine as mypkg::broken<int, 3>" in message and "(mypkg). This is a bug in mypkg" in message
    assert "N must be negative" in message and "N must be negative" in info.value.log
    assert "numba_tiles bug" not in message and instance.symbol in info.value.source


def test_a_per_entry_library_builds_its_programs_side_by_side_in_worker_processes(tmp_path, monkeypatch):
    """A library with a program per entry (MathDx's) builds a code library's programs at once, each
    NVRTC in a worker process; a failing one fails alone, naming itself, and later work goes on."""
    from numba.cuda import types

    from numba_tiles._library import Library
    from numba_tiles.extending import Instance

    monkeypatch.setenv("NUMBA_TILES_CACHE", "0")
    monkeypatch.setenv("NUMBA_TILES_COMPILE_JOBS", "2")

    from numba_tiles import _nvrtc_worker

    in_process, real = [], _nvrtc_worker.run  # (a worker process runs its own, unpatched)
    monkeypatch.setattr(_nvrtc_worker, "run", lambda *args: in_process.append(args) or real(*args))
    (tmp_path / "pair.cuh").write_text(
        "#pragma once\nnamespace mypkg {\ntemplate <int N>\n__device__ void scaled() { __nanosleep(N); }\n"
        'template <int N>\n__device__ void broken() { static_assert(N < 0, "mypkg: N must be negative"); }\n}\n'
    )
    library = Library(
        "mypkg",
        include_dirs=lambda: (tmp_path, *CUB.include_dirs()),
        versions=lambda: {"mypkg": "1"},
        blame="This is a bug in mypkg",
        per_entry=True,
    )
    header = library.header("pair.cuh")

    def instance(template, n):
        return Instance(
            intrinsic="mine",
            header=header,
            template=header.template(f"mypkg::{template}", N=n),
            result=types.none,
            params=(),
        )

    class CodeLibrary:  # what Numba lowers into (only its identity matters here)
        pass

    kernel, target = CodeLibrary(), Target("sm_90")
    good, bad = instance("scaled", 3), instance("broken", 5)
    objects = [_programs.for_call(i, target, kernel) for i in (good, bad)]
    before = tiles.cache.stats()["nvrtc"]
    assert isinstance(objects[0].data, bytes) and objects[0].data  # builds both
    assert tiles.cache.stats()["nvrtc"] == before + 1 and not in_process  # (a failure counts no NVRTC product)
    with pytest.raises(_programs.NVRTCError, match=r"(?s)tiles.mine as mypkg::broken<5>.*N must be negative"):
        objects[1].data
    later = [_programs.for_call(i, target, CodeLibrary()) for i in (instance("scaled", 7), good)]
    assert all(isinstance(o.data, bytes) and o.data for o in later)  # a new program, and the memo's
    assert len(in_process) == 1  # one program to build: no worker


def test_an_optional_argument_given_as_none_is_left_out():
    """num_valid=None, initial_value=None, temp=None...: the same instantiations as not passing them."""

    def given(x, out):
        i = cuda.grid(1)
        s = tiles.block_reduce(x[i], "+", block_dim=128, num_valid=None, temp=None)
        t = tiles.block_scan(x[i], "+", block_dim=128, initial_value=None, prefix=None)
        out[i] = s + t

    def left_out(x, out):
        i = cuda.grid(1)
        s = tiles.block_reduce(x[i], "+", block_dim=128)
        t = tiles.block_scan(x[i], "+", block_dim=128)
        out[i] = s + t

    ours = [
        tiles.compile(k, "void(float32[::1], float32[::1])", arch="sm_90", output="ltoir")[1:]
        for k in (given, left_out)
    ]
    assert ours[0] == ours[1] and ours[0]


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"])
def test_shared_memory_total_is_the_kernels_own_on_every_arch(arch):
    """The driver's sharedSizeBytes: the kernel's arrays, without the 1 KiB sm_90+ cubins put in the
    kernel's section (and mark with .nv.shared.reserved); sm_80-sm_89 cubins hold no such KiB."""
    from numba import float32

    def kernel(x, out):
        staged = cuda.shared.array(600, float32)
        staged[cuda.threadIdx.x] = x[cuda.threadIdx.x]
        cuda.syncthreads()
        out[cuda.threadIdx.x] = staged[599 - cuda.threadIdx.x]

    assert tiles.shared_memory(kernel, "void(float32[::1], float32[::1])", arch=arch)["total"] == 600 * 4


def test_background_nvrtc_work_is_done_before_any_exit_handler_runs(tmp_path):
    """A process that exits while a header is being precompiled waits for it before the atexit handlers
    (those registered later, as by the CUDA modules the thread loads, run first and may unload them)."""
    import subprocess
    import sys

    script = tmp_path / "exit_early.py"
    script.write_text(
        "import atexit\n"
        "from numba_tiles import _library, _pch\n"
        "from numba_tiles._target import Target\n"
        "_pch.start(_library.CUB, _library.CUB.program_options(Target('sm_90')))\n"
        "atexit.register(lambda: print('running at exit:', sum(t.is_alive() for t in _pch._background)))\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "running at exit: 0"


def test_user_functions_of_one_factory_or_lambdas_get_their_own_symbols():
    """A user op's C symbol: a lambda's name made an identifier (``<lambda>`` broke NVRTC's program), and
    two functions of one factory told apart by the values their closures hold (Numba freezes them into the
    code; one symbol for both linked one of them for both calls). Both ops in one kernel compile."""

    def scaled_max(k):
        return cuda.jit(device=True)(lambda a, b: max(a, b * k))

    twice, thrice = scaled_max(2), scaled_max(3)
    symbols = {_compile.function_symbol("op", f.py_func, "int32") for f in (twice, thrice, scaled_max(2))}
    assert len(symbols) == 2 and all(s.isidentifier() and "_lambda_" in s for s in symbols), symbols

    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        out[i] = tiles.block_reduce(x[i], twice, block_dim=128) + tiles.block_reduce(x[i], thrice, block_dim=128)

    assert tiles.compile(kernel, "void(int32[::1], int32[::1])", arch="sm_90")
