"""Parsers of compile-time parameters: each takes (intrinsic name, Python value) and returns the
parsed value or raises a `TilesError` that names the intrinsic and the fix."""

from ._errors import error

MAX_THREADS = 1024  # CUDA's threads per block
_LIMITS = (1024, 1024, 64)  # CUDA's per-dimension block limits


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def block_dim(intrinsic, value):
    """``256`` or ``(16, 16)`` or ``(8, 8, 4)`` → ``(x, y, z)``, checked against CUDA's limits.

    Example::

        from numba_tiles import extending as ext

        assert ext.block_dim("block_sum_of_squares", (16, 16)) == (16, 16, 1)
    """
    dims = value if isinstance(value, tuple) else (value,)
    if not (1 <= len(dims) <= 3 and all(map(_is_int, dims))):
        raise error(
            intrinsic,
            f"block_dim must be an int or a tuple of 1 to 3 ints, got {value!r}",
            "pass the launch's block shape, e.g. block_dim=256 or block_dim=(16, 16)",
        )
    dims = tuple(dims) + (1,) * (3 - len(dims))
    threads = dims[0] * dims[1] * dims[2]
    if min(dims) < 1 or threads > MAX_THREADS or any(d > lim for d, lim in zip(dims, _LIMITS)):
        raise error(
            intrinsic,
            f"block_dim={value!r} is not a valid CUDA block ({threads} threads)",
            f"use at most {MAX_THREADS} threads in all, each dimension within {_LIMITS}",
        )
    return dims


def positive_int(param, example, optional=False, largest=None):
    """A parser for a positive int constant (or None when ``optional``), at most ``largest``; ``example`` is the
    value its error's fix shows.

    Example::

        from numba_tiles import extending as ext

        items_per_thread = ext.positive_int("items_per_thread", 4, largest=64)
        assert items_per_thread("block_top", 8) == 8
    """

    def parse(intrinsic, value):
        if value is None and optional:
            return None
        if not _is_int(value) or value < 1 or (largest is not None and value > largest):
            bound = f" no larger than {largest}" if largest else ""
            raise error(intrinsic, f"{param} must be a positive int{bound}, got {value!r}", f"pass {param}={example}")
        return value

    parse.example = example  # (what a fix that names no value of its own may show: `_spec.Spec._example`)
    return parse


def count(param, example):
    """A parser for a non-negative int constant; ``example`` is the value its error's fix shows.

    Example::

        from numba_tiles import extending as ext

        assert ext.count("distance", 1)("block_shift", 0) == 0
    """

    def parse(intrinsic, value):
        if not _is_int(value) or value < 0:
            raise error(intrinsic, f"{param} must be a non-negative int, got {value!r}", f"pass {param}={example}")
        return value

    parse.example = example
    return parse


def warp_size(intrinsic, value):
    """A logical warp size: a power of two from 1 to 32.

    Example::

        from numba_tiles import extending as ext

        assert ext.warp_size("warp_argmax", 16) == 16
    """
    if not _is_int(value) or value not in (1, 2, 4, 8, 16, 32):
        raise error(
            intrinsic,
            f"warp_size must be a power of two from 1 to 32, got {value!r}",
            "pass warp_size=32 (the default), 16, 8, 4, 2 or 1",
        )
    return value


def choice(param, options, optional=False):
    """A parser for one of the keys of ``options`` (a dict name → C++ spelling); returns the name (or None, left
    out, where ``optional``: the rule chooses).

    Example::

        from numba_tiles import extending as ext

        ALGORITHMS = {"raking": "cub::BLOCK_SCAN_RAKING", "warp_scans": "cub::BLOCK_SCAN_WARP_SCANS"}
        algorithm = ext.choice("algorithm", ALGORITHMS)
        assert ALGORITHMS[algorithm("block_running_sum", "raking")] == "cub::BLOCK_SCAN_RAKING"
    """

    def parse(intrinsic, value):
        if value is None and optional:
            return None
        if value not in options:
            raise error(intrinsic, f"{param}={value!r} is not supported", f"use one of {', '.join(map(repr, options))}")
        return value

    return parse


def flag(param):
    """A parser for a True/False constant.

    Example::

        from numba_tiles import extending as ext

        assert ext.flag("descending")("block_top", True) is True
    """

    def parse(intrinsic, value):
        if not isinstance(value, bool):
            raise error(
                intrinsic, f"{param} must be True or False, got {value!r}", f"pass {param}=True or leave it out"
            )
        return value

    return parse


# The rearrangements block_exchange performs, as (from, to) arrangements: what the spec accepts,
# what its C++ enum names (numba_tiles::exchange::<name>) and what the simulator moves.
ARRANGEMENTS = {
    "striped_to_blocked": ("striped", "blocked"),
    "blocked_to_striped": ("blocked", "striped"),
    "warp_striped_to_blocked": ("warp_striped", "blocked"),
    "blocked_to_warp_striped": ("blocked", "warp_striped"),
}

# The text of parameters many intrinsics share: a docstring line ``{{name}}`` becomes this.
DOCS = {
    "block_dim": (
        "- ``block_dim``: the block shape the kernel is launched with, an int or a 2-/3-tuple; a\n"
        "      compile-time constant (a literal or a module-level global)."
    ),
    "items_per_thread": (
        "- ``items_per_thread``: the thread-local array's length, a compile-time constant; the block's\n"
        "      tile is in blocked arrangement (thread t holds items t*N ... t*N+N-1)."
    ),
    "temp": (
        "- ``temp``: a buffer for CUB's temp storage, ``cuda.shared.array(n, uint8)`` with ``n`` from\n"
        "      `temp_bytes`, which sequential calls may share; by default the call has its own."
    ),
}
