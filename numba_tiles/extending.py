"""Declare intrinsics of your own, over C++ your package ships: the API numba_tiles' built-ins use.

An intrinsic is a C++ template in a header of yours (over CUB/CCCL, with numba_tiles'
``common.cuh`` for ``array_ref``, ``storage_of`` and ``thread_rank``), a `library` that says
where that header is, and a Python declaration: `intrinsic` on a function whose signature and
docstring are the user's. ``consts`` names the compile-time parameters with their parsers
(`block_dim`, `positive_int`, `choice`, `flag`, ...); ``rule(name, args)`` turns the typed
arguments into an `Instance` (the template, instantiated, and the entry point's run-time
parameters); ``simulate(instance, args)`` is the twin that Numba's simulator runs; ``per_thread``
names the parameters that take a thread-local array of ``items_per_thread`` items. From that
spec come typing, lowering, NVRTC → LTO-IR, the disk cache (your headers' content in its key),
``tiles.compile``/``precompile``, ``tiles.shared_memory``/``temp_bytes``/``temp=`` and the
simulator, exactly as for ``tiles.block_reduce`` (declared in ``numba_tiles/block.py`` with the
names below). A family whose calls share compile-time arguments is a `description` class whose
`method`\\ s are intrinsics bound to each instance (as ``tiles.Matmul``'s). Errors in a rule are
`error(name, problem, fix)`, a `TilesError` (a ``TypeError``) that leaves the compiler with its message
first and the call's source line after it.

Example (the C++ goes in ``include/mine.cuh`` beside the module)::

    // include/mine.cuh
    #pragma once
    #include <cub/block/block_reduce.cuh>
    #include "common.cuh"
    namespace mine {
    template <typename T, int BX, int BY, int BZ>
    using storage = typename cub::BlockReduce<T, BX, cub::BLOCK_REDUCE_WARP_REDUCTIONS, BY, BZ>::TempStorage;
    template <typename T, int BX, int BY, int BZ, typename Temp>
    __device__ T block_sum_of_squares(T value, Temp temp) {
      auto& storage = numba_tiles::storage_of<mine::storage<T, BX, BY, BZ>>(temp, "block_sum_of_squares");
      T result = cub::BlockReduce<T, BX, cub::BLOCK_REDUCE_WARP_REDUCTIONS, BY, BZ>(storage).Sum(value * value);
      __syncthreads();  // (the next call may reuse the storage)
      return result;
    }
    }

    # mine.py
    from pathlib import Path
    import numpy as np
    from numba_tiles import extending as ext

    MINE = ext.library("mine", Path(__file__).parent / "include", blame="a bug in mine; please report it")
    HEADER = MINE.header("mine.cuh")

    def _rule(name, args):
        dtype = ext.scalar(name, "value", args["value"], allowed="iuf")
        shape = dict(zip(("BX", "BY", "BZ"), args["block_dim"]))
        return ext.Instance(
            intrinsic=name, header=HEADER, result=dtype.numba,
            template=HEADER.template("mine::block_sum_of_squares", T=dtype.cxx, **shape),
            params=(ext.Arg("value", dtype.numba),),
            storage=HEADER.template("mine::storage", T=dtype.cxx, **shape))

    def _simulate(instance, args):
        values, rank = ext.simulated_block(instance.intrinsic, args["block_dim"], args["value"])
        dtype = np.dtype(str(instance.result))
        return np.sum(np.square(np.array(values, dtype)), dtype=dtype) if rank == 0 else dtype.type(0)

    @ext.intrinsic(consts={"block_dim": ext.block_dim}, rule=_rule, simulate=_simulate)
    def block_sum_of_squares(value, *, block_dim, temp=None):
        '''The sum of the block's values squared, valid in thread 0. {{block_dim}} ...'''
"""

import os

from . import _library
from ._dtypes import SCALARS, Dtype, element, given_integer, integer, named, scalar
from ._entry import Arg, Function, Instance, Literal, Member
from ._errors import TilesError, error
from ._library import CUB, MATHDX, STATIC_SHARED_BYTES, Header, Library
from ._params import block_dim, choice, count, flag, positive_int, warp_size
from ._spec import description, intrinsic, method
from .simulator import simulated_block, simulated_warp


def library(name: str, include_dir: str | os.PathLike, *, blame: str, over: Library = CUB) -> Library:
    """A `Library` of your headers in ``include_dir``, over ``over`` (numba_tiles' `CUB` library: CCCL, the
    CUDA headers and ``common.cuh``; or `MATHDX`, for cuBLASDx), with its options; the content of
    ``include_dir`` is in the cache key (read once per process: a new process sees an edited header).

    ``blame`` ends the message of a compile failure of your C++ (whom to tell). Its
    ``header(filename)`` is a `Header`, whose ``template(qualified, **arguments)`` spells an
    instantiation, checked against the header's declaration of that template.

    Example::

        from pathlib import Path
        from numba_tiles import extending as ext

        MINE = ext.library("mine", Path("include"), blame="a bug in mine; please report it")
        assert MINE.include_path()[0] == "include"
    """
    from pathlib import Path

    from . import _toolchain

    include_dir = Path(include_dir)
    return _library.Library(
        name=name,
        include_dirs=lambda: (include_dir, *over.include_dirs()),
        versions=lambda: {**over.versions(), name: _toolchain.directory_digest(include_dir)},
        blame=blame,
        macros=over.macros,
        nvrtc_flags=over.nvrtc_flags,
        base=over.base,
        per_entry=over.per_entry,
    )


__all__ = [
    "library",
    "Library",
    "Header",
    "CUB",
    "MATHDX",
    "STATIC_SHARED_BYTES",
    "Instance",
    "Arg",
    "Literal",
    "Member",
    "Function",
    "intrinsic",
    "method",
    "description",
    "TilesError",
    "error",
    "block_dim",
    "positive_int",
    "count",
    "warp_size",
    "choice",
    "flag",
    "Dtype",
    "SCALARS",
    "scalar",
    "element",
    "integer",
    "given_integer",
    "named",
    "simulated_block",
    "simulated_warp",
]
