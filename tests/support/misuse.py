"""Misuse of the intrinsics, one case per rule, for both sides: tests/cpu/test_errors.py compiles each
case's kernel and tests/simulator/test_errors_sim.py launches it on the simulator; both expect the same
first line of the `TilesError`.

A case is the call (a statement of a kernel of ``x, out, n``, or ``x, y, n`` with a 2-D
signature), the statements before it, the kernel's signature and a pattern its error's first line
matches. The kernels are Python source, registered with ``linecache`` as a file is, so that a compile
error quotes the call's line as it does a module's.
"""

import ast
import linecache
import re
import types
from typing import NamedTuple

import numpy as np
from numba import cuda, float32, uint16

import numba_tiles as tiles
from numba_tiles import _dtypes

BLOCK = 128
NOT_A_BLOCK = (1024, 2)
settings = types.ModuleType("settings")  # a module attribute is typed as a run-time value, as Numba does
settings.BLOCK = 128


@cuda.jit(device=True)
def absmax(a, b):
    return max(abs(a), abs(b))


SIG = "void(float32[:], float32[:], int64)"


class Case(NamedTuple):
    call: str
    message: str  # a pattern of the error's first line, after "tiles.<name>: "
    sig: str = SIG
    before: tuple = ()  # statements before the call
    compiled_only: str = ""  # why the simulator cannot see it

    @property
    def intrinsic(self):
        return self.call.split("(")[0]


CASES = [
    Case("tiles.block_reduce(x[i] > 0, '+', block_dim=128)", r"value has type bool, which is not supported"),
    Case(
        "tiles.block_reduce(x[i], 'max', block_dim=128)",
        r"op 'max' needs ordered values, got complex64.*Fix: use "
        r"'\+' or '\*'",
        "void(complex64[:], complex64[:], int64)",
    ),
    Case(
        "tiles.block_sum(x[i] > 0, block_dim=128)",
        r"value has type bool.*Fix: pass one of int8, int16, int32, int64, uint8, .*, complex128",
    ),
    Case("tiles.block_reduce(x[i], '%', block_dim=128)", r"op '%' is not supported.*Fix: use one of '\+'"),
    Case("tiles.block_reduce(x[i], abs, block_dim=128)", r"op 'abs' is not supported"),
    Case("tiles.block_reduce(x[i], '&', block_dim=128)", r"op '&' needs an integer dtype, got float32"),
    # compile-time constants: what Numba types as constants, and what it computes at run time
    Case(
        "tiles.block_reduce(x[i], '+', block_dim=n)",
        r"block_dim must be a compile-time constant, got a run-time "
        r"value\. Fix: write it as a literal or a module-level global, e\.g\. block_dim=256\.$",
    ),
    Case("tiles.block_reduce(x[i], '+', block_dim=cuda.blockDim.x)", r"block_dim must be a compile-time constant"),
    Case("tiles.block_sum(x[i], block_dim=2 * BLOCK)", r"block_dim must be a compile-time constant"),
    Case("tiles.block_sum(x[i], block_dim=settings.BLOCK)", r"block_dim must be a compile-time constant"),
    Case(
        "tiles.block_sum(x[i], block_dim=b)",
        r"block_dim must be a compile-time constant",
        before=("b = 64", "if n > 0:", "    b = 128"),
    ),
    Case("tiles.block_sum(x[i], block_dim=b)", r"block_dim must be a compile-time constant", before=("b = n",)),
    Case("tiles.block_sum(x[i], block_dim=b)", r"block_dim=2048 is not a valid CUDA block", before=("b = 2048",)),
    Case(
        "tiles.block_sum(x[i], block_dim=(b, 4))",
        r"block_dim must be a compile-time constant",
        before=("b = cuda.blockDim.x",),
    ),
    Case("tiles.block_sum(x[i], block_dim=2048)", r"block_dim=2048 is not a valid CUDA block \(2048 threads\)"),
    Case("tiles.block_sum(x[i], block_dim=2 * 1024)", r"block_dim=2048 is not a valid CUDA block"),
    Case("tiles.block_sum(x[i], block_dim=NOT_A_BLOCK)", r"block_dim=\(1024, 2\) is not a valid CUDA block"),
    Case("tiles.block_sum(x[i], block_dim=(4, 4, 128))", r"is not a valid CUDA block"),
    Case("tiles.block_sum(x[i], block_dim=(0, 4))", r"is not a valid CUDA block"),
    Case("tiles.block_sum(x[i], block_dim=(4, 4, 4, 4))", r"block_dim must be an int or a tuple of 1 to 3 ints"),
    Case(
        "tiles.block_sum(x[i], block_dim=128.0)",
        r"block_dim must be an int or a tuple of 1 to 3 ints, got 128\.0\. Fix: .*e\.g\. block_dim=256",
    ),
    Case("tiles.block_sum(x[i], block_dim=128, num_valid=1.5)", r"num_valid must be an integer, got float64"),
    # the call's arguments
    Case("tiles.block_sum(x[i])", r"missing a required argument: 'block_dim'"),
    Case("tiles.block_sum(x[i], 128)", r"too many positional arguments.*block_dim"),
    Case(
        "tiles.block_reduce(x[i], '+', blockdim=128)",
        r"unknown keyword argument 'blockdim' \(did you mean "
        r"block_dim\?\)\. Fix: call it as tiles\.block_reduce\(value, op, \*, block_dim, ",
    ),
    Case(
        "tiles.block_reduce(x[i], '+', block_dim=128, items=4)",
        r"unknown keyword argument 'items' \(did you mean "
        r"items_per_thread\?\)",
    ),
    Case(
        "tiles.block_sum(x[i], block_dim=128, colour=1)",
        r"unknown keyword argument 'colour'\. Fix: call it as "
        r"tiles\.block_sum\(value, \*, block_dim",
    ),
    Case(
        "tiles.warp_reduce(x[i], 'max', warpsize=16)",
        r"unknown keyword argument 'warpsize' \(did you mean "
        r"warp_size\?\)",
    ),
    Case(
        "tiles.tile_load(y, y, 0, 0, block_dims=128)",
        r"unknown keyword argument 'block_dims' \(did you mean "
        r"block_dim\?\)",
        "void(float32[:], float32[:, :], int64)",
    ),
    Case(
        "tiles.matmul(y, y, y, shape=(32, 32, 32), blockdim=128)",
        r"unknown keyword argument 'blockdim' \(did you "
        r"mean block_dim\?\)\. Fix: call it as tiles\.matmul\(a, b, c, ",
        "void(float32[:], float32[:, :], int64)",
    ),
    # thread-local arrays and items_per_thread
    Case(
        "tiles.block_reduce(x, '+', block_dim=128)",
        r"an array input needs items_per_thread",
        "void(float32[::1], float32[:], int64)",
    ),
    Case(
        "tiles.block_sum(x[i], block_dim=128, items_per_thread=4)",
        r"items_per_thread=4 needs an array input, got a scalar float32",
    ),
    Case("tiles.block_sum(x, block_dim=128, items_per_thread=0)", r"items_per_thread must be a positive int"),
    Case("tiles.block_sum(x, block_dim=128, items_per_thread=n)", r"items_per_thread must be a compile-time"),
    Case(
        "tiles.block_sum(y, block_dim=128, items_per_thread=2)",
        r"value must be a 1-D contiguous array, got "
        r"array\(float32, 2d",
        "void(float32[:], float32[:, :], int64)",
    ),
    Case(
        "tiles.block_load(x, items, block_dim=128, items_per_thread=8)",
        r"items has 4 items but items_per_thread=8\. "
        r"Fix: make it at least items_per_thread long, e\.g\. cuda\.local\.array\(8, dtype\)",
        before=("items = cuda.local.array(4, float32)",),
    ),
    Case(
        "tiles.block_sum(items, block_dim=128, items_per_thread=ITEMS)",
        r"value has 2 items but items_per_thread=4",
        before=("items = cuda.local.array(2, float32)",),
    ),
    Case(
        "tiles.block_radix_sort(keys, block_dim=128, items_per_thread=4, values=vals)",
        r"values has 3 items but items_per_thread=4",
        before=("keys = cuda.local.array(4, float32)", "vals = cuda.local.array((3,), float32)"),
    ),
    Case(
        "tiles.block_sum(x[i], block_dim=128, algorithm='tree')",
        r"algorithm='tree' is not supported.*Fix: use one of 'warp_reductions', 'raking'",
    ),
    Case("tiles.block_sum(x[i], block_dim=128, broadcast=1)", r"broadcast must be True or False, got 1"),
    Case("tiles.warp_sum(x[i], warp_size=3)", r"warp_size must be a power of two from 1 to 32, got 3"),
    Case("tiles.warp_sum(x[i], warp_size=64)", r"warp_size must be a power of two from 1 to 32, got 64"),
    Case("tiles.warp_reduce(x[i], 'max', warp_size=n)", r"warp_size must be a compile-time constant"),
    Case("tiles.warp_reduce(x[i], '|', warp_size=16)", r"op '\|' needs an integer dtype, got float32"),
    Case("tiles.warp_reduce(x[i] > 0, 'max')", r"value has type bool"),
    Case("tiles.warp_sum(x[i], num_valid=x[i])", r"num_valid must be an integer, got float32"),
    Case("tiles.warp_reduce(x, 'max')", r"value has type array\(float32, 1d, A\), which is not supported"),
    # block_load / block_store
    Case("tiles.block_load(x, out, block_dim=128)", r"missing a required argument: 'items_per_thread'"),
    Case(
        "tiles.block_load(x, out, block_dim=128, items_per_thread=4)",
        r"items holds float64 but the other array holds float32.*Fix: use arrays of one dtype",
        "void(float32[:], float64[:], int64)",
    ),
    Case(
        "tiles.block_load(x, out, block_dim=128, items_per_thread=4, algorithm='gather')",
        r"algorithm='gather' is not supported.*'direct', 'striped', 'vectorize'",
    ),
    Case(
        "tiles.block_load(x, out, block_dim=48, items_per_thread=4, algorithm='warp_transpose')",
        r"'warp_transpose' needs a block of whole warps, got 48 threads",
    ),
    Case("tiles.block_load(x[i], out, block_dim=128, items_per_thread=4)", r"src must be an array, got float32"),
    Case("tiles.block_store(out, x, block_dim=128, items_per_thread=n)", r"items_per_thread must be a compile-time"),
    Case(
        "tiles.block_store(out, x, block_dim=128, items_per_thread=4, num_valid=1.0)",
        r"num_valid must be an integer, got float64",
    ),
    Case(
        "tiles.block_load(x, out, block_dim=1024, items_per_thread=16, algorithm='transpose')",
        r"needs at least 131072 bytes of shared memory, over the 49152",
        "void(float64[:], float64[:], int64)",
    ),
    # scans
    Case("tiles.block_scan(x[i], '&', block_dim=128)", r"op '&' needs an integer dtype, got float32"),
    Case(
        "tiles.block_scan(x[i], 'min', block_dim=128)",
        r"op 'min' needs ordered values, got complex128",
        "void(complex128[:], complex128[:], int64)",
    ),
    Case(
        "tiles.block_scan(x, block_dim=128, items_per_thread=2, prefix=out, aggregate=True)",
        r"prefix carries the running total: it cannot be combined with aggregate",
    ),
    Case("tiles.block_scan(x[i], block_dim=128, exclusive=1)", r"exclusive must be True or False, got 1"),
    Case(
        "tiles.block_scan(x[i], block_dim=128, algorithm='tree')",
        r"algorithm='tree' is not supported.*'raking', 'raking_memoize', 'warp_scans'",
    ),
    Case(
        "tiles.block_scan(x[i], block_dim=128, prefix=out, items_per_thread=2)",
        r"items_per_thread=2 needs an array "
        r"input",
    ),
    Case("tiles.warp_scan(x, warp_size=8)", r"value has type array\(float32, 1d, A\), which is not supported"),
    Case("tiles.warp_scan(x[i], warp_size=8, initial_value=x)", r"initial_value has type array\(float32, 1d, A\)"),
    # exchange, histogram, radix sort
    Case(
        "tiles.block_exchange(x, 'transpose', block_dim=128, items_per_thread=4)",
        r"arrangement='transpose' is not supported.*'striped_to_blocked'",
    ),
    Case(
        "tiles.block_exchange(x, 'striped_to_blocked', block_dim=1024, items_per_thread=7)",
        r"needs at least 57344 bytes of shared memory",
        "void(complex64[:], complex64[:], int64)",
    ),
    Case(
        "tiles.block_exchange(x, 'blocked_to_warp_striped', block_dim=(7, 9, 3), items_per_thread=4)",
        r"a warp-striped arrangement needs a block of whole warps, got 189 threads.*Fix: use a multiple of 32 "
        r"threads, or 'blocked_to_striped' or 'striped_to_blocked'",
    ),
    Case(
        "tiles.block_exchange(x, 'warp_striped_to_blocked', block_dim=16, items_per_thread=2)",
        r"a warp-striped arrangement needs a block of whole warps, got 16 threads",
    ),
    Case(
        "tiles.block_histogram(x, out, block_dim=128, items_per_thread=4, bins=256)",
        r"items holds float32, which is not supported here.*Fix: pass one of int8, .*uint64;",
    ),
    Case(
        "tiles.block_histogram(x, out, block_dim=1024, items_per_thread=13, bins=256, algorithm='sort')",
        r"a tile of 1024 threads x 13 items needs at least 53248 bytes of shared memory.*Fix: use fewer "
        r"items_per_thread",
        "void(int32[:], uint32[:], int64)",
    ),
    Case(
        "tiles.block_histogram(x, out, block_dim=128, items_per_thread=4, bins=256)",
        r"histogram holds int16.*Fix: use counters of int32, uint32, uint64",
        "void(uint8[:], int16[:], int64)",
    ),
    Case(
        "tiles.block_histogram(x, out, block_dim=128, items_per_thread=4)",
        r"missing a required argument: 'bins'",
        "void(uint8[:], uint32[:], int64)",
    ),
    Case(
        "tiles.block_histogram(x, out, block_dim=128, items_per_thread=4, bins=0)",
        r"bins must be a positive int, "
        r"got 0",
        "void(uint8[:], uint32[:], int64)",
    ),
    Case(
        "tiles.block_histogram(items, out, block_dim=128, items_per_thread=4, bins=8192, algorithm='sort')",
        r"its temp storage needs \d+ bytes of shared memory, over the 49152 a block can have statically.*Fix: use "
        r"fewer items_per_thread",
        "void(uint16[::1], uint32[::1], int64)",
        before=("items = cuda.local.array(4, uint16)",),
        compiled_only="the size of CUB's storage is a C++ sizeof, which only NVRTC computes",
    ),
    Case(
        "tiles.block_radix_sort(x, block_dim=128, items_per_thread=4)",
        r"keys holds complex64, which is not "
        r"supported here",
        "void(complex64[:], complex64[:], int64)",
    ),
    Case(
        "tiles.block_radix_sort(x, block_dim=128, items_per_thread=4, begin_bit=1.0)",
        r"begin_bit must be an integer, got float64",
    ),
    Case(
        "tiles.block_radix_sort(x, block_dim=128, items_per_thread=4, descending='yes')",
        r"descending must be True or False",
    ),
    # temp storage
    Case(
        "tiles.block_scan(x[i], block_dim=128, temp=n)",
        r"temp must be a 1-D array, got int64.*Fix: pass cuda.shared.array\(TEMP_BYTES, uint8\)",
    ),
    Case(
        "tiles.block_sum(x[i], block_dim=128, temp=y)",
        r"temp must be a 1-D array, got array\(uint8, 2d",
        "void(float32[:], uint8[:, :], int64)",
    ),
    Case(
        "tiles.block_exchange(x, 'blocked_to_striped', block_dim=128, items_per_thread=4, temp=out)",
        r"temp holds bool, which is not supported",
        "void(float32[:], boolean[:], int64)",
    ),
    Case(
        "tiles.block_merge_sort(x, block_dim=(48, 2), items_per_thread=4)",
        r"merge sort needs a power-of-two number of threads, got 96.*Fix: launch 32",
    ),
    # adjacent difference, discontinuity, shuffle
    Case(
        "tiles.block_adjacent_difference(x, block_dim=128, items_per_thread=4, right=True, neighbor=x[0], num_valid=n)",
        r"a right difference of a partial tile takes no neighbor.*Fix: leave out neighbor",
    ),
    Case(
        "tiles.block_adjacent_difference(x, '&', block_dim=128, items_per_thread=4)",
        r"op '&' needs an integer dtype, got float32",
    ),
    Case("tiles.block_adjacent_difference(x, '/', block_dim=128, items_per_thread=4)", r"op '/' is not supported"),
    Case(
        "tiles.block_adjacent_difference(x[i], block_dim=128, items_per_thread=4)",
        r"items must be an array, got "
        r"float32",
    ),
    Case("tiles.block_discontinuity(x, block_dim=128, items_per_thread=4)", r"it needs heads=, tails= or both"),
    Case(
        "tiles.block_discontinuity(x, block_dim=128, items_per_thread=4, tails=out, predecessor=x[0])",
        r"predecessor only decides the heads flag.*Fix: pass heads=",
        "void(int32[:], uint8[:], int64)",
    ),
    Case(
        "tiles.block_discontinuity(x, block_dim=128, items_per_thread=4, heads=out)",
        r"heads holds float32, which is not supported here.*Fix: pass one of int8",
    ),
    Case(
        "tiles.block_discontinuity(x, block_dim=128, items_per_thread=4, heads=flags)",
        r"heads has 2 items but items_per_thread=4",
        "void(int32[:], uint8[:], int64)",
        before=("flags = cuda.local.array(2, uint16)",),
    ),
    Case(
        "tiles.block_discontinuity(x, block_dim=128, items_per_thread=4, heads=out, compare='<')",
        r"compare='<' is not supported.*Fix: pass '!='",
        "void(int32[:], uint8[:], int64)",
    ),
    Case(
        "tiles.block_shuffle(x, 'offset', block_dim=128, items_per_thread=4)",
        r"kind 'offset' shuffles one value per thread, got array",
    ),
    Case("tiles.block_shuffle(x[i], 'up', block_dim=128)", r"kind 'up' shuffles a thread-local array"),
    Case(
        "tiles.block_shuffle(x[i], 'sideways', block_dim=128)",
        r"kind='sideways' is not supported.*'offset', 'rotate', 'up', 'down'",
    ),
    Case(
        "tiles.block_shuffle(x, 'up', block_dim=128, items_per_thread=4, distance=2)",
        r"kind 'up' always moves items by one.*Fix: leave out distance",
    ),
    Case(
        "tiles.block_shuffle(x[i], 'rotate', block_dim=128, distance=1.5)",
        r"distance must be an integer, got "
        r"float64",
    ),
    Case(
        "tiles.block_shuffle(x[i], 'rotate', block_dim=(7, 3), items_per_thread=2)",
        r"items_per_thread=2 needs an array input",
    ),
    # user ops and comparisons
    Case(
        "tiles.block_reduce(x[i], absmax, block_dim=128, num_valid=n)",
        r"num_valid needs an op with an identity; absmax is a Python function",
    ),
    Case(
        "tiles.warp_scan(x[i], absmax, num_valid=n)",
        r"num_valid needs an op with an identity; absmax is a Python "
        r"function",
    ),
    Case("tiles.warp_scan(x[i], num_valid=1.5)", r"num_valid must be an integer, got float64"),
    Case(
        "tiles.block_scan(x[i], absmax, block_dim=128, exclusive=True)",
        r"an exclusive scan with a Python op \(absmax\) needs initial_value",
    ),
    Case(
        "tiles.warp_reduce(x[i], absmax)",
        r"a Python op \(absmax\) works on integers, float32 and float64, got "
        r"float16",
        "void(float16[:], float16[:], int64)",
    ),
    Case(
        "tiles.block_merge_sort(x, '<=', block_dim=128, items_per_thread=4)",
        r"compare='<=' is not supported.*Fix: pass '<', '>' or a @cuda.jit\(device=True\) function",
    ),
    Case(
        "tiles.block_merge_sort(x, block_dim=128, items_per_thread=4)",
        r"keys holds complex128, which is not "
        r"supported here",
        "void(complex128[:], complex128[:], int64)",
    ),
]

ITEMS = 4


def accepted_forms():
    """A kernel whose compile-time arguments take the forms both sides accept: a module global, a closure
    variable, a local assigned a constant, a tuple of them; and a local array longer than items_per_thread.
    ``out[b]`` is (the sum of block b's tile of BLOCK x ITEMS items, the largest first item of a thread)."""
    shape = (BLOCK, 1)

    def kernel(x, out):
        items = cuda.local.array(8, float32)
        b = BLOCK
        start = cuda.blockIdx.x * BLOCK * ITEMS
        tiles.block_load(x[start:], items, block_dim=b, items_per_thread=ITEMS)
        total = tiles.block_sum(items, block_dim=shape, items_per_thread=ITEMS)
        largest = tiles.block_reduce(items[0], "max", block_dim=(BLOCK, 1))
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x, 0] = total
            out[cuda.blockIdx.x, 1] = largest

    return kernel


def accepted_forms_reference(x):
    tiles_ = x.reshape(-1, BLOCK, ITEMS)
    return np.stack([tiles_.sum(axis=(1, 2), dtype=np.float64), tiles_[:, :, 0].max(axis=1)], axis=1)


DIMS = (128, 2)
FLAG = True

# Spellings of block_dim=128 that numba-cuda types as constants (measured with tiles.compile): both sides
# accept them, as (the expression, the statements before the call).
ACCEPTED = [
    ("BLOCK", ()),
    ("(BLOCK, 1)", ()),
    ("2 * 64", ()),
    ("DIMS[0]", ()),
    ("BLOCK if FLAG else 64", ()),
    ("b", ("b = 128",)),
    ("b", ("b = BLOCK",)),
    ("b", ("b, c = 128, 2",)),
    ("b[0]", ("b = (BLOCK, 2)",)),
    ("b", ("b = 128", "if n > 0:", "    b = 128")),
    # Numba prunes a branch whose test is a constant, and a name assigned again where the kernel always passes
    # is a new variable (a kernel argument too): each holds one constant
    ("b", ("if FLAG:", "    b = 128", "else:", "    b = 64")),
    ("BLOCK or 64", ()),
    ("b", ("b = 64", "b = 128")),
    ("n", ("n = 128",)),
    ("b", ("b, c = DIMS",)),
]


def kernel(case, index):
    """The case's kernel as a Python function (``@cuda.jit`` it, or pass it to ``tiles.compile``)."""
    params = "x, y, n" if "[:, :]" in case.sig else "x, out, n"
    return _define(f"<tiles misuse {index}>", params, [*case.before, case.call])


def accepted_kernel(index):
    """``out[b]`` = the sum of ``x`` over block b (of 128 threads), with ACCEPTED[index]'s block_dim."""
    expression, before = ACCEPTED[index]
    return _define(
        f"<tiles accepted {index}>",
        "x, out, n",
        [
            *before,
            f"s = tiles.block_sum(x[i], block_dim={expression})",
            "if cuda.threadIdx.x == 0:",
            "    out[cuda.blockIdx.x] = s",
        ],
    )


def _define(filename, params, body):
    """A function ``kernel(params)`` of ``body`` (after ``i = cuda.grid(1)``), its source in ``linecache``."""
    source = f"def kernel({params}):\n    i = cuda.grid(1)\n" + "".join(f"    {line}\n" for line in body)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {
        "cuda": cuda,
        "tiles": tiles,
        "BLOCK": BLOCK,
        "NOT_A_BLOCK": NOT_A_BLOCK,
        "ITEMS": ITEMS,
        "DIMS": DIMS,
        "FLAG": FLAG,
        "settings": settings,
        "absmax": absmax,
        "float32": float32,
        "uint16": uint16,
    }
    exec(compile(source, filename, "exec"), namespace)
    return namespace["kernel"]


def arguments(sig, rng):
    """Random arguments of the types of ``sig``: arrays of 1024 (32 x 64) items, strided where the
    signature's layout is ``A``, so that the simulator types them as the signature does, and n = 3."""
    result = []
    for ty in re.findall(r"(\w+)(\[[^\]]*\])?", sig[sig.index("(") + 1 :]):
        name, dims = ty
        dtype = np.bool_ if name == "boolean" else np.dtype(name)
        if not dims:
            result.append(3)
            continue
        shape = (32, 64) if "," in dims else (1024,)
        data = (rng.random(shape) * 100).astype(dtype)
        if dims.endswith("::1]"):
            result.append(data)
        else:  # a view with a stride of 2 items in its last dimension
            wide = cuda.to_device(np.repeat(data, 2, axis=-1))
            result.append(wide[::2] if len(shape) == 1 else wide[:, ::2])
    return result


def first_line(error):
    """The first line of ``str(error)``, less the simulator's ``tid=[...] ctaid=[...]: `` prefix."""
    return re.sub(r"^tid=\[[\d, ]*\] ctaid=\[[\d, ]*\]: ", "", str(error).splitlines()[0])


def check(case, error):
    """Assert that ``error`` is the case's: a `TilesError` whose first line names the intrinsic, has a fix and
    matches the case's pattern, and whose fix's examples are values of their parameters (`check_fix_examples`)."""
    line = first_line(error)
    assert isinstance(error, tiles.TilesError), f"{type(error).__name__}: {error}"
    assert line.startswith(f"{case.intrinsic}: ") and "Fix: " in line, line
    assert re.search(case.message, line), line
    check_fix_examples(getattr(tiles, case.intrinsic.removeprefix("tiles.")).spec, line)


DTYPES = {d.name for d in _dtypes.SCALARS}


def check_fix_examples(spec, line):
    """Assert that every example in the fix of ``line`` (an error's first line, of the intrinsic ``spec``
    declares) is a value its parameter takes, and return how many were checked: a dtype's (``numba.int32(x)``,
    ``cuda.local.array(n, numba.int32)``) one of those the fix lists; a local array's length at least the
    items_per_thread the problem names; a compile-time parameter's ``name=value`` one the intrinsic's own parser
    accepts; a run-time parameter's a variable or a literal (an integer where the problem says it must be one). A
    fix with an "e.g." none of these reads fails."""
    problem, _, fix = line.partition(" Fix: ")
    listed = re.search(r"pass one of ([\w, ]+?)[;(]", fix)
    listed = set(listed[1].replace(" ", "").split(",")) if listed else DTYPES
    checked = 0
    for name in re.findall(r"\bnumba\.(\w+)\(", fix):
        assert name in DTYPES and name in listed, f"the example numba.{name} is not one of the dtypes it takes: {line}"
        checked += 1
    for length, dtype in re.findall(r"cuda\.local\.array\((\w+), (?:numba\.)?(\w+)\)", fix):
        items = re.search(r"items_per_thread=(\d+)", problem)
        assert not (items and length.isdigit()) or int(length) >= int(items[1]), f"too short an array: {line}"
        assert dtype == "dtype" or dtype in listed, f"the example's {dtype} is not one of the dtypes it takes: {line}"
        checked += 1
    for name, text in re.findall(r"\b(\w+)=(\([^()]*\)|'[^']*'|-?\d+(?:\.\d+)?\b|\w+)", fix):
        if text.isupper():  # a placeholder the fix explains (items_per_thread=N, the number of items...)
            continue
        if name in spec.consts:
            try:
                spec.consts[name](spec.name, ast.literal_eval(text))
            except (tiles.TilesError, ValueError, SyntaxError) as exc:
                raise AssertionError(f"the example {name}={text} is not a value of {name} ({exc}): {line}") from None
        elif name in spec.pysig.parameters:
            literal = r"-?\d+" if f"{name} must be an integer" in problem else r"-?\d+(\.\d+)?|None|True|False"
            assert text.isidentifier() or re.fullmatch(literal, text), (
                f"the example {name}={text} is not a variable or a literal of the type it needs: {line}"
            )
        else:
            continue
        checked += 1
    assert checked or "e.g." not in fix, f"a fix's example that check_fix_examples cannot read: {line}"
    return checked
