"""The compilers numba_tiles works in, each behind one declared interface: a `Backend` (a module) that registers the
intrinsics, descriptions and handles with its compiler and lowers each call through a `Call`.

`numba_cuda` (numba-cuda, classic) and `mlir` (numba-cuda-mlir, its MLIR-based successor) implement both; the
spec mechanism (`numba_tiles._spec`) has one lowering loop over a `Call`, and registers with every backend
`registered` here. Faces, specs, C++ and cache never import a compiler: what they need of one is here.
"""

import typing

from . import mlir, numba_cuda

BACKENDS = (numba_cuda, mlir)


@typing.runtime_checkable
class Call(typing.Protocol):
    """One call of an intrinsic being lowered, as its compiler holds it (``Spec.lower`` walks its parameters)."""

    mlir: bool  # (numba-cuda-mlir compiles the user's functions the call links, `_compile.python_function`)

    def arguments(self) -> dict:
        """{parameter: numba.cuda type} of the intrinsic's parameters, ``Omitted(default)`` where not given."""

    def target(self) -> tuple:
        """(compute capability, line info) of the code being lowered."""

    def bound_threads(self, threads: int) -> None:
        """Compile the kernel for blocks of at most ``threads`` threads (its launch bounds)."""

    def code_library(self) -> object:
        """What the calls of one lowered function share (the programs they compile together)."""

    def link(self, code) -> None:
        """Link ``code`` (a ``numba.cuda.LTOIR``) into the function being lowered."""

    def link_arch_specific(self):
        """Link the kernel for its arch-specific target (its code issues sm_90a instructions); the plain arch a
        ``tiles.compile`` of it was asked for, where that is what it must link for (an error), else None."""

    def member(self, handle: str, member: str):
        """The value of member ``member`` of the handle argument ``handle``."""

    def callback(self, name: str, callback, omitted: bool):
        """The ``void*`` a `Callback` argument ``name`` passes (its extras; ``omitted``: none given)."""

    def constant(self, ty, value):
        """A constant of the numba.cuda type ``ty``."""

    def value(self, name: str, ty):
        """The argument ``name``'s value, as the entry point's type ``ty`` takes it."""

    def call_entry(self, symbol: str, passed, outputs, result):
        """Call ``extern "C" void symbol(passed..., outputs*...)`` and give the call's result."""


@typing.runtime_checkable
class Backend(typing.Protocol):
    """A compiler numba_tiles works in (a module: `numba_cuda`, `mlir`)."""

    Call: type  # its `Call`

    def available(self) -> bool:
        """Whether it compiles kernels in this process."""

    def register(self, func, name: str, pysig, resolve, lower) -> None:
        """Make ``func`` (the intrinsic ``name``, Python signature ``pysig``) callable in its kernels:
        ``resolve(args, kws, origins, debug)`` types a call, ``lower(call)`` lowers one (a `Call`)."""

    def register_description(self, cls, attribute) -> None:
        """Make module-level instances of ``cls`` compile-time objects in its kernels (`extending.description`)."""

    def register_handle(self, cls) -> None:
        """Make instances of ``cls`` kernel arguments (a `numba_cuda.Handle`: arrays typed by what made them)."""

    def is_kernel(self, value) -> bool:
        """Whether ``value`` is one of its kernels."""

    def launch_arguments(self, args) -> tuple:
        """``args`` as its kernels' launch takes them."""

    def python_function(self, value):
        """The Python function of one of its device functions, else None."""

    def compile_device_ltoir(self, pyfunc, signature, symbol: str, cc: tuple, fastmath: bool = False) -> bytes:
        """A device function's LTO-IR with C ABI under ``symbol``."""

    def resident_blocks(self, kernel, args, threads: int, nbytes: int) -> int:
        """How many blocks of ``kernel`` launched with ``args`` the current GPU runs at once."""

    def allow_dynamic_shared_memory(self, kernel, nbytes: int, args) -> int:
        """Let ``kernel``'s launches with ``args`` take ``nbytes`` of dynamic shared memory; the limit."""


def registered():
    """The backends that compile kernels in this process (none under Numba's simulator)."""
    return [backend for backend in BACKENDS if backend.available()]


def of_kernel(kernel):
    """The backend whose kernel ``kernel`` is (numba-cuda's, unless numba-cuda-mlir's)."""
    return mlir if mlir.is_kernel(kernel) else numba_cuda
