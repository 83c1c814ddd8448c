"""One test per numba-cuda touchpoint of numba_tiles._backends (numba_cuda, numba_cuda_compile): an upgrade that
breaks one fails here, by name."""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles
from numba_tiles import _errors, _programs
from numba_tiles._backends import numba_cuda, numba_cuda_compile, simulated

SIG = "void(float32[::1], float32[::1])"


def reduce_kernel(x, out):
    i = cuda.grid(1)
    out[i] = tiles.block_reduce(x[i], "max", block_dim=96)


def test_our_error_leaves_numba_cudas_compiler_unwrapped_with_the_calls_location():
    """register: a TilesError from typing is not one of Numba's errors, so numba-cuda's typing (get_call_type,
    its pipeline) lets it out as it is, and the template adds the call's file, line and source after it."""
    from numba.core.errors import NumbaError
    from numba.cuda.core.errors import NumbaError as CudaNumbaError

    assert not issubclass(tiles.TilesError, (NumbaError, CudaNumbaError))

    def bad(x, out):
        i = cuda.grid(1)
        out[i] = tiles.block_reduce(x[i], "&", block_dim=96)

    with pytest.raises(tiles.TilesError) as info:
        tiles.compile(bad, SIG)
    line = bad.__code__.co_firstlineno + 2
    assert str(info.value).splitlines() == [
        "tiles.block_reduce: op '&' needs an integer dtype, got float32. Fix: use '+', '*', 'min' or 'max' for "
        "floating-point values.",
        "",
        f'File "{__file__}", line {line}, in '
        "test_our_error_leaves_numba_cudas_compiler_unwrapped_with_the_calls_location.<locals>.bad:",
        '    out[i] = tiles.block_reduce(x[i], "&", block_dim=96)',
    ]


BLOCK = 128


def test_typing_call_finds_the_call_and_what_the_ir_knows_of_its_arguments():
    """typing_call, from a typing template: the call's location, each argument's constant value (a literal, a
    global, a closure variable) or local array length (constant N, int or 1-tuple); nothing for run-time values.
    Outside typing there is no call."""
    from numba import float32

    seen = []

    class Probed(tiles.TilesError):
        pass

    def probe(*args, **kwargs):
        pass

    def resolve(args, kws, origins, debug):
        seen.append(origins)
        raise Probed("probe: typed")

    import inspect

    numba_cuda.register(probe, "probe", inspect.signature(probe), resolve, lambda call: None)
    closure = (64, 2)

    def kernel(x, n):
        items = cuda.local.array(4, float32)
        three = cuda.local.array((3,), float32)
        probe(items, three, 7, BLOCK, closure, x, n, kw=BLOCK, other=n + 1)

    with pytest.raises(Probed) as info:
        tiles.compile(kernel, "void(float32[::1], int64)")
    ((positional, keywords),) = seen
    assert [(o.value, o.length) for o in positional] == [
        (_errors.UNKNOWN, 4),
        (_errors.UNKNOWN, 3),
        (7, None),
        (BLOCK, None),
        (closure, None),
        (_errors.UNKNOWN, None),
        (_errors.UNKNOWN, None),
    ]
    assert keywords == {"kw": _errors.Origin(value=BLOCK), "other": _errors.Origin()}
    assert str(info.value).splitlines()[2:] == [
        f'File "{__file__}", line {kernel.__code__.co_firstlineno + 3}, in '
        "test_typing_call_finds_the_call_and_what_the_ir_knows_of_its_arguments.<locals>.kernel:",
        "    probe(items, three, 7, BLOCK, closure, x, n, kw=BLOCK, other=n + 1)",
    ]
    assert numba_cuda.typing_call(probe) is None


def test_is_cuda_module():
    assert simulated.is_cuda_module(cuda) and not simulated.is_cuda_module(np)


def test_our_performance_warning_is_the_one_numba_cudas_launches_warn_with():
    import inspect

    from numba.cuda import dispatcher
    from numba.cuda.core import errors

    assert numba_cuda.NumbaPerformanceWarning is errors.NumbaPerformanceWarning
    assert "errors.NumbaPerformanceWarning(" in inspect.getsource(dispatcher)  # (its grid-size warning)


def test_register_types_and_lowers_a_call_to_the_entry_point():
    """Numba's module calls the entry point (it does not link alone), which our object defines."""
    from cuda.core import Linker, LinkerOptions, ObjectCode

    with _programs.recording() as lowered:
        modules = tiles.compile(reduce_kernel, SIG, output="ltoir")
    ((instance, _),) = lowered
    assert len(modules) == 2
    options = LinkerOptions(arch="sm_90", link_time_optimization=True)
    with pytest.raises(Exception, match=instance.symbol):
        Linker(ObjectCode.from_ltoir(modules[0]), options=options).link("cubin")
    assert Linker(*map(ObjectCode.from_ltoir, modules), options=options).link("cubin").code[:4] == b"\x7fELF"


def test_target_flags_carry_the_arch_and_line_info():
    with _programs.recording() as lowered:
        tiles.compile(reduce_kernel, SIG, arch="sm_80", output="ltoir", lineinfo=True)
    ((_, target),) = lowered
    assert (target.arch, target.lineinfo) == ("sm_80", True)


def test_lazy_ltoir_is_read_only_when_linked():
    made = []

    def make():
        made.append(1)
        return b"bytes"

    code = numba_cuda_compile.lazy_ltoir("x.ltoir", make)
    assert isinstance(code, cuda.LTOIR) and code.name == "x.ltoir" and not made
    assert code.data == b"bytes" and made == [1]


def test_compile_kernel_and_device_ltoir():
    modules = numba_cuda_compile.compile_kernel_ltoir(reduce_kernel, SIG, (9, 0))
    assert all(isinstance(m, bytes) and m for m in modules)

    def twice(a, b):
        return a + 2 * b

    from numba import float32

    code = numba_cuda.compile_device_ltoir(twice, float32(float32, float32), "numba_tiles_test_twice", (9, 0))
    assert isinstance(code, bytes) and code


def test_compile_all_tells_its_library_whether_the_kernel_syncs_its_grid():
    """compile_kernel_ltoir: numba-cuda's compile_all makes its code library by _compile_pyfunc_with_fixup, whose
    use_cooperative says a kernel syncs its grid; then the modules end with CUDA's device runtime, else not."""

    def synced(x, out):
        cuda.cg.this_grid().sync()
        out[0] = x[0]

    modules = numba_cuda_compile.compile_kernel_ltoir(synced, SIG, (9, 0))
    assert isinstance(modules[-1], numba_cuda_compile.Library) and modules[-1][:8] == b"!<arch>\n"
    assert not any(
        isinstance(m, numba_cuda_compile.Library)
        for m in numba_cuda_compile.compile_kernel_ltoir(reduce_kernel, SIG, (9, 0))
    )


@pytest.mark.parametrize("mode", ["lineinfo", "debug"])
def test_numba_cudas_line_info_links_with_nvrtc_ltoir(mode):
    """link_line_info_with_nvrtc (applied at import): numba-cuda's LTO-IR with line tables links with
    any NVRTC LTO-IR (its module flags' merge behavior is NVRTC's), with no intrinsic involved."""
    from cuda.core import Linker, LinkerOptions, ObjectCode, Program, ProgramOptions

    triple = cuda.declare_device("numba_tiles_test_triple", "int32(int32)")

    def kernel(x):
        x[0] = triple(x[0])

    ours = (
        Program(
            'extern "C" __device__ int numba_tiles_test_triple(int* r, int x) { *r = 3 * x; return 0; }',
            "c++",
            options=ProgramOptions(arch="sm_90", link_time_optimization=True, relocatable_device_code=True),
        )
        .compile("ltoir")
        .code
    )
    numbas = numba_cuda_compile.compile_kernel_ltoir(kernel, "void(int32[::1])", (9, 0), **{mode: True})[0]
    cubin = Linker(
        ObjectCode.from_ltoir(numbas),
        ObjectCode.from_ltoir(ours),
        options=LinkerOptions(arch="sm_90", link_time_optimization=True, **{mode: True}),
    ).link("cubin")
    assert cubin.code[:4] == b"\x7fELF"


def test_python_function_of_a_device_function():
    @cuda.jit(device=True)
    def op(a, b):
        return a

    assert numba_cuda.python_function(op) is op.py_func
    assert numba_cuda.python_function(np.add) is None and numba_cuda.python_function("+") is None


def test_constant_writes_half_types_as_bit_patterns():
    from numba.cuda import types

    from numba_tiles._dtypes import half_bits

    assert half_bits(types.float16, 1.0) == 0x3C00
    assert half_bits(types.bfloat16, 1.0) == 0x3F80
    assert half_bits(types.float16, np.inf) == 0x7C00


def test_device_functions_compile_for_the_kernels_arch_without_a_gpu():
    """numba-cuda's compile_device asks its module's get_current_device; while we compile, that answers the
    kernel's cc, and the versions made are kept apart from the dispatcher's own table."""
    from numba.cuda import dispatcher

    @cuda.jit(device=True)
    def helper(v):
        return tiles.block_reduce(v, "max", block_dim=96)

    def kernel(x, out):
        i = cuda.grid(1)
        out[i] = helper(x[i])

    original = dispatcher.get_current_device
    for arch in ("sm_80", "sm_90"):
        assert tiles.compile(kernel, SIG, arch=arch)[:4] == b"\x7fELF"
    assert dispatcher.get_current_device is original and "overloads" not in vars(dispatcher.CUDADispatcher)
    assert (8, 0) in helper._numba_tiles_overloads  # (never a GPU's own: CPU, H100 and H200 machines)


def test_cached_kernel_libraries_leave_our_ltoir_out_and_keep_their_cubin():
    """CUDACodeLibrary._reduce_states (what cache=True pickles) with our LTO-IR linked and the cubin made:
    the state keeps the cubin, not our objects; any other linking file still refuses, as numba-cuda does."""
    from numba.cuda.codegen import JITCUDACodegen

    def library(*files):
        lib = JITCUDACodegen("test").create_library("kernel", entry_name="kernel")
        lib.add_ir_module(__import__("llvmlite").ir.Module("kernel"))
        for f in files:
            lib.add_linking_file(f)
        lib.finalize()
        lib._cubin_cache[(9, 0)] = b"\x7fELF cubin"
        return lib

    ours = numba_cuda_compile.ltoir("numba_tiles-test.ltoir", b"ltoir")
    state = library(ours)._reduce_states()
    assert state["cubin_cache"] == {(9, 0): b"\x7fELF cubin"} and not state["nrt"]
    with pytest.raises(RuntimeError, match="Cannot pickle CUDACodeLibrary with linking files"):
        library(ours, cuda.LTOIR(b"someone else's", name="other.ltoir"))._reduce_states()


def test_numba_cudas_link_of_our_ltoir_goes_through_the_disk_cache(tmp_path, monkeypatch):
    """link_through (applied at import): numba-cuda's _Linker, as a kernel's first launch drives it, links
    Numba's LTO-IR with ours once; a second link of the same modules takes the cubin from the disk cache.
    A link without our objects stays numba-cuda's."""
    from numba.cuda.cudadrv import driver

    monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path))
    numbas, *intrinsics = tiles.compile(reduce_kernel, SIG, output="ltoir")

    def first_launch_link(*codes):
        linker = driver._Linker(cc=(9, 0), lto=True)
        linker.add_ltoir(numbas)
        for code in codes:
            linker.add_file_guess_ext(code)
        before = tiles.cache.stats()
        cubin = bytes(linker.complete().code)
        after = tiles.cache.stats()
        assert isinstance(linker.info_log, str)
        return cubin, {k: after[k] - before[k] for k in ("links", "hits")}

    ours = [numba_cuda_compile.ltoir(f"numba_tiles-contract-{i}.ltoir", m) for i, m in enumerate(intrinsics)]
    cold, warm = first_launch_link(*ours), first_launch_link(*ours)
    assert cold[1] == {"links": 1, "hits": 0} and warm[1] == {"links": 0, "hits": 1}
    assert cold[0] == warm[0] and cold[0][:4] == b"\x7fELF"
    theirs = first_launch_link(*(cuda.LTOIR(m, name=f"theirs-{i}.ltoir") for i, m in enumerate(intrinsics)))
    assert theirs[1] == {"links": 0, "hits": 0} and theirs[0][:4] == b"\x7fELF"


def test_cached_kernels_index_key_carries_our_stamp(monkeypatch):
    from numba.cuda.dispatcher import CUDACache

    class Codegen:
        def magic_tuple(self):
            return ("runtime", (9, 0))

    def kernel(x):
        pass

    key = CUDACache(kernel)._index_key(("float32[::1]",), Codegen())
    assert key[-1] == ("numba_tiles", _programs.kernel_cache_stamp())
    monkeypatch.setenv("NUMBA_TILES_DEBUG", "1")  # checks compiled in: another cubin, another key
    assert CUDACache(kernel)._index_key(("float32[::1]",), Codegen()) != key


def test_numba_cudas_extension_loader_imports_us_without_nvrtc_work():
    """Our numba_cuda_extensions entry point: numba-cuda's loader (run before a first kernel compile)
    imports numba_tiles, and that import starts no background NVRTC work."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom numba.cuda.core import entrypoints\nentrypoints.init_all()\n"
        "import numba_tiles._pch as c\nprint('numba_tiles' in sys.modules, len(c._background))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "0"], done.stdout + done.stderr
    assert numba_cuda_compile.EXTENSION_LOADER == "numba.cuda.core.entrypoints"
