"""Device code that libmathdx generates: cuBLASDx's pipelined GEMM and cuSOLVERDx's solvers, as LTO-IR.

NVRTC programs of ours cannot reach either: cuBLASDx 0.4 (the headers we compile) has no pipelines, and
cuSOLVERDx's headers declare its kernels without defining them. libmathdx (the ``nvidia-libmathdx-cu13`` wheel:
cuBLASDx 0.7, cuSOLVERDx 0.5) generates the device functions of a description of a few operators, with the NVRTC
of our CUDA line (loaded first in its process, so that its LTO-IR is never newer than the nvJitLink that links it).

- A `Pipeline` (cuBLASDx, TMA loads + ``wgmma``, sm_90a): `traits` gives the generated functions' symbols and the
  sizes of the objects they work on (the device-pipeline object, the per-tile state, the accumulator, the shared
  buffer), which the entry points in ``lto_libs/libmathdx.cuh`` are instantiated with; `code` the LTO-IR defining
  those functions, linked beside the entry points.
- A `Solve` (cuSOLVERDx, one function for one size): `code` the LTO-IR of its block-wide ``extern "C"`` function,
  named `Solve.symbol`, which calls cuSOLVERDx's drivers in `solver_fatbin` (one fatbin for every solver, linked
  once a kernel).

Each is made in a worker process (this file run as a script: libmathdx takes 1 to 60 s on a 2-core machine, in
NVRTC, and a description's parts run side by side) and kept in the disk cache under a key of the description,
this toolchain and libmathdx's version.
"""

import ctypes
import dataclasses
import hashlib
import json
import pickle
import sys
import threading
import time

_LL = ctypes.c_longlong
_RUNTIME = -(2**63)  # LIBMATHDX_RUNTIME: an extent or stride known only when the kernel runs
_PRECISION = {"bf16": 2, "fp16": 3, "tf32": 4, "float32": 5}  # commondxPrecision
_VALUE = {"bf16": 4, "fp16": 7, "tf32": 10, "float32": 12}  # commondxValueType (real; tf32: 32-bit items)
_OPERATOR = dict(FUNCTION=0, SIZE=1, TYPE=2, PRECISION=3, SM=4, EXECUTION=5, BLOCK_DIM=6, API=9, ARRANGEMENT=10)
_OPERATOR.update(
    ALIGNMENT=11, STATIC_BLOCK_DIM=12, ENABLE_INPUT_STREAMING=13, WITH_PIPELINE=14
)  # (cublasdxOperatorType)
_COL, _ROW, _GMEM = 0, 1, 2
_FUNCTION = dict(EXECUTE=0, COPY=1, CREATE=11, DESTROY=12, FINISH_ACCUMULATION=15)
_PIPELINE_TRAIT = dict(STORAGE_BYTES=0, STORAGE_ALIGNMENT_BYTES=1, BUFFER_SIZE=2, BUFFER_ALIGNMENT_BYTES=3)
_CODE_TARGET_SM, _CODE_EXTRA_NVRTC_ARGS = 1, 4
SM = 900  # cuBLASDx's pipelines are Hopper's: TMA and wgmma, arch-specific (sm_90a) code


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """One pipelined GEMM: C tiles of ``m`` x ``n``, K-steps of ``k``, A and B of ``precision`` ("bf16", "fp16"
    or "tf32": float32 items) accumulated in float32 (copied as float32 into shared memory, whatever C's
    dtype: lto_libs/libmathdx.cuh stores C); A and B row- or column-major in global memory; ``threads`` a
    block; ``stages`` K-steps of A and B in flight."""

    m: int
    n: int
    k: int
    precision: str
    row_a: bool
    row_b: bool
    threads: int
    stages: int

    def key(self):
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @property
    def arch(self):
        return f"sm_{SM // 10}a"

    def title(self):
        p = self
        return f"tiles.Matmul.tile's pipeline {p.m}x{p.n}x{p.k} ({p.precision}, {p.stages} stages, {p.threads} threads)"


@dataclasses.dataclass(frozen=True)
class Solve:
    """One cuSOLVERDx function (``function``: a ``cusolverdxFunction`` number, ``name`` its name) for matrices of
    ``size`` (M, N, K: K right-hand sides) of ``precision`` ("float32", "float64"), real or ``complex``, in shared
    memory with compile-time leading dimensions (``leading``: lda and ldb, or () for the dense ones); ``fill`` the
    triangle it reads (``cusolverdxFillMode``, or None where the function has none); ``arrangement`` of A and B
    (``cusolverdxArrangement``: 0 column-, 1 row-major); ``batches`` problems a call, by a block of ``threads``; for
    ``sm`` (900: sm_90)."""

    function: int
    name: str
    size: tuple
    precision: str
    complex: bool
    fill: int | None
    arrangement: tuple
    batches: int
    threads: int
    sm: int
    leading: tuple = ()

    def key(self):
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @property
    def arch(self):
        return f"sm_{self.sm // 10}"

    @property
    def symbol(self):
        """The name of its generated function: ours, so that a kernel's call is declared before it is generated."""
        return "numba_tiles_solver_" + hashlib.sha256(self.key().encode()).hexdigest()[:20]

    def title(self):
        m, n, k = self.size
        return f"tiles.Solver's {self.name} {m}x{n}x{k} ({self.precision}, {self.threads} threads)"


_SOLVER_OPERATOR = dict(
    SIZE=0, TYPE=1, PRECISION=2, SM=3, EXECUTION=4, BLOCK_DIM=5, API=6, FUNCTION=7, ARRANGEMENT=8, FILL_MODE=9
)
_SOLVER_OPERATOR.update(LEADING_DIMENSION=13, BATCHES_PER_BLOCK=14)  # (cusolverdxOperatorType)
_SOLVER_PRECISION = {"float32": 5, "float64": 6}  # commondxPrecision

# ---- in the worker process ------------------------------------------------------------------------


class _Lib:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        self.lib.commondxStatusToStr.restype = ctypes.c_char_p

    def __call__(self, name, *args):
        status = getattr(self.lib, name)(*args)
        if status != 0:
            size = ctypes.c_size_t()
            text = ""
            if self.lib.commondxGetLastErrorStrSize(ctypes.byref(size)) == 0:
                code, buffer = ctypes.c_int(), ctypes.create_string_buffer(size.value)
                self.lib.commondxGetLastErrorStr(ctypes.byref(code), size, buffer)
                text = buffer.value.decode(errors="replace")
            raise RuntimeError(f"libmathdx {name}: {self.lib.commondxStatusToStr(status).decode()} {text}")

    def out(self, name, *args):
        value = _LL()
        self(name, *args, ctypes.byref(value))
        return value.value


def _int64s(values):
    return (_LL * len(values))(*values)


def _describe(lib, p):
    """The libmathdx handles of ``p``: its descriptor, pipelines and tensors, and its device functions."""
    h = lib.out("cublasdxCreateDescriptor")
    for name, value in (
        ("API", 2),
        ("FUNCTION", 0),
        ("EXECUTION", 1),
        ("TYPE", 0),
        ("SIZE", [p.m, p.n, p.k]),
        ("PRECISION", [_PRECISION[p.precision]] * 2 + [_PRECISION["float32"]]),
        ("SM", [SM, 1]),
        ("BLOCK_DIM", [p.threads, 1, 1]),
        ("ARRANGEMENT", [_ROW if p.row_a else _COL, _ROW if p.row_b else _COL, _ROW]),
        ("ALIGNMENT", [16, 16, 16]),
        ("WITH_PIPELINE", 1),
        ("STATIC_BLOCK_DIM", 1),
        ("ENABLE_INPUT_STREAMING", 1),
    ):
        if isinstance(value, int):
            lib("cublasdxSetOperatorInt64", _LL(h), _OPERATOR[name], _LL(value))
        else:
            lib("cublasdxSetOperatorInt64s", _LL(h), _OPERATOR[name], ctypes.c_size_t(len(value)), _int64s(value))
    value = _VALUE[p.precision]

    def global_matrix(row):  # run-time extents and leading dimension
        stride = [_RUNTIME, 1] if row else [1, _RUNTIME]
        return lib.out(
            "cublasdxCreateTensorStrided", _GMEM, value, None, _LL(2), _int64s([_RUNTIME] * 2), _int64s(stride)
        )

    a, b = global_matrix(p.row_a), global_matrix(p.row_b)
    device = lib.out("cublasdxCreateDevicePipeline", _LL(h), 0, _LL(p.stages), 1, _LL(a), _LL(b))
    tile = lib.out("cublasdxCreateTilePipeline", _LL(h), 0, _LL(device))
    accumulator = lib.out("cublasdxCreateTensor", _LL(h), 10)  # SUGGESTED_ACCUMULATOR_C
    c32 = lib.out("cublasdxCreateTensor", _LL(h), 9)  # GMEM_C: float32, run-time leading dimension
    lib("cublasdxSetTensorOptionInt64", _LL(c32), 0, _LL(16))  # 16-byte aligned rows: vector stores
    tensors = [accumulator, c32]

    def function(kind, tensors=(), pipelines=()):
        return lib.out(
            "cublasdxCreateDeviceFunctionWithPipelines",
            _LL(h),
            _FUNCTION[kind],
            ctypes.c_size_t(len(tensors)),
            _int64s(tensors) if tensors else None,
            ctypes.c_size_t(len(pipelines)),
            _int64s(pipelines),
        )

    functions = {
        "device_create": function("CREATE", pipelines=[device]),
        "tile_create": function("CREATE", pipelines=[tile]),
        "tile_destroy": function("DESTROY", pipelines=[tile]),
        "accumulator_create": function("CREATE", [accumulator], [tile]),
        "accumulator_destroy": function("DESTROY", [accumulator]),
        "execute": function("EXECUTE", [accumulator], [tile]),
        "finish": function("FINISH_ACCUMULATION", [accumulator]),
        "copy_f32": function("COPY", [accumulator, c32]),
    }
    return (device, tile), tensors, functions


def _symbol(lib, function):
    size = ctypes.c_size_t()
    lib("cublasdxGetDeviceFunctionTraitStrSize", _LL(function), 1, ctypes.byref(size))  # TRAIT_SYMBOL
    buffer = ctypes.create_string_buffer(size.value)
    lib("cublasdxGetDeviceFunctionTraitStr", _LL(function), 1, size, buffer)
    return buffer.value.decode()


def _ltoir(lib, functions):
    code = lib.out("commondxCreateCode")
    lib("commondxSetCodeOptionInt64s", _LL(code), _CODE_TARGET_SM, ctypes.c_size_t(2), _int64s([SM, 1]))
    lib("commondxSetCodeOptionStr", _LL(code), _CODE_EXTRA_NVRTC_ARGS, b"-gen-opt-lto")
    lib("cublasdxFinalizeDeviceFunctions", _LL(code), ctypes.c_size_t(len(functions)), _int64s(functions))
    number = ctypes.c_size_t()
    lib("commondxGetCodeNumLTOIRs", _LL(code), ctypes.byref(number))
    sizes = (ctypes.c_size_t * number.value)()
    lib("commondxGetCodeLTOIRSizes", _LL(code), number, sizes)
    buffers = [ctypes.create_string_buffer(size) for size in sizes]
    lib("commondxGetCodeLTOIRs", _LL(code), number, (ctypes.c_void_p * number.value)(*map(ctypes.addressof, buffers)))
    lib("commondxDestroyCode", _LL(code))
    return [buffer.raw for buffer in buffers]


def _solver(lib, s, part):
    """``part`` of the `Solve` ``s``: "code" (its LTO-IR) or "fatbin" (cuSOLVERDx's drivers, the same for all)."""
    h = lib.out("cusolverdxCreateDescriptor")
    operators = dict(
        SIZE=list(s.size),
        TYPE=int(s.complex),
        PRECISION=_SOLVER_PRECISION[s.precision],
        SM=s.sm,
        EXECUTION=1,  # block
        BLOCK_DIM=[s.threads, 1, 1],
        API=0,  # shared memory, compile-time leading dimensions
        FUNCTION=s.function,
        ARRANGEMENT=list(s.arrangement),
        BATCHES_PER_BLOCK=s.batches,
    )
    if s.fill is not None:
        operators["FILL_MODE"] = s.fill
    if s.leading:
        operators["LEADING_DIMENSION"] = list(s.leading)
    for name, value in operators.items():
        if isinstance(value, int):
            lib("cusolverdxSetOperatorInt64", _LL(h), _SOLVER_OPERATOR[name], _LL(value))
        else:
            lib(
                "cusolverdxSetOperatorInt64s",
                _LL(h),
                _SOLVER_OPERATOR[name],
                ctypes.c_size_t(len(value)),
                _int64s(value),
            )
    lib("cusolverdxSetOptionStr", _LL(h), 0, s.symbol.encode())  # COMMONDX_OPTION_SYMBOL_NAME
    what = "LTOIR" if part == "code" else "UniversalFATBIN"
    size = ctypes.c_size_t()
    lib(f"cusolverdxGet{what}Size", _LL(h), ctypes.byref(size))
    buffer = ctypes.create_string_buffer(size.value)
    lib(f"cusolverdxGet{what}", _LL(h), size, buffer)
    lib("cusolverdxDestroyDescriptor", _LL(h))
    return buffer.raw


def generate(description, part, libmathdx, nvrtc):
    """In a worker: ``part`` of ``description``: a `Pipeline`'s "traits" (symbols and sizes) or "code" (symbols
    and LTO-IR), a `Solve`'s "code" or "fatbin" (bytes)."""
    for path in nvrtc:  # our NVRTC, so that libmathdx compiles with it and not another it might find
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    lib = _Lib(libmathdx)
    if isinstance(description, Solve):
        return _solver(lib, description, part)
    pipeline = description
    pipelines, tensors, functions = _describe(lib, pipeline)
    found = {"symbols": {name: _symbol(lib, f) for name, f in functions.items()}}
    if part == "code":
        found["ltoir"] = _ltoir(lib, list(dict.fromkeys(functions.values())))
        return found
    lib("cublasdxFinalizePipelines", ctypes.c_size_t(2), _int64s(pipelines))
    lib("cublasdxFinalizeTensors", ctypes.c_size_t(len(tensors)), _int64s(tensors))
    device, tile = pipelines
    for name, handle in (("device", device), ("tile", tile)):
        for trait, index in (("bytes", "STORAGE_BYTES"), ("align", "STORAGE_ALIGNMENT_BYTES")):
            found[f"{name}_{trait}"] = lib.out("cublasdxGetPipelineTraitInt64", _LL(handle), _PIPELINE_TRAIT[index])
    found["buffer_bytes"] = lib.out("cublasdxGetPipelineTraitInt64", _LL(device), _PIPELINE_TRAIT["BUFFER_SIZE"])
    found["buffer_align"] = lib.out(
        "cublasdxGetPipelineTraitInt64", _LL(device), _PIPELINE_TRAIT["BUFFER_ALIGNMENT_BYTES"]
    )
    found["accumulator_bytes"] = lib.out("cublasdxGetTensorTraitInt64", _LL(tensors[0]), 0)
    found["accumulator_align"] = lib.out("cublasdxGetTensorTraitInt64", _LL(tensors[0]), 1)
    return found


def main():
    del sys.path[0]  # this file's directory: its module names are numba_tiles', not top-level ones
    kind, fields, part, libmathdx, nvrtc = pickle.load(sys.stdin.buffer)
    try:
        description = {"Pipeline": Pipeline, "Solve": Solve}[kind](**fields)
        result = "ok", generate(description, part, libmathdx, nvrtc)
    except Exception as exc:
        result = "error", str(exc)
    pickle.dump(result, sys.stdout.buffer)


# ---- in the process that compiles -----------------------------------------------------------------

_lock = threading.Lock()
_made = {}  # (description, part) → a Future of its result
_announced = set()  # the descriptions whose generation this process has told the user of


def _key_parts(description, part):
    from . import _toolchain, cache

    return cache.components(
        description.key(),
        output=f"libmathdx-{part}",
        target={"arch": description.arch},
        options={"nvrtc": ["-gen-opt-lto"]},
        versions={**_toolchain.versions(), "libmathdx": _toolchain.libmathdx_version()},
    )


def _make(description, part):
    """``part`` of ``description`` from the disk cache, else from a worker process (then stored)."""
    from . import _nvrtc_worker, _stats, _toolchain, cache

    def make():
        if part != "fatbin":  # (a copy out of libmathdx: no time to announce)
            _announce(description)
        request = (
            type(description).__name__,
            dataclasses.asdict(description),
            part,
            str(_toolchain.libmathdx_path()),
            [str(p) for p in _toolchain.nvrtc_libraries()],
        )
        start = time.perf_counter()
        status, found = _nvrtc_worker.ask(__file__, request, "libmathdx")
        if status != "ok":
            raise RuntimeError(found)
        _stats.count("libmathdx")
        _stats.count("libmathdx_seconds", time.perf_counter() - start)
        return pickle.dumps(found)

    return pickle.loads(cache.cached(_key_parts(description, part), make))


def _announce(description):
    """One notice a description, as the first of its parts (made side by side) starts."""
    from ._notices import say

    with _lock:
        if description in _announced:
            return
        _announced.add(description)
    slow = "15-60 s" if isinstance(description, Pipeline) else "a few seconds"
    say(
        f"generating {description.title()} with libmathdx for {description.arch} (its NVRTC, usually {slow} the "
        "first time; cached afterwards)"
    )


def _future(description, part):
    """The Future of ``part`` of ``description``, made once a process in a daemon thread (a process that ends
    meanwhile, say one whose description compiled ahead, does not wait for it; the worker process runs on)."""
    from concurrent.futures import Future

    with _lock:
        if (description, part) not in _made:
            future = Future()
            future.started = time.perf_counter()

            def run():
                try:
                    future.set_result(_make(description, part))
                except BaseException as exc:  # (the caller's result() raises it)
                    future.set_exception(exc)

            threading.Thread(target=run, daemon=True, name="numba_tiles libmathdx").start()
            _made[description, part] = future
        return _made[description, part]


def _result(description, part):
    """``part`` of ``description``, saying so on stderr when it waits for one that started a while ago (in the
    background, as a description compiles ahead), and showing the time its generation has taken (`_notices.elapsed`)."""
    from ._notices import elapsed, say

    future = _future(description, part)
    if future.done():
        return future.result()
    waited = time.perf_counter() - future.started
    if waited >= 1:
        say(
            f"waiting for {description.title()}, which libmathdx has been generating in the background for "
            f"{waited:.0f} s"
        )
    # (the time shows once it is being generated, announced: not while it loads from the disk cache)
    with elapsed("libmathdx has been generating it", since=future.started, when=lambda: description in _announced):
        return future.result()


def traits(pipeline):
    """The symbols and sizes of ``pipeline`` (its code starts being made beside them, for the link)."""
    _future(pipeline, "code")
    return _result(pipeline, "traits")


def code(pipeline):
    """The LTO-IR defining ``pipeline``'s functions (the symbols of its `traits`)."""
    found = _result(pipeline, "code")
    if found["symbols"] != traits(pipeline)["symbols"]:
        raise RuntimeError(f"libmathdx named {pipeline}'s functions differently in two processes")
    (ltoir,) = found["ltoir"]
    from . import _programs

    _programs.arch_specific.add(ltoir)  # (sm_90a code, which `compile` names)
    return ltoir


def start_solver(solve):
    """Start generating ``solve``'s code in the background (a description made at import: ready by its kernel's
    link)."""
    _future(solve, "code")


def solver_code(solve):
    """The LTO-IR of ``solve``'s function, named ``solve.symbol``."""
    return _result(solve, "code")


# Any description gives cuSOLVERDx's fatbin: libmathdx copies it out, compiling nothing.
_UNIVERSAL = Solve(2, "potrf", (1, 1, 1), "float32", False, 1, (0, 0), 1, 32, 800)


def solver_fatbin():
    """cuSOLVERDx's drivers for every arch, which every solver's code calls: one fatbin, keyed by libmathdx's
    version."""
    return _result(_UNIVERSAL, "fatbin")


if __name__ == "__main__":
    main()
