"""What the block collectives' rules share: the block's shape and threads, the thread-local arrays' dtypes, and the
check that a tile fits in shared memory."""

from numba.cuda import types

from . import extending as ext
from .extending import STATIC_SHARED_BYTES

DIM = ext.block_dim
ITEMS = ext.positive_int("items_per_thread", 4)
ITEMS_OPTIONAL = ext.positive_int("items_per_thread", 4, optional=True)


def block_shape(args):
    """The block shape as the C++ templates name it."""
    return dict(zip(("BX", "BY", "BZ"), args["block_dim"]))


def block_threads(args):
    x, y, z = args["block_dim"]
    return x * y * z


def tile_dtype(name, args, param, like=None, allowed=None):
    """The `Dtype` of a thread-local (or global) array argument ``param``; ``like`` = the dtype it must share."""
    ty = args[param]
    if not isinstance(ty, types.Array):
        raise ext.error(
            name,
            f"{param} must be an array, got {ty}",
            f"pass a thread-local array, cuda.local.array(items_per_thread, dtype), as {param}",
        )
    dtype = ext.element(name, param, ty, allowed)
    if like is not None and dtype != like:
        raise ext.error(
            name,
            f"{param} holds {dtype.name} but the other array holds {like.name}",
            "use arrays of one dtype (cast the items first)",
        )
    return dtype


def value_dtype(name, args):
    """(dtype, entry type, items per thread) of a ``value`` that is a scalar or a thread-local array."""
    value, items = args["value"], args["items_per_thread"]
    dtype = ext.element(name, "value", value)
    if isinstance(value, types.Array):
        if items is None:
            raise ext.error(
                name,
                "an array input needs items_per_thread",
                "pass items_per_thread=N, the number of items each thread holds",
            )
        return dtype, value, items
    if items not in (None, 1):
        raise ext.error(
            name,
            f"items_per_thread={items} needs an array input, got a scalar {value}",
            "pass the thread-local array (cuda.local.array(items_per_thread, dtype))",
        )
    return dtype, dtype.numba, 1


def check_shared(name, args, *arrays):
    """Reject at typing a tile that cannot fit in static shared memory: the collectives that stage it
    there (transposes, exchanges, sorts) need at least its bytes. (NVRTC checks CUB's exact size later.)"""
    need = block_threads(args) * args["items_per_thread"] * sum(d.numpy.itemsize for d in arrays)
    if need > STATIC_SHARED_BYTES:
        raise ext.error(
            name,
            f"a tile of {block_threads(args)} threads x {args['items_per_thread']} items needs "
            f"at least {need} bytes of shared memory, over the {STATIC_SHARED_BYTES} a block can have",
            "use fewer items_per_thread or threads, or a smaller dtype",
        )


def cub_names(prefix, *names):
    """{name: its CUB enumerator}: ``cub_names("BLOCK_SCAN", "raking")`` is ``{"raking": "cub::BLOCK_SCAN_RAKING"}``."""
    return {name: f"cub::{prefix}_{name.upper()}" for name in names}


MOVE_CONSTS = {"block_dim": DIM, "items_per_thread": ITEMS}  # (the tile's shape: load, store, exchange, sorts, ...)
