"""Misuse fails at compile time with a message naming the intrinsic, the problem and the fix."""

import re

import pytest
from numba import cuda, float32, uint16
from numba.core.errors import TypingError

import numba_tiles as tiles

BLOCK = 128
NOT_A_BLOCK = (1024, 2)


@cuda.jit(device=True)
def absmax(a, b):
    return max(abs(a), abs(b))


def compile_body(body, sig="void(float32[:], float32[:], int64)"):
    params = "x, y, n" if sig and "[:, :]" in sig else "x, out, n"
    source = f"def kernel({params}):\n    i = cuda.grid(1)\n    x[0] = {body}\n"
    namespace = {"cuda": cuda, "tiles": tiles, "BLOCK": BLOCK, "NOT_A_BLOCK": NOT_A_BLOCK, "abs": abs,
                 "absmax": absmax}
    exec(source, namespace)
    tiles.compile(namespace["kernel"], sig, arch="sm_90")


@pytest.mark.parametrize(
    "body,sig,message",
    [
        ("tiles.block_reduce(x[i] > 0, '+', block_dim=128)", None, r"value has type bool, which is not supported"),
        ("tiles.block_reduce(x[i], 'max', block_dim=128)", "void(complex64[:], complex64[:], int64)",
         r"op 'max' needs ordered values, got complex64.*Fix: use '\+' or '\*'"),
        ("tiles.block_sum(x[i] > 0, block_dim=128)", None,
         r"value has type bool.*Fix: pass one of int8, int16, int32, int64, uint8, .*, complex128"),
        ("tiles.block_reduce(x[i], '%', block_dim=128)", None, r"op '%' is not supported.*Fix: use one of '\+'"),
        ("tiles.block_reduce(x[i], abs, block_dim=128)", None, r"op 'abs' is not supported"),
        ("tiles.block_reduce(x[i], '&', block_dim=128)", None, r"op '&' needs an integer dtype, got float32"),
        ("tiles.block_reduce(x[i], '+', block_dim=n)", None, r"block_dim must be a compile-time constant, got a run-time int64"),
        ("tiles.block_sum(x[i], block_dim=2048)", None, r"block_dim=2048 is not a valid CUDA block \(2048 threads\)"),
        ("tiles.block_sum(x[i], block_dim=NOT_A_BLOCK)", None, r"block_dim=\(1024, 2\) is not a valid CUDA block"),
        ("tiles.block_sum(x[i], block_dim=(4, 4, 128))", None, r"is not a valid CUDA block"),
        ("tiles.block_sum(x[i], block_dim=(0, 4))", None, r"is not a valid CUDA block"),
        ("tiles.block_sum(x[i], block_dim=(4, 4, 4, 4))", None, r"block_dim must be an int or a tuple of 1 to 3 ints"),
        ("tiles.block_sum(x[i], block_dim=128.0)", None, r"block_dim must be a compile-time constant, got a run-time float64.*e.g. block_dim=256"),
        ("tiles.block_sum(x[i], block_dim=128, num_valid=1.5)", None, r"num_valid must be an integer, got float64"),
        ("tiles.block_sum(x[i])", None, r"tiles.block_sum: missing a required argument: 'block_dim'"),
        ("tiles.block_sum(x[i], 128)", None, r"tiles.block_sum: too many positional arguments.*block_dim"),
        ("tiles.block_reduce(x[i], '+', block_dim=128, items=4)", None, r"unexpected keyword argument 'items'"),
        ("tiles.block_reduce(x, '+', block_dim=128)", "void(float32[::1], float32[:], int64)",
         r"an array input needs items_per_thread"),
        ("tiles.block_sum(x[i], block_dim=128, items_per_thread=4)", None,
         r"items_per_thread=4 needs an array input, got a scalar float32"),
        ("tiles.block_sum(x, block_dim=128, items_per_thread=0)", None, r"items_per_thread must be a positive int"),
        ("tiles.block_sum(x, block_dim=128, items_per_thread=n)", None, r"items_per_thread must be a compile-time"),
        ("tiles.block_sum(y, block_dim=128, items_per_thread=2)", "void(float32[:], float32[:, :], int64)",
         r"value must be a 1-D contiguous array, got array\(float32, 2d"),
        ("tiles.block_sum(x[i], block_dim=128, algorithm='tree')", None,
         r"algorithm='tree' is not supported.*Fix: use one of 'warp_reductions', 'raking'"),
        ("tiles.block_sum(x[i], block_dim=128, broadcast=1)", None, r"broadcast must be True or False, got 1"),
        ("tiles.warp_sum(x[i], warp_size=3)", None, r"warp_size must be a power of two from 1 to 32, got 3"),
        ("tiles.warp_sum(x[i], warp_size=64)", None, r"warp_size must be a power of two from 1 to 32, got 64"),
        ("tiles.warp_reduce(x[i], 'max', warp_size=n)", None, r"warp_size must be a compile-time constant"),
        ("tiles.warp_reduce(x[i], '|', warp_size=16)", None, r"op '\|' needs an integer dtype, got float32"),
        ("tiles.warp_reduce(x[i] > 0, 'max')", None, r"value has type bool"),
        ("tiles.warp_sum(x[i], num_valid=x[i])", None, r"num_valid must be an integer, got float32"),
        ("tiles.warp_reduce(x, 'max')", None, r"value has type array\(float32, 1d, A\), which is not supported"),
        # block_load / block_store
        ("tiles.block_load(x, out, block_dim=128)", None, r"missing a required argument: 'items_per_thread'"),
        ("tiles.block_load(x, out, block_dim=128, items_per_thread=4)", "void(float32[:], float64[:], int64)",
         r"items holds float64 but the other array holds float32.*Fix: use arrays of one dtype"),
        ("tiles.block_load(x, out, block_dim=128, items_per_thread=4, algorithm='gather')", None,
         r"algorithm='gather' is not supported.*'direct', 'striped', 'vectorize'"),
        ("tiles.block_load(x, out, block_dim=48, items_per_thread=4, algorithm='warp_transpose')", None,
         r"'warp_transpose' needs a block of whole warps, got 48 threads"),
        ("tiles.block_load(x[i], out, block_dim=128, items_per_thread=4)", None, r"src must be an array, got float32"),
        ("tiles.block_store(out, x, block_dim=128, items_per_thread=n)", None, r"items_per_thread must be a compile-time"),
        ("tiles.block_store(out, x, block_dim=128, items_per_thread=4, num_valid=1.0)", None,
         r"num_valid must be an integer, got float64"),
        ("tiles.block_load(x, out, block_dim=1024, items_per_thread=16, algorithm='transpose')",
         "void(float64[:], float64[:], int64)", r"needs at least 131072 bytes of shared memory, over the 49152"),
        # scans
        ("tiles.block_scan(x[i], '&', block_dim=128)", None, r"op '&' needs an integer dtype, got float32"),
        ("tiles.block_scan(x[i], 'min', block_dim=128)", "void(complex128[:], complex128[:], int64)",
         r"op 'min' needs ordered values, got complex128"),
        ("tiles.block_scan(x, block_dim=128, items_per_thread=2, prefix=out, aggregate=True)", None,
         r"prefix carries the running total: it cannot be combined with aggregate"),
        ("tiles.block_scan(x[i], block_dim=128, exclusive=1)", None, r"exclusive must be True or False, got 1"),
        ("tiles.block_scan(x[i], block_dim=128, algorithm='tree')", None,
         r"algorithm='tree' is not supported.*'raking', 'raking_memoize', 'warp_scans'"),
        ("tiles.block_scan(x[i], block_dim=128, prefix=out, items_per_thread=2)", None,
         r"items_per_thread=2 needs an array input"),
        ("tiles.warp_scan(x, warp_size=8)", None, r"value has type array\(float32, 1d, A\), which is not supported"),
        ("tiles.warp_scan(x[i], warp_size=8, initial_value=x)", None, r"initial_value has type array"),
        # exchange, histogram, radix sort
        ("tiles.block_exchange(x, 'transpose', block_dim=128, items_per_thread=4)", None,
         r"arrangement='transpose' is not supported.*'striped_to_blocked'"),
        ("tiles.block_exchange(x, 'striped_to_blocked', block_dim=1024, items_per_thread=7)",
         "void(complex64[:], complex64[:], int64)", r"needs at least 57344 bytes of shared memory"),
        ("tiles.block_exchange(x, 'blocked_to_warp_striped', block_dim=(7, 9, 3), items_per_thread=4)", None,
         r"a warp-striped arrangement needs a block of whole warps, got 189 threads.*Fix: use a multiple of 32 "
         r"threads, or 'blocked_to_striped' or 'striped_to_blocked'"),
        ("tiles.block_exchange(x, 'warp_striped_to_blocked', block_dim=16, items_per_thread=2)", None,
         r"a warp-striped arrangement needs a block of whole warps, got 16 threads"),
        ("tiles.block_histogram(x, out, block_dim=128, items_per_thread=4, bins=256)", None,
         r"items holds float32, which is not supported here.*Fix: pass one of int8, .*uint64;"),
        ("tiles.block_histogram(x, out, block_dim=1024, items_per_thread=13, bins=256)",
         "void(int32[:], uint32[:], int64)", r"a tile of 1024 threads x 13 items needs at least 53248 bytes of shared "
         r"memory.*Fix: use fewer items_per_thread"),
        ("tiles.block_histogram(x, out, block_dim=128, items_per_thread=4, bins=256)",
         "void(uint8[:], int16[:], int64)", r"histogram holds int16.*Fix: use counters of int32, uint32, uint64"),
        ("tiles.block_histogram(x, out, block_dim=128, items_per_thread=4)", "void(uint8[:], uint32[:], int64)",
         r"missing a required argument: 'bins'"),
        ("tiles.block_histogram(x, out, block_dim=128, items_per_thread=4, bins=0)", "void(uint8[:], uint32[:], int64)",
         r"bins must be a positive int, got 0"),
        ("tiles.block_radix_sort(x, block_dim=128, items_per_thread=4)", "void(complex64[:], complex64[:], int64)",
         r"keys holds complex64, which is not supported here"),
        ("tiles.block_radix_sort(x, block_dim=128, items_per_thread=4, begin_bit=1.0)", None,
         r"begin_bit must be an integer, got float64"),
        ("tiles.block_radix_sort(x, block_dim=128, items_per_thread=4, descending='yes')", None,
         r"descending must be True or False"),
        # temp storage
        ("tiles.block_scan(x[i], block_dim=128, temp=n)", None,
         r"temp must be a 1-D array, got int64.*Fix: pass cuda.shared.array\(TEMP_BYTES, uint8\)"),
        ("tiles.block_sum(x[i], block_dim=128, temp=y)", "void(float32[:], uint8[:, :], int64)",
         r"temp must be a 1-D array, got array\(uint8, 2d"),
        ("tiles.block_exchange(x, 'blocked_to_striped', block_dim=128, items_per_thread=4, temp=out)",
         "void(float32[:], boolean[:], int64)", r"temp holds bool, which is not supported"),
        ("tiles.block_merge_sort(x, block_dim=(48, 2), items_per_thread=4)", None,
         r"merge sort needs a power-of-two number of threads, got 96.*Fix: launch 32"),
        # adjacent difference, discontinuity, shuffle
        ("tiles.block_adjacent_difference(x, block_dim=128, items_per_thread=4, right=True, neighbor=x[0], "
         "num_valid=n)", None, r"a right difference of a partial tile takes no neighbor.*Fix: leave out neighbor"),
        ("tiles.block_adjacent_difference(x, '&', block_dim=128, items_per_thread=4)", None,
         r"op '&' needs an integer dtype, got float32"),
        ("tiles.block_adjacent_difference(x, '/', block_dim=128, items_per_thread=4)", None,
         r"op '/' is not supported"),
        ("tiles.block_adjacent_difference(x[i], block_dim=128, items_per_thread=4)", None,
         r"items must be an array, got float32"),
        ("tiles.block_discontinuity(x, block_dim=128, items_per_thread=4)", None,
         r"it needs heads=, tails= or both"),
        ("tiles.block_discontinuity(x, block_dim=128, items_per_thread=4, tails=out, predecessor=x[0])",
         "void(int32[:], uint8[:], int64)", r"predecessor only decides the heads flag.*Fix: pass heads="),
        ("tiles.block_discontinuity(x, block_dim=128, items_per_thread=4, heads=out)", None,
         r"heads holds float32, which is not supported here.*Fix: pass one of int8"),
        ("tiles.block_discontinuity(x, block_dim=128, items_per_thread=4, heads=out, compare='<')",
         "void(int32[:], uint8[:], int64)", r"compare='<' is not supported.*Fix: pass '!='"),
        ("tiles.block_shuffle(x, 'offset', block_dim=128, items_per_thread=4)", None,
         r"kind 'offset' shuffles one value per thread, got array"),
        ("tiles.block_shuffle(x[i], 'up', block_dim=128)", None, r"kind 'up' shuffles a thread-local array"),
        ("tiles.block_shuffle(x[i], 'sideways', block_dim=128)", None,
         r"kind='sideways' is not supported.*'offset', 'rotate', 'up', 'down'"),
        ("tiles.block_shuffle(x, 'up', block_dim=128, items_per_thread=4, distance=2)", None,
         r"kind 'up' always moves items by one.*Fix: leave out distance"),
        ("tiles.block_shuffle(x[i], 'rotate', block_dim=128, distance=1.5)", None,
         r"distance must be an integer, got float64"),
        ("tiles.block_shuffle(x[i], 'rotate', block_dim=(7, 3), items_per_thread=2)", None,
         r"items_per_thread=2 needs an array input"),
        # user ops and comparisons
        ("tiles.block_reduce(x[i], absmax, block_dim=128, num_valid=n)", None,
         r"num_valid needs an op with an identity; absmax is a Python function"),
        ("tiles.warp_scan(x[i], absmax, num_valid=n)", None,
         r"num_valid needs an op with an identity; absmax is a Python function"),
        ("tiles.warp_scan(x[i], num_valid=1.5)", None, r"num_valid must be an integer, got float64"),
        ("tiles.block_scan(x[i], absmax, block_dim=128, exclusive=True)", None,
         r"an exclusive scan with a Python op \(absmax\) needs initial_value"),
        ("tiles.warp_reduce(x[i], absmax)", "void(float16[:], float16[:], int64)",
         r"a Python op \(absmax\) works on integers, float32 and float64, got float16"),
        ("tiles.block_merge_sort(x, '<=', block_dim=128, items_per_thread=4)", None,
         r"compare='<=' is not supported.*Fix: pass '<', '>' or a @cuda.jit\(device=True\) function"),
        ("tiles.block_merge_sort(x, block_dim=128, items_per_thread=4)", "void(complex128[:], complex128[:], int64)",
         r"keys holds complex128, which is not supported here"),
    ],
)
def test_misuse_is_a_clear_compile_time_error(body, sig, message):
    intrinsic = body.split("(")[0]
    with pytest.raises(TypingError) as info:
        compile_body(body, *(sig,) if sig else ())
    text = str(info.value)
    assert f"{intrinsic}:" in text
    assert "Fix:" in text
    assert re.search(message, text, re.S), text


def test_module_global_and_closure_constants_are_accepted():
    compile_body("tiles.block_sum(x[i], block_dim=BLOCK)")
    dims = (16, 8)

    def kernel(x, out):
        out[0] = tiles.block_reduce(x[cuda.grid(1)], "min", block_dim=dims)

    assert tiles.compile(kernel, "void(float64[:], float64[:])", arch="sm_90")



def test_storage_over_the_static_limit_is_an_error_with_its_exact_size():
    """A tile small enough for the typing estimate, whose CUB storage (run starts and ends per bin)
    is not: NVRTC sees it, and the error names the intrinsic and CUB's exact size."""
    def kernel(x, counts):
        items = cuda.local.array(4, uint16)
        tiles.block_histogram(items, counts, block_dim=128, items_per_thread=4, bins=8192)

    with pytest.raises(tiles.TilesError, match=r"tiles.block_histogram: its temp storage needs \d+ bytes of shared "
                       r"memory, over the 49152 a block can have statically.*Fix: use fewer items_per_thread"):
        tiles.compile(kernel, "void(uint16[::1], uint32[::1])", arch="sm_90")


@pytest.mark.parametrize("args,kwargs,message", [
    (("warp_sum", "float32"), {}, r"tiles.temp_bytes: 'warp_sum' takes no temp storage"),
    (("block_sum", "float32"), {"block_dim": 128, "temp": "uint8[::1]"}, r"leave temp out"),
    (("block_scan", "float32"), {"block_dim": 0}, r"tiles.block_scan: block_dim"),
])
def test_temp_bytes_misuse(args, kwargs, message):
    from numba import types

    def numba_type(name):
        return types.float32 if name == "float32" else types.uint8[::1]

    intrinsic = getattr(tiles, args[0])
    kwargs = {k: numba_type(v) if k == "temp" else v for k, v in kwargs.items()}
    with pytest.raises(tiles.TilesError, match=message):
        tiles.temp_bytes(intrinsic, numba_type(args[1]), **kwargs)


def test_a_failed_program_does_not_poison_later_kernels():
    """The load both kernels call was in the failed program; the next kernel compiles it afresh."""
    from numba import uint32

    def failing(x, counts):
        items = cuda.local.array(4, uint16)
        tiles.block_load(x, items, block_dim=128, items_per_thread=4, algorithm="transpose")
        tiles.block_histogram(items, counts, block_dim=128, items_per_thread=4, bins=8192)

    def sorting(x, counts):
        items = cuda.local.array(4, uint16)
        tiles.block_load(x, items, block_dim=128, items_per_thread=4, algorithm="transpose")
        tiles.block_radix_sort(items, block_dim=128, items_per_thread=4)
        counts[cuda.threadIdx.x] = uint32(items[0])

    with pytest.raises(tiles.TilesError, match="tiles.block_histogram: its temp storage needs"):
        tiles.compile(failing, "void(uint16[::1], uint32[::1])", arch="sm_80")
    assert tiles.compile(sorting, "void(uint16[::1], uint32[::1])", arch="sm_80")[:4] == b"\x7fELF"


def test_the_issue_reproducer_merge_sort_of_96_threads_then_a_radix_sort():
    """Issue 10's sequence: the merge sort is refused at typing, and the radix sort of the same block compiles."""

    def merge(x):
        items = cuda.local.array(1, float32)
        tiles.block_load(x, items, block_dim=96, items_per_thread=1)
        tiles.block_merge_sort(items, "<", block_dim=96, items_per_thread=1)

    def radix(x):
        items = cuda.local.array(1, float32)
        tiles.block_load(x, items, block_dim=96, items_per_thread=1)
        tiles.block_radix_sort(items, block_dim=96, items_per_thread=1)
        tiles.block_store(x, items, block_dim=96, items_per_thread=1)

    nvrtc = tiles.cache.stats()["nvrtc"]
    with pytest.raises(TypingError, match="tiles.block_merge_sort: CUB's merge sort needs a power-of-two number of "
                                          "threads, got 96"):
        tiles.compile(merge, "void(float32[::1])")
    assert tiles.cache.stats()["nvrtc"] == nvrtc, "refused after NVRTC ran"
    assert tiles.compile(radix, "void(float32[::1])")[:4] == b"\x7fELF"
