"""``--sanitize-subset`` (what `make gpu-sanitize` runs under compute-sanitizer): of each test, the
cases that give each of its shape parameters (algorithm, block shape, items per thread, num_valid,
arrangement, tile, precision, ...) every value once, with whatever dtype and op come with them: every
intrinsic and algorithm runs, and the temp-sharing and back-to-back tests whole. Tests that stop a
kernel on purpose (a trap is what compute-sanitizer reports) are left out."""


def pytest_addoption(parser):
    parser.addoption(
        "--sanitize-subset", action="store_true", help="a representative subset of the GPU tests, for compute-sanitizer"
    )
    parser.addoption(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only every N-th of the selected tests, from the I-th (0-based): one process "
        "a shard, several processes under compute-sanitizer at once",
    )


ON_PURPOSE = ("stops_with_a_message", "traps_on", "stops_the_kernel")
VALUE_ONLY = ("rng", "dtype", "op", "counter", "flag_dtype", "initial", "compare")  # not shapes: any one serves


def pytest_collection_modifyitems(config, items):
    if config.getoption("--sanitize-subset"):
        _keep(config, items, _representative(items))
    if config.getoption("--shard"):
        index, count = map(int, config.getoption("--shard").split("/"))
        _keep(config, items, items[index::count])


def _keep(config, items, kept):
    config.hook.pytest_deselected(items=[i for i in items if i not in kept])
    items[:] = kept


def _representative(items):
    kept, seen = [], set()
    for item in items:
        name = item.originalname if hasattr(item, "originalname") else item.name
        if any(mark in name for mark in ON_PURPOSE):
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        function = (item.module.__name__, name)
        values = {(function, p, repr(v)) for p, v in params.items() if p not in VALUE_ONLY} | {function}
        if not values <= seen:
            kept.append(item)
            seen |= values
    return kept
