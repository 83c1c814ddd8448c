"""Random numbers by cuRANDDx: the `Random` description, whose methods run in kernels on each thread's generator."""

from . import extending as ext
from ._random import calls, twins

__all__ = ["Random"]

GENERATORS = ("philox", "pcg")
# distribution: (its parameters and their defaults, the dtypes it draws)
DISTRIBUTIONS = {
    "uniform": ((("low", 0.0), ("high", 1.0)), ("float32", "float64")),
    "normal": ((("mean", 0.0), ("stddev", 1.0)), ("float32", "float64")),
    "log_normal": ((("mean", 0.0), ("stddev", 1.0)), ("float32", "float64")),
    "bits": ((), ("uint32",)),
}
# (generator, distribution, dtype) → values a draw makes: cuRANDDx's pack for them (Philox: one 128-bit draw)
WIDTHS = {
    ("philox", "uniform", "float32"): 4,
    ("philox", "uniform", "float64"): 2,
    ("philox", "normal", "float32"): 4,
    ("philox", "normal", "float64"): 2,
    ("philox", "log_normal", "float32"): 4,
    ("philox", "log_normal", "float64"): 2,
    ("philox", "bits", "uint32"): 4,
    ("pcg", "uniform", "float32"): 1,
    ("pcg", "bits", "uint32"): 1,
}
STATE_WORDS = 4  # uint64 words of a generator's state: cuRANDDx's Philox takes 32 bytes (16-byte aligned), PCG 24


@ext.description(constants=("state_size", "width"))
class Random:
    """A random number generator and a distribution, described once at module level and drawn from by cuRANDDx
    in kernels, each thread with its own generator: ``generator`` ``"philox"`` (Philox4x32-10, counter-based) or
    ``"pcg"`` (PCG XSH-RR 64/32); ``distribution`` ``"uniform"`` (on ``(low, high]``), ``"normal"`` (``mean``,
    ``stddev``: Box-Muller), ``"log_normal"`` (``exp`` of a normal value of ``mean`` and ``stddev``) or ``"bits"``
    (raw 32-bit words, uint32); ``dtype`` float32 or float64 (Philox; PCG:
    float32). Creating one needs no GPU and compiles nothing.

    Its sizes are attributes, and constants inside kernels:

    - ``state_size``: the uint64 words of a thread's generator, ``cuda.local.array(rng.state_size, uint64)``;
    - ``width``: the values one `generate` makes (Philox: a 128-bit draw, 4 float32 or 2 float64; PCG: 1).

    Each thread's stream is fixed by ``(seed, subsequence, offset)`` (`init`): the same in every run, on every GPU
    and on the simulator, whose twins step cuRANDDx's generators on the same state (raw words and uniform values
    equal; normal values within a few units in the last place: the GPU's float32 sine is its fast intrinsic).

    Example (a thread a subsequence, ``per_thread`` draws each)::

        import numpy as np
        from numba import cuda, float32, uint64
        import numba_tiles as tiles

        RNG = tiles.Random("philox", "uniform", "float32")

        @cuda.jit
        def fill(out, seed, per_thread):
            i = cuda.grid(1)
            state = cuda.local.array(RNG.state_size, uint64)
            RNG.init(state, seed, i)                # subsequence i: independent of the other threads'
            values = cuda.local.array(RNG.width, float32)
            for k in range(per_thread):
                RNG.generate(state, values)         # 4 floats on (0, 1]
                for j in range(RNG.width):
                    out[i, k * RNG.width + j] = values[j]

        cubin = tiles.compile(fill, "void(float32[:, ::1], uint64, int64)", arch="sm_90")   # no GPU needed
        if cuda.is_available():
            out = cuda.device_array((64, 8 * RNG.width), np.float32)
            fill[2, 32](out, 2026, 8)
            got = out.copy_to_host()
            assert 0 < got.min() and got.max() <= 1 and abs(got.mean() - 0.5) < 0.05
    """

    def __init__(self, generator="philox", distribution="uniform", dtype=None, **parameters):
        name = "Random"
        self.generator = ext.choice("generator", dict.fromkeys(GENERATORS))(name, generator)
        self.distribution = ext.choice("distribution", dict.fromkeys(DISTRIBUTIONS))(name, distribution)
        names, dtypes = DISTRIBUTIONS[self.distribution]
        self.dtype = ext.named(name, "dtype", dtype if dtype is not None else dtypes[0]).name
        if self.dtype not in dtypes:
            raise ext.error(
                name,
                f"{self.distribution} draws {' or '.join(dtypes)}, got dtype={self.dtype!r}",
                f"pass dtype={dtypes[0]!r}",
            )
        if (self.generator, self.distribution, self.dtype) not in WIDTHS:
            # (cuRANDDx draws PCG's doubles and normal pairs from two 32-bit words taken as one call's two
            # arguments, whose order C++ leaves to the compiler: the simulator could not promise the GPU's values)
            raise ext.error(
                name,
                f"PCG draws no {self.distribution} {self.dtype} here",
                'use generator="philox"' + ("" if "normal" in self.distribution else ', or dtype="float32"'),
            )
        unknown = set(parameters) - {p for p, _ in names}
        if unknown:
            raise ext.error(
                name,
                f"{self.distribution} takes no parameter {sorted(unknown)[0]!r}",
                "pass " + (" and ".join(p for p, _ in names) or "no parameters"),
            )
        values = [parameters.get(p, default) for p, default in names]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise ext.error(name, f"{self.distribution}'s parameters must be numbers, got {values}", "pass numbers")
        if self.distribution == "uniform" and not values[0] < values[1]:
            raise ext.error(name, f"uniform needs low < high, got low={values[0]}, high={values[1]}", "swap them")
        if self.distribution in ("normal", "log_normal") and not values[1] > 0:
            raise ext.error(name, f"{self.distribution} needs stddev > 0, got {values[1]}", "pass a positive stddev")
        self.parameters = tuple(float(v) for v in values) or (0.0, 1.0)
        self.width = WIDTHS[self.generator, self.distribution, self.dtype]
        self.state_size = STATE_WORDS

    def _key(self):
        return (self.generator, self.distribution, self.dtype, self.parameters)

    def __repr__(self):
        names, _ = DISTRIBUTIONS[self.distribution]
        shown = "".join(f", {p}={v!r}" for (p, _), v in zip(names, self.parameters))
        return f"Random({self.generator!r}, {self.distribution!r}, {self.dtype!r}{shown})"

    # ---- in kernels ----

    @ext.method(rule=calls.init_rule, simulate=twins.init)
    def init(self, state, seed, subsequence=0, offset=0):
        """Start this thread's generator in ``state`` (``cuda.local.array(rng.state_size, uint64)``) at ``seed``,
        its ``subsequence`` and ``offset`` draws into it (integers; Philox: a draw is one `generate`, PCG: one 32-bit
        word). Threads that use one seed and each its own subsequence draw independent streams (Philox's are
        2^64 draws apart). PCG's subsequences of one seed begin alike: cuRANDDx starts each at the seed's state with
        an increment of its own, and their first words agree until the increments reach the state's high bits; give
        PCG threads seeds of their own (say ``seed + thread * 0x9E3779B97F4A7C15``). Per thread: no barrier.

        Example, continuing `Random`'s (one generator a draw ahead of another: offset 1)::

            @cuda.jit
            def skipped(out):
                a = cuda.local.array(RNG.state_size, uint64)
                b = cuda.local.array(RNG.state_size, uint64)
                RNG.init(a, 7, 0)
                RNG.init(b, 7, 0, 1)                # offset 1
                values = cuda.local.array(RNG.width, float32)
                RNG.generate(a, values)
                RNG.generate(a, values)
                out[0] = values[0]
                RNG.generate(b, values)
                out[1] = values[0]

            cubin = tiles.compile(skipped, "void(float32[::1])", arch="sm_90")
            if cuda.is_available():
                out = cuda.device_array(2, np.float32)
                skipped[1, 1](out)
                assert out.copy_to_host()[0] == out.copy_to_host()[1]
        """

    @ext.method(rule=calls.generate_rule, simulate=twins.generate)
    def generate(self, state, out):
        """One draw of ``rng.width`` values of ``rng.dtype`` into ``out`` (``cuda.local.array(rng.width, dtype)``),
        from this thread's generator in ``state``, which steps on. Per thread: no barrier.

        Example, continuing `Random`'s (normal values, 2 float64 a draw)::

            from numba import float64

            NORMAL = tiles.Random("philox", "normal", "float64", mean=1.0, stddev=0.5)

            @cuda.jit
            def normals(out):
                state = cuda.local.array(NORMAL.state_size, uint64)
                NORMAL.init(state, 42, cuda.grid(1))
                values = cuda.local.array(NORMAL.width, float64)
                NORMAL.generate(state, values)
                out[cuda.grid(1)] = values[0]

            cubin = tiles.compile(normals, "void(float64[::1])", arch="sm_80")
            if cuda.is_available():
                out = cuda.device_array(256, np.float64)
                normals[8, 32](out)
                assert abs(out.copy_to_host().mean() - 1.0) < 0.2
        """

    @ext.method(rule=calls.fill_rule, simulate=twins.fill)
    def fill(self, state, out):
        """Every value of ``out`` (a 1-D array of ``rng.dtype``, any size and strides), drawn by all the grid's
        threads, each from its generator in ``state``, which steps on: every thread of the grid calls it. The values
        go in packs of ``rng.width``: pack ``p`` (values ``p * width`` on) is the ``p // threads``-th draw of the
        thread of grid rank ``p % threads`` (ranks as ``cuda.grid(1)`` numbers a 1-D launch's threads), so the
        result is reproducible for a given seed and grid. A pack goes out as one store (16 bytes for Philox) where
        ``out`` is contiguous and so aligned: draws and their stores are all its loop does, two a step, where a
        kernel's own loop of `generate` computes each value's index. Per thread: no barrier.

        Example, continuing `Random`'s (an array of uniform values, a subsequence a thread)::

            @cuda.jit
            def uniform(out, seed):
                state = cuda.local.array(RNG.state_size, uint64)
                RNG.init(state, seed, cuda.grid(1))
                RNG.fill(state, out)

            cubin = tiles.compile(uniform, "void(float32[::1], uint64)", arch="sm_90")
            if cuda.is_available():
                out = cuda.device_array(10**6 + 3, np.float32)
                uniform[64, 256](out, 2026)
                got = out.copy_to_host()
                assert 0 < got.min() and got.max() <= 1 and abs(got.mean() - 0.5) < 0.01
        """
