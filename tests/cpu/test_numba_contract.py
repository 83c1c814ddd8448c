"""One test per numba-cuda touchpoint of numba_tiles._numba: an upgrade that breaks one fails here, by name."""

import numpy as np
import pytest
from numba import cuda

import numba_tiles as tiles
from numba_tiles import _compile, _numba

SIG = "void(float32[::1], float32[::1])"


def reduce_kernel(x, out):
    i = cuda.grid(1)
    out[i] = tiles.block_reduce(x[i], "max", block_dim=96)


def test_tiles_error_is_numba_cudas_typing_error_and_reported_by_its_typing():
    from numba.core.errors import TypingError as NumbaTypingError
    from numba.cuda.core.errors import TypingError

    assert issubclass(tiles.TilesError, TypingError)

    def bad(x, out):
        i = cuda.grid(1)
        out[i] = tiles.block_reduce(x[i], "&", block_dim=96)

    with pytest.raises(NumbaTypingError, match=r"TilesError: tiles.block_reduce: op '&' needs an integer dtype"):
        tiles.compile(bad, SIG)


def test_register_types_and_lowers_a_call_to_the_entry_point():
    """Numba's module calls the entry point (it does not link alone), which our object defines."""
    from cuda.core import Linker, LinkerOptions, ObjectCode

    with _compile.recording() as lowered:
        modules = tiles.compile(reduce_kernel, SIG, output="ltoir")
    (instance, _), = lowered
    assert len(modules) == 2
    options = LinkerOptions(arch="sm_90", link_time_optimization=True)
    with pytest.raises(Exception, match=instance.symbol):
        Linker(ObjectCode.from_ltoir(modules[0]), options=options).link("cubin")
    assert Linker(*map(ObjectCode.from_ltoir, modules), options=options).link("cubin").code[:4] == b"\x7fELF"


def test_target_flags_carry_the_arch_and_line_info():
    with _compile.recording() as lowered:
        tiles.compile(reduce_kernel, SIG, arch="sm_80", output="ltoir", lineinfo=True)
    (_, target), = lowered
    assert (target.arch, target.lineinfo, target.debug) == ("sm_80", True, False)


def test_lazy_ltoir_is_read_only_when_linked():
    made = []

    def make():
        made.append(1)
        return b"bytes"

    code = _numba.lazy_ltoir("x.ltoir", make)
    assert isinstance(code, cuda.LTOIR) and code.name == "x.ltoir" and not made
    assert code.data == b"bytes" and made == [1]


def test_compile_kernel_and_device_ltoir():
    modules = _numba.compile_kernel_ltoir(reduce_kernel, SIG, (9, 0))
    assert all(isinstance(m, bytes) and m for m in modules)

    def twice(a, b):
        return a + 2 * b

    from numba import float32

    code = _numba.compile_device_ltoir(twice, float32(float32, float32), "numba_tiles_test_twice", (9, 0))
    assert isinstance(code, bytes) and code


@pytest.mark.parametrize("mode", ["lineinfo", "debug"])
def test_numba_cudas_line_info_links_with_nvrtc_ltoir(mode):
    """link_line_info_with_nvrtc (applied at import): numba-cuda's LTO-IR with line tables links with
    any NVRTC LTO-IR (its module flags' merge behavior is NVRTC's), with no intrinsic involved."""
    from cuda.core import Linker, LinkerOptions, ObjectCode, Program, ProgramOptions

    triple = cuda.declare_device("numba_tiles_test_triple", "int32(int32)")

    def kernel(x):
        x[0] = triple(x[0])

    ours = Program('extern "C" __device__ int numba_tiles_test_triple(int* r, int x) { *r = 3 * x; return 0; }',
                   "c++", options=ProgramOptions(arch="sm_90", link_time_optimization=True,
                                                 relocatable_device_code=True)).compile("ltoir").code
    numbas = _numba.compile_kernel_ltoir(kernel, "void(int32[::1])", (9, 0), **{mode: True})[0]
    cubin = Linker(ObjectCode.from_ltoir(numbas), ObjectCode.from_ltoir(ours),
                   options=LinkerOptions(arch="sm_90", link_time_optimization=True, **{mode: True})).link("cubin")
    assert cubin.code[:4] == b"\x7fELF"


def test_python_function_of_a_device_function():
    @cuda.jit(device=True)
    def op(a, b):
        return a

    assert _numba.python_function(op) is op.py_func
    assert _numba.python_function(np.add) is None and _numba.python_function("+") is None


def test_constant_writes_half_types_as_bit_patterns():
    from numba.cuda import types

    assert _numba._half_bits(types.float16, 1.0) == 0x3C00
    assert _numba._half_bits(types.bfloat16, 1.0) == 0x3F80
    assert _numba._half_bits(types.float16, np.inf) == 0x7C00
