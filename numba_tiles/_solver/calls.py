"""What `Solver.execute` checks and instantiates: a call of the function libmathdx generates for the description and
the kernel's arch (``lto_libs/solver.cuh``), linked with its LTO-IR and cuSOLVERDx's fatbin."""

import functools

from numba import cuda
from numba.cuda import types

from .. import _compile, _libmathdx, _toolchain
from .. import extending as ext
from .._backends import numba_cuda_compile, simulated
from .._library import LIBMATHDX
from ..extending import Arg, Instance, Literal

HEADER = LIBMATHDX.header("solver.cuh")
OPERANDS = ("a", "b", "ipiv", "tau", "info")


def dtype_of(solver, operand):
    """The dtype an operand holds: the solver's for matrices and tau, int32 for ipiv and info."""
    return "int32" if operand in ("ipiv", "info") else solver.dtype


def check(name, solver, args):
    """Check that ``args`` give exactly the solver's operands, each an array of its dtype."""
    given = [p for p in OPERANDS if args.get(p) is not None]
    call = f"solver.execute({', '.join(p if i == 0 else f'{p}={p}' for i, p in enumerate(solver.operands))})"
    for operand in OPERANDS:
        wanted, found = operand in solver.operands, args.get(operand) is not None
        if wanted != found:
            raise ext.error(
                name,
                f"{solver.function} {'takes' if wanted else 'takes no'} {operand} (given: {', '.join(given)})",
                f"call {call}",
            )
        if not found:
            continue
        ty = args[operand]
        if not isinstance(ty, types.Array) or ty.ndim > 3:
            raise ext.error(name, f"{operand} must be an array, got {ty}", f"pass a shared array: {call}")
        dtype = dtype_of(solver, operand)
        if str(ty.dtype) != dtype:
            raise ext.error(
                name,
                f"{operand} holds {ty.dtype}; this solver's {operand} is {dtype}",
                f"allocate cuda.shared.array(solver.{operand}_size, {dtype})",
            )


def execute_rule(name, args):
    solver = args["mm"]
    check(name, solver, args)
    if simulated.simulator_enabled():  # (the simulator's twin solves; nothing is generated)
        return Instance(intrinsic=name, header=HEADER, template="", result=types.none, params=())
    generated(name, "tiles.Solver's code", _toolchain.libmathdx_path)  # (CUDA 12: refused here, with the fix)
    cc = _compile.typing_cc() or (9, 0)
    solve = solver._code(cc)
    cxx = {p: ext.named(name, "dtype", dtype_of(solver, p)).cxx for p in solver.operands}
    prelude = f'extern "C" __device__ void {solve.symbol}({", ".join(f"{cxx[p]}*" for p in solver.operands)});'
    items = ", ".join(str(solver.sizes[p]) for p in solver.operands)
    template = f"numba_tiles::solver_execute<&{solve.symbol}, {items}>"
    params = (Literal("names", f'"{", ".join(solver.operands)}"'), *(Arg(p, args[p]) for p in solver.operands))
    modules = (_code(solve), _fatbin())
    return Instance(
        intrinsic=name,
        header=HEADER,
        template=template,
        result=types.none,
        params=params,
        prelude=prelude,
        modules=modules,
        threads=solver.threads,
    )


def generated(name, what, make):
    """``make()`` (``what``), libmathdx's failures and absence turned into our errors."""
    try:
        return make()
    except FileNotFoundError as exc:
        raise ext.error(name, str(exc), "pip install 'numba-tiles[cu13]'") from None
    except RuntimeError as exc:
        raise ext.error(
            name,
            f"libmathdx cannot make {what}: {exc}",
            "change the size, batches_per_block or block_dim",
        ) from None


@functools.cache
def _code(solve):
    """The LTO-IR of ``solve``'s function, one object a process (each kernel that calls it links it once)."""
    return numba_cuda_compile.lazy_ltoir(
        f"{solve.symbol}.ltoir",
        lambda: generated("Solver.execute", f"{solve.title()} for {solve.arch}", lambda: _libmathdx.solver_code(solve)),
    )


@functools.cache
def _fatbin():
    """cuSOLVERDx's fatbin: one object a process, so that a kernel with several solvers links it once."""
    return numba_cuda_compile.lazy_ltoir(
        "numba_tiles-cusolverdx.fatbin",
        lambda: generated("Solver.execute", "cuSOLVERDx's fatbin", _libmathdx.solver_fatbin),
        cuda.Fatbin,
    )
