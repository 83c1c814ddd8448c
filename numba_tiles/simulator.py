"""Pure-Python twins of the intrinsics, for Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).

Each twin runs in one simulated thread, exchanges values with the other threads of its block
(through the simulator's block barrier) or of its logical warp (through a barrier of that
warp's own), and returns what that thread gets on the GPU. Arithmetic is NumPy's in the
intrinsic's dtype, so integers wrap as on the GPU.
"""

import math
import threading
import time

import numpy as np

from . import _params
from ._backends import simulated
from ._errors import error


def _thread(intrinsic):
    """The simulated thread calling ``intrinsic``."""
    thread = simulated.simulated_thread()
    if thread is None:
        raise RuntimeError(
            f"tiles.{intrinsic} runs only inside a @cuda.jit kernel: compiled for a GPU, "
            "or on Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
        )
    return thread


def block_thread(intrinsic, block_dim):
    """The simulated thread calling a block-level ``intrinsic``, after checking the launch's block shape and that
    every thread of the block makes this call."""
    thread = _thread(intrinsic)
    launched = simulated.simulated_block_dim(thread)
    if launched != block_dim:
        raise error(
            intrinsic,
            f"block_dim={block_dim} but the kernel was launched with blocks of {launched}",
            "pass the launch's block shape as block_dim (on the GPU this mismatch gives wrong results)",
        )
    _meet_block(thread, intrinsic)
    return thread


def _exchange(thread, value):
    """Every thread's value, in linear thread order (x fastest), as seen after a barrier."""
    slots = simulated.block_scratch(thread).setdefault("slots", {})
    slots[thread.thread_id] = value
    thread.syncthreads()
    values = [slots[i] for i in range(len(slots))]
    thread.syncthreads()  # nobody overwrites a slot before everyone has read them all
    return values


# --- every thread of the block (or lane of the logical warp) makes a collective call -------------------
#
# On the GPU a collective that only some threads reach hangs or gives garbage; here the threads that arrive
# would simply meet among themselves. So each call first checks who came: every thread notes the call site
# (the Python stack of the call) of its n-th collective call, and after a barrier they compare.

_SITE = "_numba_tiles_site"  # (a simulated thread's attribute) the call it makes: (stack, "file:line")


def note_call(frame):
    """Record, in the simulated thread running ``frame`` (the caller of an intrinsic), where the call is made."""
    thread = simulated.simulated_thread()
    if thread is not None:
        stack, f = [], frame
        while f is not None:  # (a device function called from two places is two call sites)
            stack.append((f.f_code, f.f_lasti))
            f = f.f_back
        setattr(thread, _SITE, (tuple(stack), f"{frame.f_code.co_filename}:{frame.f_lineno}"))


def _site(thread):
    return getattr(thread, _SITE, ((), "?"))


def _count(thread, counter):
    """The calling thread's next number on ``counter`` (its n-th block call, its n-th warp call)."""
    n = thread.__dict__.get(counter, 0) + 1
    setattr(thread, counter, n)
    return n


def _not_all_there(intrinsic, where, arrived, size, whom, others):
    """The error of a collective reached at ``where`` by only ``arrived`` of the ``size`` threads of ``whom``;
    ``others``: the call sites that some of them reached instead."""
    instead = f" ({len(others)} reached another call instead, at {others[0]})" if others else ""
    return error(
        intrinsic,
        f"called at {where} by {arrived} of the {size} threads of {whom}{instead}; every thread must make the "
        "call (on the GPU this hangs or gives garbage)",
        "call it outside the branch, giving threads without data a neutral value (0 for a sum), and return only "
        "after it, not before",
    )


def _meet_block(thread, intrinsic):
    """Check, with one barrier, that every thread of the block makes this call."""
    n = _count(thread, "_numba_tiles_block_calls")
    meetings = simulated.block_scratch(thread).setdefault("meetings", {})
    meetings.setdefault(n, {})[thread.thread_id] = _site(thread)
    # A thread at meeting n has passed meeting n - 1's barrier, which every thread reached after checking n - 2.
    meetings.pop(n - 2, None)
    thread.syncthreads()
    size = math.prod(simulated.simulated_block_dim(thread))
    stack, where = _site(thread)
    sites = list(meetings[n].values())
    arrived = sum(1 for s, _ in sites if s == stack)
    if arrived != size:
        raise _not_all_there(
            intrinsic, where, arrived, size, f"block {tuple(thread.blockIdx)}", [w for s, w in sites if s != stack]
        )


_warp_lock = threading.Lock()
# How long a lane whose thread may not have started yet can take to come (see _stuck). The simulator starts a block's
# threads one after the other in the launching thread, which on a loaded machine (two test workers, a notebook's
# kernel) took over 2 s to reach the last warp: a correct kernel's warp call was then reported as divergent.
_GRACE_S = 10.0


def _warp_meet(thread, intrinsic, width, value):
    """The values of the calling thread's logical warp (``width`` lanes, linear thread order), and its lane.

    Only the lanes of one logical warp meet here (as on the GPU, other warps need not call), so they wait on a
    condition of their own rather than the block's barrier. A lane that cannot come (it returned, or waits at a
    block barrier or at another warp call) makes this an error, not a hang."""
    group, lane = divmod(thread.thread_id, width)
    size = min(width, math.prod(simulated.simulated_block_dim(thread)) - group * width)
    with _warp_lock:
        meeting = (
            simulated.block_scratch(thread)
            .setdefault("warps", {})
            .setdefault((width, group), {"cond": threading.Condition(), "calls": {}})
        )
    n = _count(thread, "_numba_tiles_warp_calls")
    stack, where = _site(thread)
    whom = f"logical warp {group} (warp_size={width}) of block {tuple(thread.blockIdx)}"
    with meeting["cond"]:
        slots = meeting["calls"].setdefault(n, {})
        slots[lane] = (stack, where, value)
        meeting["calls"].pop(n - 2, None)  # (as for the block's meetings)
        meeting["cond"].notify_all()
        thread._numba_tiles_waiting = ((width, group), n, slots, size)
        started = time.monotonic()
        try:
            while True:
                others = [w for s, w, _ in slots.values() if s != stack]
                if others:
                    raise _not_all_there(intrinsic, where, len(slots) - len(others), size, whom, others)
                if len(slots) == size:
                    break
                missing = [i for i in range(size) if i not in slots]
                if _stuck(thread, width, group, missing, time.monotonic() - started):
                    raise _not_all_there(intrinsic, where, len(slots), size, whom, [])
                meeting["cond"].wait(0.005)
        finally:
            thread._numba_tiles_waiting = None
        return [slots[i][2] for i in range(size)], lane


def _stuck(thread, width, group, missing, waited):
    """Whether the lanes of ``missing`` cannot come to the calling lane's warp call: each one's thread has ended, or
    waits at a block barrier or at another call of this logical warp; or every thread of the block waits."""
    dims = simulated.simulated_block_dim(thread)
    running = {
        t.thread_id: t
        for t in threading.enumerate()
        if getattr(t, "_manager", None) is thread._manager and t.is_alive()
    }

    def waiting(t):  # at a block barrier, or at a warp call that lacks lanes (the key of its logical warp)
        if t.syncthreads_blocked:  # (at a barrier the caller has passed, it is being released: it will come)
            return "block" if simulated.barriers_entered(t) > simulated.barriers_entered(thread) else None
        key, _, slots, size = getattr(t, "_numba_tiles_waiting", None) or (None, 0, (), 0)
        return key if key is not None and len(slots) < size else None

    # The simulator starts the threads in np.ndindex order over (x, y, z): a lane with no running thread has
    # ended if a thread started after it runs; else it may not have started yet.
    started = max(np.ravel_multi_index(tuple(t.threadIdx), dims) for t in running.values())

    def cannot_come(lane):
        tid = group * width + lane
        other = running.get(tid)
        if other is None:
            x, rest = tid % dims[0], tid // dims[0]
            return np.ravel_multi_index((x, rest % dims[1], rest // dims[1]), dims) < started or waited > _GRACE_S
        return waiting(other) in ("block", (width, group))

    if all(map(cannot_come, missing)):  # (not just any: the count in the error includes every lane that comes)
        return True
    # (after the grace period: threads not started yet are not among the running ones)
    return waited > _GRACE_S and all(waiting(t) is not None for t in running.values())


def simulated_block(intrinsic, block_dim, value):
    """In a simulator twin of a block intrinsic: every thread's ``value`` in linear thread order (x fastest)
    and the calling thread's rank. Every thread of the block must call it; ``block_dim`` (parsed) is
    checked against the launch. Public as ``numba_tiles.extending.simulated_block``.

    Example (the twin of a block-wide sum, valid in thread 0)::

        def simulate(instance, args):
            values, rank = ext.simulated_block(instance.intrinsic, args["block_dim"], args["value"])
            return sum(values) if rank == 0 else 0
    """
    thread = block_thread(intrinsic, block_dim)
    return _exchange(thread, value), thread.thread_id


def simulated_warp(intrinsic, warp_size, value):
    """In a simulator twin of a warp intrinsic: the ``value`` of every lane of the calling thread's logical
    warp of ``warp_size`` lanes, and the calling lane. Public as ``numba_tiles.extending.simulated_warp``.

    Example::

        def simulate(instance, args):
            values, lane = ext.simulated_warp(instance.intrinsic, args["warp_size"], args["value"])
            return max(values)
    """
    return _warp_meet(_thread(intrinsic), intrinsic, warp_size, value)


def _reduce(instance, args, tiles_, position):
    """What the thread at ``position`` gets: the aggregate of all items at 0 (everywhere with
    broadcast); elsewhere, as a stand-in for CUB's unspecified value, the reduction of its own items."""
    dtype = np.dtype(str(instance.result))
    items = np.array([item for tile in tiles_ for item in tile], dtype=dtype)
    num_valid = args["num_valid"]
    count = len(items) if num_valid is None else min(max(int(num_valid), 0), len(items))
    op = args["op"]
    if position == 0 or args.get("broadcast"):
        return dtype.type(op.ufunc.reduce(items[:count], dtype=dtype) if count else op.identity(dtype))
    return dtype.type(op.ufunc.reduce(np.array(tiles_[position], dtype=dtype), dtype=dtype))


def _items(value, count):
    """The calling thread's items: its scalar, or the first ``count`` (items_per_thread) of its array (which the
    spec checked is long enough)."""
    if not isinstance(value, np.ndarray):
        return [value]
    return list(value[: count or 1])


def block_reduce(instance, args):
    mine = _items(args["value"], args["items_per_thread"])
    return _reduce(instance, args, *simulated_block(instance.intrinsic, args["block_dim"], mine))


def warp_reduce(instance, args):
    return _reduce(instance, args, *simulated_warp(instance.intrinsic, args["warp_size"], [args["value"]]))


def _rank(kind, tid, j, threads, items):
    """The tile position of item ``j`` of thread ``tid`` in an arrangement (blocked, striped, warp_striped)."""
    if kind == "striped":
        return tid + j * threads
    if kind == "warp_striped":
        warp, lane = divmod(tid, 32)
        return warp * 32 * items + lane + j * 32
    return tid * items + j


def _valid(args, array):
    """How many items of the tile exist: num_valid if given, never more than the array holds."""
    num_valid = args["num_valid"]
    valid = len(array) if num_valid is None else min(int(num_valid), len(array))
    return max(valid, 0)


def _threads(args):
    return int(np.prod(args["block_dim"]))


def _move(instance, args, array, load):
    """block_load (``load``) or block_store between ``args[array]`` and the thread's items."""
    thread = block_thread(instance.intrinsic, args["block_dim"])
    memory, items, count = args[array], args["items"], args["items_per_thread"]
    kind = "striped" if args["algorithm"] == "striped" else "blocked"
    valid = _valid(args, memory)
    for j in range(count):
        rank = _rank(kind, thread.thread_id, j, _threads(args), count)
        if rank >= valid:
            if load and args["oob_default"] is not None:
                items[j] = args["oob_default"]
        elif load:
            items[j] = memory[rank]
        else:
            memory[rank] = items[j]


def block_load(instance, args):
    _move(instance, args, "src", load=True)


def block_store(instance, args):
    _move(instance, args, "dst", load=False)


def _scan(op, dtype, flat, exclusive, initial):
    """Inclusive (or exclusive) scan of ``flat`` in ``dtype``, from ``initial`` when it is not None."""
    values = np.array(flat, dtype=dtype)
    if initial is not None:
        values = np.concatenate([np.array([initial], dtype=dtype), values])
    scanned = op.ufunc.accumulate(values, dtype=dtype) if len(values) else values
    if exclusive:
        return scanned[:-1]
    return scanned[1:] if initial is not None else scanned


def _entry_dtype(instance):
    ty = instance.param_type("value")
    return np.dtype(str(getattr(ty, "dtype", ty)))


def block_scan(instance, args):
    thread = block_thread(instance.intrinsic, args["block_dim"])
    dtype = _entry_dtype(instance)
    mine = _items(args["value"], args["items_per_thread"])
    tiles_ = _exchange(thread, mine)
    op, prefix = args["op"], args["prefix"]
    flat = [item for tile in tiles_ for item in tile]
    initial = prefix[0] if prefix is not None else args["initial_value"]
    if initial is None and args["exclusive"]:
        initial = op.identity(dtype)
    scanned = _scan(op, dtype, flat, args["exclusive"], initial)
    aggregate = dtype.type(op.ufunc.reduce(np.array(flat, dtype=dtype), dtype=dtype))
    start = thread.thread_id * len(mine)
    out = scanned[start : start + len(mine)]
    if prefix is not None:
        thread.syncthreads()  # every thread has read the old prefix
        prefix[0] = op.ufunc(dtype.type(prefix[0]), aggregate, dtype=dtype)
    if isinstance(args["value"], np.ndarray):
        args["value"][: len(out)] = out
        return aggregate if args["aggregate"] else None
    return (out[0], aggregate) if args["aggregate"] else out[0]


def warp_scan(instance, args):
    dtype = _entry_dtype(instance)
    values, lane = simulated_warp(instance.intrinsic, args["warp_size"], args["value"])
    op, initial = args["op"], args["initial_value"]
    if args["num_valid"] is not None:
        valid = max(int(args["num_valid"]), 0)
        values = values[:valid] + [op.identity(dtype)] * (len(values) - min(valid, len(values)))
    if initial is None and args["exclusive"]:
        initial = op.identity(dtype)
    out = _scan(op, dtype, values, args["exclusive"], initial)[lane]
    aggregate = dtype.type(op.ufunc.reduce(np.array(values, dtype=dtype), dtype=dtype))
    return (out, aggregate) if args["aggregate"] else out


def _rearrange(thread, args, arrays, source, target):
    """Move the tile held in ``arrays`` (thread-local, same length) from one arrangement to another."""
    count, threads = args["items_per_thread"], _threads(args)
    tiles_ = _exchange(thread, [list(a[:count]) for a in arrays])
    tile = {}
    for tid, held in enumerate(tiles_):
        for j in range(count):
            tile[_rank(source, tid, j, threads, count)] = tuple(a[j] for a in held)
    for j in range(count):
        for a, value in zip(arrays, tile[_rank(target, thread.thread_id, j, threads, count)]):
            a[j] = value


def block_exchange(instance, args):
    thread = block_thread(instance.intrinsic, args["block_dim"])
    _rearrange(thread, args, [args["items"]], *_params.ARRANGEMENTS[args["arrangement"]])


def block_histogram(instance, args):
    thread = block_thread(instance.intrinsic, args["block_dim"])
    tiles_ = _exchange(thread, _items(args["items"], args["items_per_thread"]))
    histogram, bins = args["histogram"], args["bins"]
    if thread.thread_id == 0:
        samples = [int(v) for tile in tiles_ for v in tile]
        if any(not 0 <= v < bins for v in samples):
            raise error(instance.intrinsic, f"an item is outside [0, {bins})", "pass bin indices")
        counts = np.bincount(samples, minlength=bins)
        histogram[:bins] = counts.astype(histogram.dtype) + (histogram[:bins] if args["accumulate"] else 0)
    thread.syncthreads()


def _ordered_bits(dtype, values):
    """Keys as the unsigned integers CUB's radix sort orders (floats: -0.0 as +0.0, negatives flipped)."""
    values = np.asarray(values, dtype=dtype)
    bits = values.view(f"u{dtype.itemsize}").astype(np.uint64)
    sign = np.uint64(1) << np.uint64(8 * dtype.itemsize - 1)
    if dtype.kind == "f":
        bits = np.where(values == 0, np.uint64(0), bits)
        negative = (bits & sign) != 0
        full = np.uint64((1 << (8 * dtype.itemsize)) - 1)
        return np.where(negative, ~bits & full, bits | sign)
    return bits ^ sign if dtype.kind == "i" else bits


def _sort(instance, args, order):
    """What the sorts share: gather the block's (key[, value]) tile in blocked order, let ``order``
    put it in sorted order (a list of items), and give each thread its ranks (blocked, or striped)."""
    thread = block_thread(instance.intrinsic, args["block_dim"])
    count, threads = args["items_per_thread"], _threads(args)
    arrays = [args["keys"]] + ([args["values"]] if args["values"] is not None else [])
    tiles_ = _exchange(thread, [[tuple(a[j] for a in arrays) for j in range(count)]])
    ordered = order([item for (held,) in tiles_ for item in held])
    kind = "striped" if args.get("striped") else "blocked"
    for j in range(count):
        for a, value in zip(arrays, ordered[_rank(kind, thread.thread_id, j, threads, count)]):
            a[j] = value


def block_radix_sort(instance, args):
    dtype = args["keys"].dtype
    begin = 0 if args["begin_bit"] is None else int(args["begin_bit"])
    end = 8 * dtype.itemsize if args["end_bit"] is None else int(args["end_bit"])

    def order(tile):
        bits = _ordered_bits(dtype, [item[0] for item in tile])
        digits = (bits >> np.uint64(begin)) & np.uint64((1 << (end - begin)) - 1)
        return [tile[i] for i in sorted(range(len(tile)), key=lambda i: int(digits[i]), reverse=args["descending"])]

    _sort(instance, args, order)


def block_merge_sort(instance, args):
    import functools

    less = args["compare"].py_func
    by_key = functools.cmp_to_key(lambda a, b: -1 if less(a[0], b[0]) else (1 if less(b[0], a[0]) else 0))
    _sort(instance, args, lambda tile: sorted(tile, key=by_key))  # sorted() is stable, like the GPU's


def _block_tile(instance, args, param="items"):
    """(thread, the block's whole tile in rank order, this thread's first rank, items per thread)."""
    thread = block_thread(instance.intrinsic, args["block_dim"])
    count = args["items_per_thread"] or 1
    mine = _items(args[param], count)
    tile = [item for held in _exchange(thread, mine) for item in held]
    return thread, np.array(tile, dtype=np.asarray(args[param]).dtype), thread.thread_id * count, count


def block_adjacent_difference(instance, args):
    thread, tile, start, count = _block_tile(instance, args)
    op, right, neighbor = args["op"], args["right"], args["neighbor"]
    n = len(tile)
    valid = n if args["num_valid"] is None else min(max(int(args["num_valid"]), 0), n)
    out = tile.copy()
    for i in range(valid):
        other = i + 1 if right else i - 1
        if 0 <= other < valid:
            out[i] = op.ufunc(tile[i], tile[other], dtype=tile.dtype)
        elif neighbor is not None and (i == 0 if not right else i == n - 1):
            out[i] = op.ufunc(tile[i], tile.dtype.type(neighbor), dtype=tile.dtype)
    args["items"][:count] = out[start : start + count]


def block_discontinuity(instance, args):
    thread, tile, start, count = _block_tile(instance, args)
    differ = args["compare"].py_func
    before = [args["predecessor"]] + list(tile[:-1])
    after = list(tile[1:]) + [args["successor"]]
    for j in range(count):
        i = start + j
        if args["heads"] is not None:
            args["heads"][j] = 1 if before[i] is None else int(bool(differ(before[i], tile[i])))
        if args["tails"] is not None:
            args["tails"][j] = 1 if after[i] is None else int(bool(differ(tile[i], after[i])))


def block_shuffle(instance, args):
    thread, tile, start, count = _block_tile(instance, args, "value")
    kind = args["kind"]
    if kind in ("offset", "rotate"):
        distance = 1 if args["distance"] is None else int(args["distance"])
        source = thread.thread_id + distance
        if kind == "rotate":
            source %= len(tile)
        return tile[source] if 0 <= source < len(tile) else tile[thread.thread_id]
    moved = tile.copy()
    if kind == "up":
        moved[1:] = tile[:-1]
    else:
        moved[:-1] = tile[1:]
    args["value"][:count] = moved[start : start + count]
    return tile[-1] if kind == "up" else tile[0]


# --- 2-D tiles and matmul: thread 0 does the block's work between two barriers ------------------


def by_first_thread(instance, args, work):
    thread = block_thread(instance.intrinsic, args["block_dim"])
    thread.syncthreads()  # every thread has come (and written its part of the inputs)
    if thread.thread_id == 0:
        work()
    thread.syncthreads()  # as on the GPU, the call ends with a barrier


def tile_window(matrix, row, col, shape):
    """The part of ``matrix`` under a tile of ``shape`` at (row, col), and where it lies in the tile."""
    r0, c0 = max(int(row), 0), max(int(col), 0)
    r1, c1 = min(int(row) + shape[0], matrix.shape[0]), min(int(col) + shape[1], matrix.shape[1])
    if r1 <= r0 or c1 <= c0:
        return None, None
    return (slice(r0, r1), slice(c0, c1)), (slice(r0 - int(row), r1 - int(row)), slice(c0 - int(col), c1 - int(col)))


def tile_load(instance, args):
    def work():
        src, tile = args["src"], args["tile"]
        tile[...] = args["fill"]
        inside, part = tile_window(src, args["row"], args["col"], tile.shape)
        if inside is not None:
            tile[part] = src[inside]

    by_first_thread(instance, args, work)


def tile_wait(instance, args):
    by_first_thread(instance, args, lambda: None)  # the simulator's loads are done when they return


def tile_store(instance, args):
    def work():
        tile, dst = args["tile"], args["dst"]
        inside, part = tile_window(dst, args["row"], args["col"], tile.shape)
        if inside is not None:
            dst[inside] = tile[part]

    by_first_thread(instance, args, work)
