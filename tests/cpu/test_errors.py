"""Misuse fails at compile time with a message naming the intrinsic, the problem and the fix."""

import pytest
from numba import cuda, float32, uint16

import numba_tiles as tiles

from ..support import misuse


@pytest.mark.parametrize("index", range(len(misuse.CASES)), ids=[c.call for c in misuse.CASES])
def test_misuse_is_a_clear_compile_time_error(index):
    """The first line of the error is ours, the same as on the simulator (tests/simulator/test_errors_sim.py);
    the next ones say where the call is."""
    case = misuse.CASES[index]
    with pytest.raises(tiles.TilesError) as info:
        tiles.compile(misuse.kernel(case, index), case.sig, arch="sm_90")
    misuse.check(case, info.value)
    if case.compiled_only:  # (raised by NVRTC's answer, after typing: no call to point at)
        return
    where = str(info.value).splitlines()[2:]
    assert where == [f'File "<tiles misuse {index}>", line {3 + len(case.before)}, in kernel:', f"    {case.call}"], (
        str(info.value)
    )


WRONG_EXAMPLES = [
    # a float cast where only integers are taken (the histogram's fix as it was)
    "block_histogram: items holds float32, which is not supported here. Fix: pass one of int8, int16, int32, int64, "
    "uint8, uint16, uint32, uint64; cast first if needed, e.g. numba.float32(x).",
    # a value the parameter's own parser refuses (any compile-time constant's fix as it was)
    "warp_reduce: warp_size must be a compile-time constant, got a run-time value. Fix: write it as a literal or a "
    "module-level global, e.g. warp_size=256.",
    "block_sum: block_dim must be an int or a tuple of 1 to 3 ints, got 'x'. Fix: pass e.g. block_dim=128.0.",
    "block_load: items has 4 items but items_per_thread=8. Fix: make it at least items_per_thread long, e.g. "
    "cuda.local.array(4, dtype).",
    "block_sum: num_valid must be an integer, got float64. Fix: pass an int, e.g. num_valid=1.5.",
    "block_sum: value has type bool. Fix: cast it, e.g. with the right function.",  # (an example no rule reads)
]


@pytest.mark.parametrize("line", WRONG_EXAMPLES, ids=[line.split(".")[0] for line in WRONG_EXAMPLES])
def test_the_check_of_fix_examples_refuses_a_wrong_example(line):
    """misuse.check_fix_examples, which every misuse case's error passes, is a real check: it fails each of these."""
    with pytest.raises(AssertionError):
        misuse.check_fix_examples(getattr(tiles, line.split(":")[0]).spec, line)


RIGHT_EXAMPLES = {  # a fix → how many examples the check reads in it
    "block_sum: value has type bool. Fix: pass one of int8, int32, float32; cast first if needed, e.g. "
    "numba.float32(x).": 1,
    "warp_reduce: warp_size must be a compile-time constant. Fix: write it as a literal, e.g. warp_size=32.": 1,
    "block_sum: block_dim must be an int. Fix: pass the launch's block shape, e.g. block_dim=256 or "
    "block_dim=(16, 16).": 2,
}


def test_the_check_of_fix_examples_reads_right_ones_and_the_dtypes_each_fix_lists():
    for line, count in RIGHT_EXAMPLES.items():
        assert misuse.check_fix_examples(getattr(tiles, line.split(":")[0]).spec, line) == count
    histogram = (
        "block_histogram: items holds float32, which is not supported here. Fix: pass one of int8, uint8; use "
        "an array of one (copy the items into one if needed, e.g. cuda.local.array(n, numba.{}))."
    )
    assert misuse.check_fix_examples(tiles.block_histogram.spec, histogram.format("uint8")) == 1
    with pytest.raises(AssertionError):  # (an integer, but not one of those this fix lists)
        misuse.check_fix_examples(tiles.block_histogram.spec, histogram.format("int32"))


@pytest.mark.parametrize("index", range(len(misuse.ACCEPTED)), ids=[e for e, _ in misuse.ACCEPTED])
def test_constants_numba_types_as_constants_are_accepted(index):
    kernel = misuse.accepted_kernel(index)
    assert tiles.compile(kernel, "void(float32[::1], float32[::1], int64)", arch="sm_90")[:4] == b"\x7fELF"


def test_accepted_forms_of_constants_and_a_longer_local_array_compile():
    assert tiles.compile(misuse.accepted_forms(), "void(float32[::1], float32[:, ::1])", arch="sm_90")[:4] == b"\x7fELF"


def test_a_misuse_in_a_device_function_is_reported_at_its_line():
    @cuda.jit(device=True)
    def helper(v):
        return tiles.block_reduce(v, "&", block_dim=128)

    def kernel(x, out):
        out[0] = helper(x[cuda.grid(1)])

    with pytest.raises(tiles.TilesError) as info:
        tiles.compile(kernel, "void(float32[:], float32[:])")
    lines = str(info.value).splitlines()
    assert lines[0].startswith("tiles.block_reduce: op '&' needs an integer dtype, got float32. Fix: ")
    assert lines[2].endswith(
        f"line {helper.py_func.__code__.co_firstlineno + 2}, in "
        "test_a_misuse_in_a_device_function_is_reported_at_its_line.<locals>.helper:"
    )
    assert lines[3] == '    return tiles.block_reduce(v, "&", block_dim=128)'


@pytest.mark.parametrize(
    "args,kwargs,message",
    [
        (("warp_sum", "float32"), {}, r"tiles.temp_bytes: 'warp_sum' takes no temp storage"),
        (("block_sum", "float32"), {"block_dim": 128, "temp": "uint8[::1]"}, r"leave temp out"),
        (("block_scan", "float32"), {"block_dim": 0}, r"tiles.block_scan: block_dim"),
    ],
)
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
        tiles.block_histogram(items, counts, block_dim=128, items_per_thread=4, bins=8192, algorithm="sort")

    def sorting(x, counts):
        items = cuda.local.array(4, uint16)
        tiles.block_load(x, items, block_dim=128, items_per_thread=4, algorithm="transpose")
        tiles.block_radix_sort(items, block_dim=128, items_per_thread=4)
        counts[cuda.threadIdx.x] = uint32(items[0])

    with pytest.raises(tiles.TilesError, match="tiles.block_histogram: its temp storage needs"):
        tiles.compile(failing, "void(uint16[::1], uint32[::1])", arch="sm_80")
    assert tiles.compile(sorting, "void(uint16[::1], uint32[::1])", arch="sm_80")[:4] == b"\x7fELF"


def test_a_refused_merge_sort_runs_no_nvrtc_and_a_radix_sort_of_its_block_compiles():
    """The merge sort of 96 threads is refused at typing, and the radix sort of the same block compiles."""

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
    with pytest.raises(
        tiles.TilesError,
        match="^tiles.block_merge_sort: CUB's merge sort needs a power-of-two number of threads, got 96",
    ):
        tiles.compile(merge, "void(float32[::1])")
    assert tiles.cache.stats()["nvrtc"] == nvrtc, "refused after NVRTC ran"
    assert tiles.compile(radix, "void(float32[::1])")[:4] == b"\x7fELF"


def test_histogram_lanes_with_more_bins_than_its_copies_fit_names_the_fix():
    """ "lanes" keeps 32 copies of the counters in shared memory: 512 bins need 64 KiB, refused at typing with the
    algorithm that serves; by default such a histogram is "atomic", and compiles."""
    from numba import uint32

    def lanes(x, counts):
        items = cuda.local.array(4, uint16)
        tiles.block_load(x, items, block_dim=128, items_per_thread=4)
        tiles.block_histogram(items, counts, block_dim=128, items_per_thread=4, bins=512, algorithm="lanes")

    def default(x, counts):
        items = cuda.local.array(4, uint16)
        tiles.block_load(x, items, block_dim=128, items_per_thread=4)
        tiles.block_histogram(items, counts, block_dim=128, items_per_thread=4, bins=512)
        counts[0] = uint32(items[0])

    with pytest.raises(
        tiles.TilesError,
        match=r"tiles.block_histogram: algorithm='lanes' keeps 32 copies of the 512 "
        r"counters: with the counters themselves 69632 bytes, .* Fix: use "
        r"algorithm='atomic'",
    ):
        tiles.compile(lanes, "void(uint16[::1], uint32[::1])", arch="sm_90")
    assert tiles.compile(default, "void(uint16[::1], uint32[::1])", arch="sm_90")[:4] == b"\x7fELF"
