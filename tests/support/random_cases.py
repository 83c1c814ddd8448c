"""Seeded random configurations of every intrinsic over odd block shapes, and batched kernels that run them.

A `Case` is one configuration of one family of intrinsics (``load_store`` is block_load then block_store;
``reduce`` is block_reduce or block_sum; ...): its block shape, dtype and compile-time parameters. `generate`
draws them from a seed: each parameter's options are dealt like a shuffled deck, so every block shape,
items_per_thread, algorithm and dtype gets its turn, in a random order and combination. The cases a rule
of the library rejects (`Case.rejection`) are compiled alone and must fail at typing with a `TilesError`;
the others are packed, by family and block shape, into `Batch` kernels (one NVRTC program for several
cases), which `tests/cpu/test_randomized.py` compiles for sm_90 and `tests/gpu/test_randomized.py`
launches on fresh random data, checking every output against NumPy (the references of
tests/support/reference.py, tests/support/collectives.py and tests/support/neighbors.py).

Configurations come from NUMBA_TILES_CASES_SEED, else NUMBA_TILES_TEST_SEED, else `DEFAULT_SEED` (CI
sees the same ones every run); data is fresh every run (the ``rng`` fixture, NUMBA_TILES_TEST_SEED).
The first cases of a family are the same for any count, so the CPU's sample is a prefix of the GPU's set.
"""

import operator
import os
import random

import numpy as np

from .collectives import (
    ARRAY_DTYPES,
    SORT_DTYPES,
    absmax,
    by_magnitude,
    check_scan,
    ordered_digits,
    positions,
    random_array,
    scan_reference,
    sort_keys,
    with_seed,
)
from .neighbors import DIFFERENCE_OPS, adjacent_difference, discontinuity, same_parity_differs
from .reference import OPS, check, random_values, strides_of, threads_of

DEFAULT_SEED = 20261122
SEED = int(os.environ.get("NUMBA_TILES_CASES_SEED", os.environ.get("NUMBA_TILES_TEST_SEED", DEFAULT_SEED)))

ODD_SHAPES = [33, 96, 200, 1000, (7, 9, 3), (5, 5, 5), (31, 1, 2)]
USUAL_SHAPES = [32, 128, 256]
SHAPES = ODD_SHAPES + USUAL_SHAPES
POW2_SHAPES = [32, 64, 128, 256, 512, (8, 4, 4), (16, 2, 2), (4, 4, 4)]  # the shapes merge sort accepts
ITEMS = [1, 3, 5, 11, 13]
INTEGERS = [d for d in SORT_DTYPES if d[0] in "iu"]
FLAGS = ["uint8", "int16", "int32", "uint64"]
STATIC_SHARED = 48 * 1024
BLOCKS = 5  # blocks per launch; with num_valid, block b gets edges(...)[b]


def edges(tile, rng):
    """num_valid per block: exactly full, 0, 1, a random partial tile, more than full."""
    partial = int(rng.integers(2, tile)) if tile > 2 else tile // 2
    return np.array([tile, 0, 1, partial, tile + 7], np.int64)


def kinds_of(op):
    """The dtype kinds an op takes (tests/support/reference.py's rule): bitwise on integers, min/max not on complex."""
    return {"+": "iufc", "*": "iufc", "min": "iuf", "max": "iuf", "absmax": "iuf"}.get(op, "iu")


OPERATORS = ("+", "*", "min", "max", "&", "|", "^")  # the built-in ops (a user op, "absmax", is drawn too)


def ops_for(dtype, ops=OPERATORS):
    """The ops that make sense for ``dtype`` and whose results a reference can check: no products of
    float16 (a long one overflows), no user op but on the types Numba's C ABI shares with NVRTC."""
    kind = np.dtype(dtype).kind
    return [
        op
        for op in ops
        if kind in kinds_of(op)
        and not (dtype == "float16" and op == "*")
        and not (op == "absmax" and dtype not in ("int32", "int64", "float32", "float64"))
    ]


class Code(str):
    """Kernel source spliced into a call as it is (a run-time argument or a name), not as a literal."""

    def __repr__(self):
        return str(self)


def call(name, *args, **kwargs):
    """The source of ``tiles.name(args, kwargs)``; keyword arguments that are None are left out."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items() if v is not None]
    return f"tiles.{name}({', '.join(parts)})"


def spelling(op, spelled):
    """How a kernel names ``op``: the string, or (``spelled``) the Python or NumPy function."""
    if op == "absmax":
        return Code("absmax")
    if not spelled:
        return op
    return Code(
        {
            "+": "operator.add",
            "*": "np.multiply",
            "min": "min",
            "max": "np.maximum",
            "&": "operator.and_",
            "|": "np.bitwise_or",
            "^": "operator.xor",
        }[op]
    )


def dt(name):
    """The kernel's name for a dtype (see `Batch.namespace`)."""
    return f"D_{name}"


def load_lines(dst, src, index, ipt):
    """Kernel lines: thread-local ``dst`` gets ``src[index:index + ipt]``."""
    return [f"for j in range({ipt}):", f"    {dst}[j] = {src}[{index} + j]"]


def store_lines(dst, src, index, ipt):
    """Kernel lines: ``dst[index:index + ipt]`` gets thread-local ``src``."""
    return [f"for j in range({ipt}):", f"    {dst}[{index} + j] = {src}[j]"]


class Picker:
    """Draws parameters: each list of options is dealt like a shuffled deck, so every option comes up
    once per pass through the list, in a random order and in random company."""

    def __init__(self, seed):
        self.random = random.Random(seed)
        self.decks = {}

    def __call__(self, name, options):
        deck = self.decks.setdefault((name, tuple(map(repr, options))), [])
        if not deck:
            deck.extend(self.random.sample(range(len(options)), len(options)))
        return options[deck.pop()]

    def chance(self, p):
        return self.random.random() < p

    def again(self, name, value, options):
        """Put ``value`` back on top of its deck: the next draw of ``name`` gives it again."""
        self.decks[(name, tuple(map(repr, options)))].append(options.index(value))


class Case:
    """One configuration. Subclasses set ``family`` (and ``shapes``, the block shapes it draws from) and
    implement `draw` (a case from a `Picker`), `arrays` (its inputs and outputs, fresh), `lines` (its kernel
    source; ``@`` stands for its names' prefix) and `check`; ``ipt`` is None for one value per thread."""

    family = ""
    shapes = SHAPES

    def __init__(self, block_dim, dtype, ipt=None, **params):
        self.block_dim, self.dtype, self.ipt = block_dim, dtype, ipt
        self.__dict__.update(params)
        self.params = params
        self.T = threads_of(block_dim)
        self.tile = self.T * (ipt or 1)

    def __repr__(self):
        shown = [f"{k}={v!r}" for k, v in self.params.items() if v not in (None, False)]
        return (
            f"{self.family}({self.block_dim}, {self.dtype}{f', ipt={self.ipt}' if self.ipt else ''}"
            f"{', ' if shown else ''}{', '.join(shown)})"
        )

    @classmethod
    def draw(cls, pick):
        raise NotImplementedError

    def tile_bytes(self, *dtypes):
        """What a collective that stages the tile in shared memory needs at least (block.py's typing estimate)."""
        return self.tile * sum(np.dtype(d).itemsize for d in dtypes)

    def rejection(self):
        """(intrinsic, regex of the message) if the library must reject this case at typing, else None."""
        return None

    def storage(self):
        """An upper bound of the static shared memory its calls take (to pack batches under the limit)."""
        return 0

    def gray(self):
        """Whether only CUB's exact storage size (NVRTC's, after typing) decides if it fits: not drawn."""
        return self.rejection() is None and self.storage() > STATIC_SHARED - 2048

    @property
    def mine(self):
        """Where the calling thread's items start in a blocked array of the launch's tiles (kernel source)."""
        return f"(b * {self.T} + t) * {self.ipt}"

    def local(self, name, source=None, dtype=None):
        """Kernel lines: a thread-local array of ``ipt`` items, holding the thread's items of ``source`` if given."""
        return [
            f"{name} = cuda.local.array({self.ipt}, {dt(dtype or self.dtype)})",
            *(load_lines(name, source, self.mine, self.ipt) if source else []),
        ]

    @property
    def host_dtype(self):
        """The NumPy dtype of its arrays (bfloat16 values travel as float32: no NumPy or Numba bfloat16 arrays)."""
        return "float32" if self.dtype == "bfloat16" else self.dtype


def _whole_warps(case, name, what):
    if case.T % 32:
        return name, rf"tiles.{name}: {what} needs a block of whole warps, got {case.T} threads"
    return None


def _over_shared(case, name, *dtypes):
    if case.tile_bytes(*dtypes) > STATIC_SHARED:
        return name, rf"tiles.{name}: a tile of {case.T} threads x {case.ipt} items needs at least \d+ bytes"
    return None


_STAGING = ("transpose", "warp_transpose", "warp_transpose_timesliced")


class LoadStore(Case):
    family = "load_store"
    ALGORITHMS = ["direct", "striped", "vectorize", "transpose", "warp_transpose", "warp_transpose_timesliced"]

    @classmethod
    def draw(cls, pick):
        return cls(
            pick("shape", cls.shapes),
            pick("dtype", ARRAY_DTYPES),
            pick("ipt", ITEMS),
            load=pick("load", cls.ALGORITHMS),
            store=pick("store", cls.ALGORITHMS),
            num_valid=pick.chance(0.5),
            oob_default=pick.chance(0.5),
            cache=pick("cache", ["default", "read_only", "streaming", "global"]),
        )

    def rejection(self):
        for name, algorithm in (("block_load", self.load), ("block_store", self.store)):
            found = (
                algorithm.startswith("warp_transpose") and _whole_warps(self, name, f"algorithm {algorithm!r}")
            ) or (algorithm in _STAGING and _over_shared(self, name, self.dtype))
            if found:
                return found
        return None

    def storage(self):
        return sum(self.tile_bytes(self.dtype) for a in (self.load, self.store) if a in _STAGING)

    @property
    def n(self):  # the array ends inside the last tile
        return self.tile * (BLOCKS - 1) + self.tile // 3 + 1

    def arrays(self, rng):
        D = np.dtype(self.dtype)
        return {
            "x": random_array(D, self.n, rng),
            "nv": edges(self.tile, rng),
            "dump": np.full(BLOCKS * self.tile, 5, D),
            "out": np.full(self.n + self.tile, 5, D),
            "after": np.zeros(BLOCKS * self.tile, D),
        }

    def lines(self):
        ipt = self.ipt
        nv = Code("@nv[b]") if self.num_valid else None
        shape = dict(block_dim=self.block_dim, items_per_thread=ipt)
        cache = None if self.cache == "default" else self.cache
        # (7 and 3: Python ints, as numba-cuda emits no float16 constants)
        return [
            *self.local("@m"),
            f"for j in range({ipt}):",
            "    @m[j] = 7",
            call(
                "block_load",
                Code(f"@x[b * {self.tile}:]"),
                Code("@m"),
                **shape,
                algorithm=self.load,
                num_valid=nv,
                oob_default=3 if self.oob_default else None,
                cache=cache,
            ),
            *store_lines("@dump", "@m", self.mine, ipt),
            call(
                "block_store",
                Code(f"@out[b * {self.tile}:@x.size]"),
                Code("@m"),
                **shape,
                algorithm=self.store,
                num_valid=nv,
            ),
            *store_lines("@after", "@m", self.mine, ipt),
        ]

    def check(self, a):
        D, tile, n = np.dtype(self.dtype), self.tile, self.n
        load = positions("striped" if self.load == "striped" else "blocked", self.T, self.ipt).ravel()
        store = positions("striped" if self.store == "striped" else "blocked", self.T, self.ipt).ravel()
        want_out = np.full(n + tile, 5, D)
        for b in range(BLOCKS):
            start = b * tile
            valid = max(min(int(a["nv"][b]) if self.num_valid else tile, n - start), 0)
            got = a["dump"][start : start + tile]
            want = np.where(load < valid, a["x"][np.minimum(start + load, n - 1)], D.type(3 if self.oob_default else 7))
            np.testing.assert_array_equal(got, want, err_msg=f"{self}: block {b} load (valid {valid})")
            want_out[start + store[store < valid]] = got[store < valid]
        np.testing.assert_array_equal(a["out"], want_out, err_msg=f"{self}: store")
        np.testing.assert_array_equal(a["after"], a["dump"], err_msg=f"{self}: items after the store")


class Reduce(Case):
    family = "reduce"
    ALGORITHMS = ["warp_reductions", "raking", "raking_commutative_only"]

    @classmethod
    def draw(cls, pick):
        ipt = pick("ipt", [None] + ITEMS)
        dtype = pick("dtype", ARRAY_DTYPES + ([] if ipt else ["bfloat16"]))
        num_valid = pick.chance(0.5)
        # bfloat16: min and max only (its sums round); a user op takes no num_valid
        op = pick(
            f"op {dtype}",
            ["min", "max"] if dtype == "bfloat16" else ops_for(dtype, OPERATORS + (() if num_valid else ("absmax",))),
        )
        return cls(
            pick("shape", cls.shapes),
            dtype,
            ipt,
            op=op,
            algorithm=pick("algorithm", cls.ALGORITHMS),
            broadcast=pick.chance(0.5),
            num_valid=num_valid,
            spelled=pick.chance(0.3),
            sum=op == "+" and pick.chance(0.5),
        )

    def storage(self):
        return (self.T + self.T // 4 + 64) * np.dtype(self.host_dtype).itemsize

    def arrays(self, rng):
        D = np.dtype(self.host_dtype)
        x = (
            rng.integers(-8, 8, BLOCKS * self.tile).astype(D)
            if self.dtype == "bfloat16"
            else random_values(self.dtype, self.op, BLOCKS * self.tile, rng)
        )
        return {"x": x, "nv": edges(self.tile, rng), "out": np.full(BLOCKS * self.T, 123, D)}

    def lines(self):
        T, ipt = self.T, self.ipt
        kw = dict(
            block_dim=self.block_dim,
            items_per_thread=ipt,
            algorithm=self.algorithm,
            broadcast=self.broadcast or None,
            num_valid=Code("@nv[b]") if self.num_valid else None,
        )
        if ipt:
            head, value = self.local("@m", "@x"), Code("@m")
        else:
            head = []
            value = Code(f"float32_to_bfloat16(@x[b * {T} + t])" if self.dtype == "bfloat16" else f"@x[b * {T} + t]")
        op = spelling(self.op, self.spelled)
        fn = call("block_sum", value, **kw) if self.sum else call("block_reduce", value, op, **kw)
        result = "bfloat16_to_float32(@r)" if self.dtype == "bfloat16" else "@r"
        return [*head, f"@r = {fn}", f"@out[b * {T} + t] = {result}"]

    def check(self, a):
        D, T, tile = np.dtype(self.host_dtype), self.T, self.tile
        for b in range(BLOCKS):
            x = a["x"][b * tile : (b + 1) * tile]
            count = min(int(a["nv"][b]), tile) if self.num_valid else tile
            got = a["out"][b * T : (b + 1) * T] if self.broadcast else a["out"][b * T : b * T + 1]
            want = np.repeat(reduced(D, self.op, x[:count]), len(got))
            check(D, "max" if self.op == "absmax" else self.op, got, want, np.tile(x, len(got)), tile)


def reduced(dtype, op, values):
    """The reduction of ``values``, the op's identity when there are none: in float64 for floats, in the
    dtype for integers (wrapping, as on the GPU)."""
    import numba_tiles as tiles

    if not len(values):
        return tiles.ops.parse("test", op).identity(dtype)
    if op == "absmax":  # max(|a|, |b|): the maximum magnitude, or the item itself when it is alone
        return values[0] if len(values) == 1 else np.abs(values).max()
    acc = {"f": np.float64, "c": np.complex128}.get(dtype.kind, dtype)
    return OPS[op].reduce(values.astype(acc), dtype=acc)


def check_scanned(case, D, seg, seed, out, totals, where):
    """A scan ``case``'s results for ``seg`` against NumPy: ``out``, and the aggregate in every item of
    ``totals`` (if not None)."""
    want, total = scan_reference(D, case.op, seg, case.exclusive, seed)
    try:
        check_scan(D, case.op, out, want, with_seed(seg, seed))
        if totals is not None:
            check_scan(D, case.op, totals, np.repeat(total, len(totals)), seg)
    except AssertionError as e:
        raise AssertionError(f"{case}: {where}: {e}") from None


class Scan(Case):
    family = "scan"
    ALGORITHMS = ["raking", "raking_memoize", "warp_scans"]
    ROUNDS = 2  # tiles a running prefix carries over

    @classmethod
    def draw(cls, pick):
        ipt = pick("ipt", [None] + ITEMS)
        dtype = pick("dtype", ARRAY_DTYPES + ([] if ipt else ["bfloat16"]))
        op = pick(f"op {dtype}", ["min", "max"] if dtype == "bfloat16" else ops_for(dtype))
        form = pick(
            "form", ["plain", "initial", "aggregate", "initial+aggregate"] + ([] if dtype == "bfloat16" else ["prefix"])
        )  # (no bfloat16 arrays for the prefix)
        return cls(
            pick("shape", cls.shapes),
            dtype,
            ipt,
            op=op,
            algorithm=pick("algorithm", cls.ALGORITHMS),
            exclusive=pick.chance(0.5),
            initial="initial" in form,
            aggregate="aggregate" in form,
            prefix=form == "prefix",
            spelled=pick.chance(0.3),
        )

    def storage(self):
        return (self.T + self.T // 4 + 64) * np.dtype(self.host_dtype).itemsize

    @property
    def rounds(self):
        return self.ROUNDS if self.prefix else 1

    def arrays(self, rng):
        D = np.dtype(self.host_dtype)
        n = BLOCKS * self.rounds * self.tile
        x = rng.integers(-8, 8, n).astype(D) if self.dtype == "bfloat16" else random_values(self.dtype, self.op, n, rng)
        return {"x": x, "out": np.zeros(n, D), "totals": np.zeros(BLOCKS * self.T, D)}

    def lines(self):
        T, ipt, tile, bf16 = self.T, self.ipt, self.tile, self.dtype == "bfloat16"
        cast = "float32_to_bfloat16({})" if bf16 else "{}"
        back = "bfloat16_to_float32({})" if bf16 else "{}"
        kw = dict(
            block_dim=self.block_dim,
            items_per_thread=ipt,
            exclusive=self.exclusive,
            initial_value=Code(cast.format("@x[0]")) if self.initial else None,
            aggregate=self.aggregate or None,
            algorithm=self.algorithm,
        )
        op = spelling(self.op, self.spelled)
        if self.prefix:
            lines = [f"@p = cuda.local.array(1, {dt(self.dtype)})", "@p[0] = @x[0]", f"for r in range({self.rounds}):"]
            if ipt:
                body = [
                    f"@m = cuda.local.array({ipt}, {dt(self.dtype)})",
                    *load_lines("@m", "@x", f"(b * {self.rounds} + r) * {tile} + t * {ipt}", ipt),
                    call("block_scan", Code("@m"), op, **kw, prefix=Code("@p")),
                    *store_lines("@out", "@m", f"(b * {self.rounds} + r) * {tile} + t * {ipt}", ipt),
                ]
            else:
                i = f"(b * {self.rounds} + r) * {T} + t"
                body = [f"@out[{i}] = " + call("block_scan", Code(f"@x[{i}]"), op, **kw, prefix=Code("@p"))]
            return lines + ["    " + line for line in body]
        if ipt:
            total = "@tot = " if self.aggregate else ""
            return [
                *self.local("@m", "@x"),
                total + call("block_scan", Code("@m"), op, **kw),
                *store_lines("@out", "@m", self.mine, ipt),
                *([f"@totals[b * {T} + t] = @tot"] if self.aggregate else []),
            ]
        scanned = call("block_scan", Code(cast.format(f"@x[b * {T} + t]")), op, **kw)
        if self.aggregate:
            return [
                f"@s, @tot = {scanned}",
                f"@out[b * {T} + t] = {back.format('@s')}",
                f"@totals[b * {T} + t] = {back.format('@tot')}",
            ]
        return [f"@out[b * {T} + t] = {back.format(scanned)}"]

    def check(self, a):
        import numba_tiles as tiles

        D, T = np.dtype(self.host_dtype), self.T
        x, size = a["x"], self.rounds * self.tile
        identity = tiles.ops.parse("test", self.op).identity(D)
        for b in range(BLOCKS):
            seg = x[b * size : (b + 1) * size]
            seed = x[0] if self.initial or self.prefix else (identity if self.exclusive else None)
            check_scanned(
                self,
                D,
                seg,
                seed,
                a["out"][b * size : (b + 1) * size],
                a["totals"][b * T : (b + 1) * T] if self.aggregate else None,
                f"block {b}",
            )


class Exchange(Case):
    family = "exchange"
    ARRANGEMENTS = ["striped_to_blocked", "blocked_to_striped", "warp_striped_to_blocked", "blocked_to_warp_striped"]

    @classmethod
    def draw(cls, pick):
        return cls(
            pick("shape", cls.shapes),
            pick("dtype", ARRAY_DTYPES),
            pick("ipt", ITEMS),
            arrangement=pick("arrangement", cls.ARRANGEMENTS),
        )

    def rejection(self):
        warp_striped = "warp_striped" in self.arrangement
        return (warp_striped and _whole_warps(self, "block_exchange", "a warp-striped arrangement")) or _over_shared(
            self, "block_exchange", self.dtype
        )

    def storage(self):
        return self.tile_bytes(self.dtype)

    def arrays(self, rng):
        x = random_array(np.dtype(self.dtype), BLOCKS * self.tile, rng)
        return {"x": x, "out": np.zeros_like(x)}

    def lines(self):
        return [
            *self.local("@m", "@x"),
            call("block_exchange", Code("@m"), self.arrangement, block_dim=self.block_dim, items_per_thread=self.ipt),
            *store_lines("@out", "@m", self.mine, self.ipt),
        ]

    def check(self, a):
        import numba_tiles as tiles

        source, target = tiles._params.ARRANGEMENTS[self.arrangement]
        by_rank = np.empty(self.tile, np.int64)
        by_rank[positions(source, self.T, self.ipt).ravel()] = np.arange(self.tile)
        gather = by_rank[positions(target, self.T, self.ipt).ravel()]
        for b in range(BLOCKS):
            part = slice(b * self.tile, (b + 1) * self.tile)
            np.testing.assert_array_equal(a["out"][part], a["x"][part][gather], err_msg=f"{self}: block {b}")


class Histogram(Case):
    family = "histogram"

    @classmethod
    def draw(cls, pick):
        dtype = pick("dtype", INTEGERS)
        largest = 2 ** (8 * np.dtype(dtype).itemsize - (dtype[0] == "i"))
        bins = pick(f"bins {dtype}", [b for b in (1, 7, 32, 100, 128, 256, 300, 1000) if b <= largest])
        return cls(
            pick("shape", cls.shapes),
            dtype,
            pick("ipt", ITEMS),
            bins=bins,
            counter=pick("counter", ["int32", "uint32", "uint64"]),
            algorithm=pick("algorithm", ["sort", "atomic"]),
            accumulate=pick.chance(0.5),
        )

    def rejection(self):
        return _over_shared(self, "block_histogram", self.dtype) if self.algorithm == "sort" else None

    def storage(self):  # sort: the radix sort's (see RadixSort.storage) and run starts and ends per bin
        return (max(40 * self.T, self.tile_bytes(self.dtype)) if self.algorithm == "sort" else 0) + 8 * self.bins + 512

    def arrays(self, rng):
        x = rng.integers(0, self.bins, BLOCKS * self.tile).astype(self.dtype)
        return {"x": x, "out": np.zeros(BLOCKS * self.bins, self.counter)}

    def lines(self):
        T, ipt, bins = self.T, self.ipt, self.bins
        fill = [f"for k in range(t, {bins}, {T}):", "    @h[k] = 1000", "cuda.syncthreads()"] if self.accumulate else []
        return [
            *self.local("@m", "@x"),
            f"@h = cuda.shared.array({bins}, {dt(self.counter)})",
            *fill,
            call(
                "block_histogram",
                Code("@m"),
                Code("@h"),
                block_dim=self.block_dim,
                items_per_thread=ipt,
                bins=bins,
                algorithm=self.algorithm,
                accumulate=self.accumulate or None,
            ),
            f"for k in range(t, {bins}, {T}):",
            f"    @out[b * {bins} + k] = @h[k]",
        ]

    def check(self, a):
        for b in range(BLOCKS):
            want = np.bincount(a["x"][b * self.tile : (b + 1) * self.tile], minlength=self.bins)
            np.testing.assert_array_equal(
                a["out"][b * self.bins : (b + 1) * self.bins],
                want + (1000 if self.accumulate else 0),
                err_msg=f"{self}: block {b}",
            )


def _keys_and_values(case):
    return [*case.local("@k", "@keys"), *(case.local("@v", "@values", case.values) if case.values else [])]


def _sorted_out(case):
    return [
        *store_lines("@out_keys", "@k", case.mine, case.ipt),
        *(store_lines("@out_values", "@v", case.mine, case.ipt) if case.values else []),
    ]


def _payload(case, rng):
    """Values moved with the keys: random, in their own dtype (duplicates are fine: the sort is stable)."""
    return random_array(np.dtype(case.values), BLOCKS * case.tile, rng) if case.values else np.zeros(1, np.int8)


class RadixSort(Case):
    family = "radix_sort"

    @classmethod
    def draw(cls, pick):
        dtype = pick("dtype", SORT_DTYPES)
        bits = 8 * np.dtype(dtype).itemsize
        begin = pick.random.randrange(0, bits)
        return cls(
            pick("shape", cls.shapes),
            dtype,
            pick("ipt", ITEMS),
            values=pick("values", [None] + ARRAY_DTYPES),
            descending=pick.chance(0.5),
            striped=pick.chance(0.5),
            bits=(begin, pick.random.randrange(begin + 1, bits + 1)) if pick.chance(0.3) else None,
        )

    def rejection(self):
        return _over_shared(self, "block_radix_sort", self.dtype) or (
            self.values and _over_shared(self, "block_radix_sort", self.values)
        )

    def storage(self):  # CUB's rank counters (9 lanes x 2 x 16 bits per thread), or the tile's exchange
        return max(40 * self.T + 512, self.tile_bytes(self.dtype), self.tile_bytes(self.values or "int8"))

    def arrays(self, rng):
        keys = sort_keys(self.dtype, BLOCKS * self.tile, rng)
        values = _payload(self, rng)
        return {"keys": keys, "values": values, "out_keys": np.zeros_like(keys), "out_values": np.zeros_like(values)}

    def lines(self):
        begin, end = self.bits or (None, None)
        return [
            *_keys_and_values(self),
            call(
                "block_radix_sort",
                Code("@k"),
                block_dim=self.block_dim,
                items_per_thread=self.ipt,
                values=Code("@v") if self.values else None,
                descending=self.descending or None,
                striped=self.striped or None,
                begin_bit=begin,
                end_bit=end,
            ),
            *_sorted_out(self),
        ]

    def check(self, a):
        D, tile = np.dtype(self.dtype), self.tile
        begin, end = self.bits or (0, 8 * D.itemsize)
        where = positions("striped" if self.striped else "blocked", self.T, self.ipt).ravel()
        for b in range(BLOCKS):
            part = slice(b * tile, (b + 1) * tile)
            digits = ordered_digits(D, a["keys"][part], begin, end)
            order = np.argsort(~digits if self.descending else digits, kind="stable")  # (~: descending, still stable)
            bits = f"u{D.itemsize}"  # bitwise: the sort moves keys, -0.0 stays -0.0
            np.testing.assert_array_equal(
                a["out_keys"][part].view(bits),
                a["keys"][part][order][where].view(bits),
                err_msg=f"{self}: block {b} keys",
            )
            if self.values:
                np.testing.assert_array_equal(
                    a["out_values"][part], a["values"][part][order][where], err_msg=f"{self}: block {b} values"
                )


class MergeSort(Case):
    family = "merge_sort"
    shapes = POW2_SHAPES + ODD_SHAPES

    @classmethod
    def draw(cls, pick):
        dtype = pick("dtype", SORT_DTYPES)
        # (a Python comparison takes integers, float32 and float64: Numba's C ABI for half differs)
        compare = pick(f"compare {dtype}", ["<", ">"] + ([] if dtype == "float16" else ["magnitude"]))
        return cls(
            pick("shape", cls.shapes),
            dtype,
            pick("ipt", ITEMS),
            compare=compare,
            values=pick("values", [None] + ARRAY_DTYPES),
        )

    def rejection(self):
        if self.T & (self.T - 1):
            return (
                "block_merge_sort",
                rf"tiles.block_merge_sort: CUB's merge sort needs a power-of-two number of "
                rf"threads, got {self.T}",
            )
        return _over_shared(self, "block_merge_sort", self.dtype) or (
            self.values and _over_shared(self, "block_merge_sort", self.values)
        )

    def storage(self):
        return max(self.tile_bytes(self.dtype), self.tile_bytes(self.values or "int8")) + 512

    def arrays(self, rng):
        D = np.dtype(self.dtype)
        low = 0 if D.kind == "u" else -50  # many repeats (stability shows), exact in float64 (the reference's order)
        keys = (rng.integers(low, 50, BLOCKS * self.tile) / (2 if D.kind == "f" else 1)).astype(D)
        values = _payload(self, rng)
        return {"keys": keys, "values": values, "out_keys": np.zeros_like(keys), "out_values": np.zeros_like(values)}

    def lines(self):
        compare = Code("by_magnitude") if self.compare == "magnitude" else self.compare
        return [
            *_keys_and_values(self),
            call(
                "block_merge_sort",
                Code("@k"),
                compare,
                block_dim=self.block_dim,
                items_per_thread=self.ipt,
                values=Code("@v") if self.values else None,
            ),
            *_sorted_out(self),
        ]

    def check(self, a):
        key = {"<": lambda v: v, ">": lambda v: -v, "magnitude": np.abs}[self.compare]
        for b in range(BLOCKS):
            part = slice(b * self.tile, (b + 1) * self.tile)
            order = np.argsort(key(a["keys"][part].astype(np.float64)), kind="stable")
            np.testing.assert_array_equal(
                a["out_keys"][part], a["keys"][part][order], err_msg=f"{self}: block {b} keys"
            )
            if self.values:
                np.testing.assert_array_equal(
                    a["out_values"][part], a["values"][part][order], err_msg=f"{self}: block {b} values"
                )


class AdjacentDifference(Case):
    family = "adjacent_difference"
    OPS = {**DIFFERENCE_OPS, "^": np.bitwise_xor}

    @classmethod
    def draw(cls, pick):
        dtype = pick("dtype", ARRAY_DTYPES)
        op = pick(f"op {dtype}", ["-"] + ops_for(dtype, ("+", "max", "^", "absmax")))
        return cls(
            pick("shape", cls.shapes),
            dtype,
            pick("ipt", ITEMS),
            op=op,
            right=pick.chance(0.5),
            neighbor=pick.chance(0.5),
            num_valid=pick.chance(0.5),
        )

    def rejection(self):
        if self.right and self.neighbor and self.num_valid:
            return "block_adjacent_difference", "a right difference of a partial tile takes no neighbor"
        return None

    def storage(self):
        return self.T * np.dtype(self.dtype).itemsize + 512

    def arrays(self, rng):
        D = np.dtype(self.dtype)
        x = random_array(D, BLOCKS * self.tile, rng)
        return {"x": x, "nv": edges(self.tile, rng), "edge": random_array(D, BLOCKS, rng), "out": np.zeros_like(x)}

    def lines(self):
        op = Code("absmax") if self.op == "absmax" else self.op
        return [
            *self.local("@m", "@x"),
            call(
                "block_adjacent_difference",
                Code("@m"),
                op,
                block_dim=self.block_dim,
                items_per_thread=self.ipt,
                right=self.right or None,
                neighbor=Code("@edge[b]") if self.neighbor else None,
                num_valid=Code("@nv[b]") if self.num_valid else None,
            ),
            *store_lines("@out", "@m", self.mine, self.ipt),
        ]

    def check(self, a):
        for b in range(BLOCKS):
            part = slice(b * self.tile, (b + 1) * self.tile)
            want = adjacent_difference(
                a["x"][part],
                self.OPS[self.op],
                self.right,
                a["edge"][b] if self.neighbor else None,
                a["nv"][b] if self.num_valid else None,
            )
            np.testing.assert_array_equal(a["out"][part], want, err_msg=f"{self}: block {b}")


class Discontinuity(Case):
    family = "discontinuity"

    @classmethod
    def draw(cls, pick):
        dtype = pick("dtype", ARRAY_DTYPES)
        flags = pick("flags", [("heads",), ("tails",), ("heads", "tails")])
        compare = pick(
            f"compare {dtype}", ["!="] + (["parity"] if dtype in ("int32", "int64", "float32", "float64") else [])
        )
        return cls(
            pick("shape", cls.shapes),
            dtype,
            pick("ipt", ITEMS),
            flags=flags,
            flag=pick("flag", FLAGS),
            compare=compare,
            predecessor="heads" in flags and pick.chance(0.5),
            successor="tails" in flags and pick.chance(0.5),
        )

    def storage(self):
        return 2 * self.T * np.dtype(self.dtype).itemsize + 512

    def arrays(self, rng):
        D, F = np.dtype(self.dtype), np.dtype(self.flag)
        return {
            "x": rng.integers(0, 3, BLOCKS * self.tile).astype(D),
            "edge": rng.integers(0, 3, 2 * BLOCKS).astype(D),
            "heads": np.zeros(BLOCKS * self.tile, F),
            "tails": np.zeros(BLOCKS * self.tile, F),
        }

    def lines(self):
        ipt = self.ipt
        return [
            *self.local("@m", "@x"),
            *self.local("@h", dtype=self.flag),
            *self.local("@s", dtype=self.flag),
            f"for j in range({ipt}):",
            "    @h[j] = 7",
            "    @s[j] = 7",
            call(
                "block_discontinuity",
                Code("@m"),
                block_dim=self.block_dim,
                items_per_thread=ipt,
                heads=Code("@h") if "heads" in self.flags else None,
                tails=Code("@s") if "tails" in self.flags else None,
                compare=Code("same_parity_differs") if self.compare == "parity" else None,
                predecessor=Code("@edge[2 * b]") if self.predecessor else None,
                successor=Code("@edge[2 * b + 1]") if self.successor else None,
            ),
            *store_lines("@heads", "@h", self.mine, ipt),
            *store_lines("@tails", "@s", self.mine, ipt),
        ]

    def check(self, a):
        differ = np.not_equal if self.compare == "!=" else (lambda p, q: (p % 2) != (q % 2))
        F = np.dtype(self.flag)
        for b in range(BLOCKS):
            part = slice(b * self.tile, (b + 1) * self.tile)
            heads, tails = discontinuity(
                a["x"][part],
                differ,
                a["edge"][2 * b] if self.predecessor else None,
                a["edge"][2 * b + 1] if self.successor else None,
            )
            for name, want in (("heads", heads), ("tails", tails)):
                want = want.astype(F) if name in self.flags else np.full(self.tile, 7, F)
                np.testing.assert_array_equal(a[name][part], want, err_msg=f"{self}: block {b} {name}")


class Shuffle(Case):
    family = "shuffle"
    DISTANCES = 3  # run-time distances per launch for offset and rotate

    @classmethod
    def draw(cls, pick):
        kind = pick("kind", ["offset", "rotate", "up", "down"])
        return cls(
            pick("shape", cls.shapes),
            pick("dtype", ARRAY_DTYPES),
            pick("ipt", ITEMS) if kind in ("up", "down") else None,
            kind=kind,
        )

    def storage(self):
        return self.T * np.dtype(self.dtype).itemsize + 512

    def arrays(self, rng):
        D, T = np.dtype(self.dtype), self.T
        x = random_array(D, BLOCKS * self.tile, rng)
        pool = [1, -1, 0, T - 1, -T, T + 5, 2**31 - 1, -(2**31), *rng.integers(-2 * T, 2 * T, 4)]
        return {
            "x": x,
            "d": rng.choice(np.array(pool, np.int64), self.DISTANCES).astype(np.int32),
            "out": np.zeros(BLOCKS * self.DISTANCES * self.tile, D),
            "edges": np.zeros(BLOCKS * T, D),
        }

    def lines(self):
        T, ipt = self.T, self.ipt
        if not ipt:
            return [
                f"for k in range({self.DISTANCES}):",
                f"    @out[(b * {self.DISTANCES} + k) * {T} + t] = "
                + call(
                    "block_shuffle",
                    Code(f"@x[b * {T} + t]"),
                    self.kind,
                    block_dim=self.block_dim,
                    distance=Code("@d[k]"),
                ),
            ]
        return [
            *self.local("@m", "@x"),
            f"@edges[b * {T} + t] = "
            + call("block_shuffle", Code("@m"), self.kind, block_dim=self.block_dim, items_per_thread=ipt),
            *store_lines("@out", "@m", self.mine, ipt),
        ]

    def check(self, a):
        T, tile = self.T, self.tile
        for b in range(BLOCKS):
            seg = a["x"][b * tile : (b + 1) * tile]
            if self.ipt:
                want = seg.copy()
                if self.kind == "up":
                    want[1:] = seg[:-1]
                else:
                    want[:-1] = seg[1:]
                np.testing.assert_array_equal(a["out"][b * tile : (b + 1) * tile], want, err_msg=f"{self}: block {b}")
                edge = seg[-1] if self.kind == "up" else seg[0]
                np.testing.assert_array_equal(
                    a["edges"][b * T : (b + 1) * T], np.repeat(edge, T), err_msg=f"{self}: block {b} edge"
                )
                continue
            for k, d in enumerate(a["d"]):
                src = np.arange(T) + np.int64(d)
                if self.kind == "rotate":
                    want = seg[src % T]
                else:
                    want = np.where((src >= 0) & (src < T), seg[np.clip(src, 0, T - 1)], seg)
                got = a["out"][(b * self.DISTANCES + k) * T :][:T]
                np.testing.assert_array_equal(got, want, err_msg=f"{self}: block {b}, distance {d}")


class _Warp(Case):
    """What the warp collectives share: a logical warp size that tiles the block (a logical warp must not
    run past the block's end), one value per thread, a num_valid per logical warp."""

    @classmethod
    def draw_warp_size(cls, pick, shape):
        return pick(f"warp {shape}", [w for w in (1, 2, 4, 8, 16, 32) if threads_of(shape) % w == 0])

    @property
    def groups(self):
        return BLOCKS * self.T // self.warp_size

    def inputs(self, rng):
        D, W = np.dtype(self.host_dtype), self.warp_size
        x = (
            rng.integers(-2, 3, BLOCKS * self.T).astype(D)
            if self.dtype == "bfloat16"
            # (exact sums)
            else random_values(self.dtype, self.op, BLOCKS * self.T, rng)
        )
        return {
            "x": x,
            "nv": np.resize(np.concatenate([edges(W, rng), rng.integers(0, W + 1, self.groups)]), self.groups),
        }


class WarpReduce(_Warp):
    family = "warp_reduce"

    @classmethod
    def draw(cls, pick):
        shape = pick("shape", cls.shapes)
        dtype = pick("dtype", ARRAY_DTYPES + ["bfloat16"])
        num_valid = pick.chance(0.5)
        op = pick(
            f"op {dtype}",
            ["+", "min", "max"]
            if dtype == "bfloat16"
            else ops_for(dtype, OPERATORS + (() if num_valid else ("absmax",))),
        )
        return cls(
            shape,
            dtype,
            warp_size=cls.draw_warp_size(pick, shape),
            op=op,
            num_valid=num_valid,
            spelled=pick.chance(0.3),
            sum=op == "+" and pick.chance(0.5),
        )

    def arrays(self, rng):
        return {**self.inputs(rng), "out": np.full(self.groups, 123, self.host_dtype)}

    def lines(self):
        W, bf16 = self.warp_size, self.dtype == "bfloat16"
        value = Code("float32_to_bfloat16(@x[@i])" if bf16 else "@x[@i]")
        kw = dict(warp_size=W, num_valid=Code(f"@nv[@i // {W}]") if self.num_valid else None)
        op = spelling(self.op, self.spelled)
        fn = call("warp_sum", value, **kw) if self.sum else call("warp_reduce", value, op, **kw)
        return [
            f"@i = b * {self.T} + t",
            f"@r = {fn}",
            f"if t % {W} == 0:",
            f"    @out[@i // {W}] = {'bfloat16_to_float32(@r)' if bf16 else '@r'}",
        ]

    def check(self, a):
        D, W = np.dtype(self.host_dtype), self.warp_size
        counts = np.minimum(a["nv"], W) if self.num_valid else np.full(self.groups, W)
        want = np.array([reduced(D, self.op, a["x"][g * W : g * W + counts[g]]) for g in range(self.groups)])
        try:
            check(D, "max" if self.op == "absmax" else self.op, a["out"], want, a["x"], W)
        except AssertionError as e:
            raise AssertionError(f"{self}: {e}") from None


class WarpScan(_Warp):
    family = "warp_scan"

    @classmethod
    def draw(cls, pick):
        shape = pick("shape", cls.shapes)
        dtype = pick("dtype", ARRAY_DTYPES + ["bfloat16"])
        op = pick(f"op {dtype}", ["+", "min", "max"] if dtype == "bfloat16" else ops_for(dtype))
        return cls(
            shape,
            dtype,
            warp_size=cls.draw_warp_size(pick, shape),
            op=op,
            exclusive=pick.chance(0.5),
            initial=pick.chance(0.5),
            aggregate=pick.chance(0.5),
            num_valid=pick.chance(0.5),
            spelled=pick.chance(0.3),
        )

    def arrays(self, rng):
        inputs = self.inputs(rng)
        return {**inputs, "out": np.zeros_like(inputs["x"]), "totals": np.zeros_like(inputs["x"])}

    def lines(self):
        W, bf16 = self.warp_size, self.dtype == "bfloat16"
        cast = "float32_to_bfloat16({})" if bf16 else "{}"
        back = "bfloat16_to_float32({})" if bf16 else "{}"
        scanned = call(
            "warp_scan",
            Code(cast.format("@x[@i]")),
            spelling(self.op, self.spelled),
            warp_size=W,
            exclusive=self.exclusive,
            initial_value=Code(cast.format("@x[0]")) if self.initial else None,
            aggregate=self.aggregate or None,
            num_valid=Code(f"@nv[@i // {W}]") if self.num_valid else None,
        )
        if self.aggregate:
            return [
                f"@i = b * {self.T} + t",
                f"@s, @tot = {scanned}",
                f"@out[@i] = {back.format('@s')}",
                f"@totals[@i] = {back.format('@tot')}",
            ]
        return [f"@i = b * {self.T} + t", f"@out[@i] = {back.format(scanned)}"]

    def check(self, a):
        import numba_tiles as tiles

        D, W, x = np.dtype(self.host_dtype), self.warp_size, a["x"]
        identity = tiles.ops.parse("test", self.op).identity(D)
        for g in range(self.groups):
            seg = x[g * W : (g + 1) * W].copy()
            if self.num_valid:
                seg[max(int(a["nv"][g]), 0) :] = identity
            seed = x[0] if self.initial else (identity if self.exclusive else None)
            check_scanned(
                self,
                D,
                seg,
                seed,
                a["out"][g * W : (g + 1) * W],
                a["totals"][g * W : (g + 1) * W] if self.aggregate else None,
                f"logical warp {g}",
            )


FAMILIES = [
    LoadStore,
    Reduce,
    Scan,
    Exchange,
    Histogram,
    RadixSort,
    MergeSort,
    AdjacentDifference,
    Discontinuity,
    Shuffle,
    WarpReduce,
    WarpScan,
]


def generate(per_family, seed=SEED, families=FAMILIES):
    """``per_family`` cases of each family, from the family's own stream of ``seed``: the first cases
    are the same for any count. A case whose fit only CUB's exact storage size decides is drawn again,
    in the same block shape (so that every shape keeps its turns)."""
    cases = []
    for family in families:
        pick = Picker(f"{seed}:{family.family}")
        while sum(c.family == family.family for c in cases) < per_family:
            case = family.draw(pick)
            if case.gray():
                pick.again("shape", case.block_dim, family.shapes)
            else:
                cases.append(case)
    return cases


class Batch:
    """Cases of one block shape in one kernel: each case's calls in turn, on its own arrays (kernel
    arguments named after the case), every thread of every block running all of them."""

    def __init__(self, cases):
        self.cases = cases
        self.block_dim = cases[0].block_dim
        assert all(c.block_dim == self.block_dim for c in cases)

    @property
    def id(self):
        return f"{self.cases[0].family}-{self.block_dim}-" + "+".join(
            f"{c.dtype}{f'x{c.ipt}' if c.ipt else ''}" for c in self.cases
        )

    def __repr__(self):
        return "Batch(" + "; ".join(map(repr, self.cases)) + ")"

    def source(self, names):
        BX, BY = strides_of(self.block_dim)
        body = [f"t = cuda.threadIdx.x + {BX} * (cuda.threadIdx.y + {BY} * cuda.threadIdx.z)", "b = cuda.blockIdx.x"]
        for i, case in enumerate(self.cases):
            body += [line.replace("@", f"c{i}_") for line in case.lines()]
        return f"def kernel({', '.join(names)}):\n" + "".join(f"    {line}\n" for line in body)

    def namespace(self):
        from numba import cuda

        import numba_tiles as tiles

        names = {
            "cuda": cuda,
            "tiles": tiles,
            "np": np,
            "operator": operator,
            "absmax": absmax,
            "by_magnitude": by_magnitude,
            "same_parity_differs": same_parity_differs,
            **{dt(d): np.dtype(d) for d in ARRAY_DTYPES},
        }
        if any(c.dtype == "bfloat16" for c in self.cases):
            from numba.cuda.bf16 import bfloat16_to_float32, float32_to_bfloat16

            names.update(float32_to_bfloat16=float32_to_bfloat16, bfloat16_to_float32=bfloat16_to_float32)
        return names

    def build(self, rng):
        """(the kernel's Python function, its arguments: per case, a dict of arrays)."""
        arrays = [case.arrays(rng) for case in self.cases]
        names = [f"c{i}_{name}" for i, a in enumerate(arrays) for name in a]
        namespace = self.namespace()
        exec(compile(self.source(names), f"<random_cases {self.id}>", "exec"), namespace)
        return namespace["kernel"], arrays

    def compile(self, rng, arch="sm_90"):
        """Compile the kernel for ``arch`` (no GPU needed); returns the cubin."""
        from numba import typeof

        import numba_tiles as tiles

        kernel, arrays = self.build(rng)
        return tiles.compile(kernel, tuple(typeof(a) for case in arrays for a in case.values()), arch=arch)

    def run(self, rng):
        """Launch on fresh data (BLOCKS blocks) and check every case's outputs against NumPy."""
        from numba import cuda

        kernel, arrays = self.build(rng)
        cuda.jit(kernel)[BLOCKS, self.block_dim](*(a for case in arrays for a in case.values()))
        for case, a in zip(self.cases, arrays):
            case.check(a)


def batches(cases, most=4, shared=STATIC_SHARED - 8192):
    """The accepted cases packed in order into batches of one family and block shape: at most ``most``
    cases, whose storage bounds add up to at most ``shared`` bytes (each call's storage is its own
    static buffer unless another call has the same type)."""
    open_, done = {}, []
    for case in cases:
        if case.rejection():
            continue
        key = (case.family, case.block_dim)
        batch = open_.get(key)
        if batch and (len(batch) == most or sum(c.storage() for c in batch) + case.storage() > shared):
            done.append(Batch(open_.pop(key)))
            batch = None
        open_.setdefault(key, []).append(case)
    return done + [Batch(b) for b in open_.values()]


def rejected(cases):
    return [case for case in cases if case.rejection()]


def compile_alone(case, rng, arch="sm_90"):
    return Batch([case]).compile(rng, arch)


def describe_seed():
    return (
        f"cases from seed {SEED} (NUMBA_TILES_CASES_SEED, else NUMBA_TILES_TEST_SEED, else {DEFAULT_SEED}); "
        f"replay a failure with NUMBA_TILES_CASES_SEED={SEED} and the NUMBA_TILES_TEST_SEED printed for its data"
    )
