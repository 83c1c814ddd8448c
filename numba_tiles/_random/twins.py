"""NumPy twins of `Random`'s calls on the simulator: cuRANDDx's Philox4x32-10 and PCG step for step, on the same
state words as the GPU's (random.cuh), so that a kernel draws the same bits in both places.

Distributions: raw words and uniform values are the GPU's exactly (uniform's scaling to ``(low, high]`` is one
fused multiply-add there, here an exact product rounded once, to float64 then to float32); normal values are
Box-Muller's on the same words, within a few units in the last place (the GPU's float32 sine and cosine are its fast
intrinsics: about 1e-6 apart, times the radius); log-normal values are ``exp`` of those (the same bound on the
exponent, relative to the value).
"""

from fractions import Fraction

import numpy as np

from .._backends import simulated
from .._errors import error

M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # the round's multipliers
PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # the key's increments between rounds (Weyl)
PCG_MULTIPLIER, PCG_SEED, PCG_INCREMENT = 6364136223846793005, 0x853C49E6748FEA9B, 0xDA3E39CB94B95BDB


# ---- Philox4x32-10: a 128-bit counter (4 words) and a 64-bit key (2 words) ----


def philox(counter, key, rounds=10):
    """The 4 words Philox4x32 makes of ``counter`` (4 words) and ``key`` (2 words)."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + PHILOX_W[0]) & M32, (k1 + PHILOX_W[1]) & M32
        p0, p1 = PHILOX_M[0] * c0, PHILOX_M[1] * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
    return [c0, c1, c2, c3]


def _philox_skip(counter, n):
    """cuRANDDx's ``philox_state_incr(n)``: ``n`` draws on (its carry test, wrap-around and all)."""
    low, high = n & M32, (n >> 32) & M32
    counter[0] = (counter[0] + low) & M32
    if counter[0] < low:
        high = (high + 1) & M32
    counter[1] = (counter[1] + high) & M32
    if high <= counter[1]:
        return
    counter[2] = (counter[2] + 1) & M32
    if counter[2]:
        return
    counter[3] = (counter[3] + 1) & M32


def _philox_subsequence(counter, n):
    """cuRANDDx's ``philox_state_incr_hi(n)``: the counter's upper half moves by ``n``."""
    low, high = n & M32, (n >> 32) & M32
    counter[2] = (counter[2] + low) & M32
    if counter[2] < low:
        high += 1
    counter[3] = (counter[3] + high) & M32


def _philox_state(words):
    w = [int(x) for x in words[:3]]
    return [w[0] & M32, w[0] >> 32, w[1] & M32, w[1] >> 32], [w[2] & M32, w[2] >> 32]


def _philox_save(words, counter, key):
    words[0] = counter[0] | counter[1] << 32
    words[1] = counter[2] | counter[3] << 32
    words[2] = key[0] | key[1] << 32
    words[3] = 0


# ---- PCG (XSH-RR 64/32): a 64-bit LCG state, its stream and increment ----


def _pcg_skip(state, stream, n):
    """The LCG ``n`` steps on (cuRANDDx's ``skip_offset``: by squaring)."""
    acc_mult, acc_plus, cur_mult, cur_plus = 1, 0, PCG_MULTIPLIER, stream
    while n > 0:
        if n & 1:
            acc_mult = acc_mult * cur_mult & M64
            acc_plus = (acc_plus * cur_mult + cur_plus) & M64
        cur_plus = (cur_mult + 1) * cur_plus & M64
        cur_mult = cur_mult * cur_mult & M64
        n >>= 1
    return (acc_mult * state + acc_plus) & M64


def _pcg_next(words):
    """One 32-bit word from the PCG state in ``words``, which steps on."""
    old, stream = int(words[0]), int(words[1])
    words[0] = (old * PCG_MULTIPLIER + stream) & M64
    shifted = (((old >> 18) ^ old) >> 27) & M32
    rot = old >> 59
    return ((shifted >> rot) | (shifted << (-rot & 31))) & M32


# ---- the calls ----


def init(instance, args):
    rng, words = args["mm"], args["state"]
    _check(instance.intrinsic, rng, words)
    seed, subsequence, offset = (int(args[p] or 0) & M64 for p in ("seed", "subsequence", "offset"))
    if rng.generator == "philox":
        counter, key = [0, 0, 0, 0], [seed & M32, seed >> 32]
        _philox_subsequence(counter, subsequence)
        _philox_skip(counter, offset)
        _philox_save(words, counter, key)
    else:
        stream = (subsequence * 2 + PCG_INCREMENT) & M64
        words[0], words[1], words[2], words[3] = _pcg_skip(seed, stream, offset), stream, PCG_INCREMENT, 0


def _words(rng, words, count):
    """``count`` 32-bit words drawn from the state ``words``: Philox's in fours (one draw each), PCG's one by one."""
    found = []
    while len(found) < count:
        if rng.generator == "philox":
            counter, key = _philox_state(words)
            found += philox(counter, key)
            _philox_skip(counter, 1)
            _philox_save(words, counter, key)
        else:
            found.append(_pcg_next(words))
    return found


def _scaled(value, scale, shift, dtype):
    """``value * scale + shift`` rounded once (the GPU's fused multiply-add), as ``dtype``."""
    if (scale, shift) == (1, 0):
        return dtype.type(value)
    return dtype.type(float(Fraction(float(value)) * Fraction(float(scale)) + Fraction(float(shift))))


def _uniform32(word):
    return np.float32(word) * np.float32(2.0**-32) + np.float32(2.0**-33)


def _uniform53(low, high):
    """cuRAND's double from two words: 53 bits, ``low ^ high << 21``, centred in its step."""
    return float(low ^ (high << 21)) * 2.0**-53 + 2.0**-54


def _box_muller32(x, y):
    step = np.float32(np.float32(2.3283064e-10) * np.float32(6.2831855))  # (curand_globals.h's constant, in float)
    u = np.float32(_uniform32(x))
    v = np.float32(float(np.float32(y)) * float(step) + float(step / np.float32(2)))
    radius = np.sqrt(-2.0 * np.log(np.float64(u)))
    return radius * np.sin(np.float64(v)), radius * np.cos(np.float64(v))


def _box_muller64(x0, x1, y0, y1):
    u = _uniform53(x0, x1)
    v = float(y0 ^ (y1 << 21)) * 2.0**-52 + 2.0**-53
    radius = np.sqrt(-2.0 * np.log(u))
    return radius * np.sin(np.pi * v), radius * np.cos(np.pi * v)


def generate(instance, args):
    rng, words, out = args["mm"], args["state"], args["out"]
    _check(instance.intrinsic, rng, words)
    if out.ndim != 1 or out.size < rng.width or out.dtype != np.dtype(rng.dtype):
        raise error(
            instance.intrinsic,
            f"out is {out.dtype} {out.shape}; a draw makes {rng.width} values of {rng.dtype}",
            f"allocate cuda.local.array(rng.width, {rng.dtype})",
        )
    out[: rng.width] = _draw(rng, words)


def fill(instance, args):
    """random.cuh's ``random_fill``: pack p of ``out`` from the thread of grid rank p % threads, its (p //
    threads)-th draw; the last pack, partial, as much of it as ``out`` holds."""
    rng, words, out = args["mm"], args["state"], args["out"]
    _check(instance.intrinsic, rng, words)
    if out.ndim != 1 or out.dtype != np.dtype(rng.dtype):
        raise error(
            instance.intrinsic,
            f"out is {out.dtype} {out.shape}; a fill takes a 1-D array of {rng.dtype}",
            f"pass a 1-D array of {rng.dtype}",
        )
    thread = simulated.simulated_thread()
    (bx, by, bz), (block, blocks) = simulated.simulated_block_dim(thread), simulated.simulated_linear_block(thread)
    t = thread.threadIdx
    rank = block * bx * by * bz + t.x + bx * (t.y + by * t.z)
    for p in range(rank, -(-out.size // rng.width), blocks * bx * by * bz):
        values = _draw(rng, words)
        out[p * rng.width : (p + 1) * rng.width] = values[: out.size - p * rng.width]


def _draw(rng, words):
    """One draw's ``rng.width`` values (of ``rng.dtype``) from the generator in ``words``, which steps on."""
    dtype = np.dtype(rng.dtype)
    double = dtype == np.float64
    drawn = _words(rng, words, 4 if rng.generator == "philox" else 1)
    a, b = rng.parameters
    if rng.distribution == "bits":
        values = drawn
    elif rng.distribution == "uniform":
        pairs = zip(drawn[0::2], drawn[1::2])
        values = [_uniform53(x, y) for x, y in pairs] if double else [_uniform32(w) for w in drawn]
        values = [_scaled(v, dtype.type(b) - dtype.type(a), dtype.type(a), dtype) for v in values]
    else:
        if double:
            values = _box_muller64(*drawn)
        else:
            values = [v for x, y in zip(drawn[0::2], drawn[1::2]) for v in _box_muller32(x, y)]
        values = [_scaled(dtype.type(v), dtype.type(b), dtype.type(a), dtype) for v in values]
        if rng.distribution == "log_normal":
            values = [np.exp(np.float64(v)) for v in values]
    return np.array(values[: rng.width]).astype(dtype)


def _check(name, rng, words):
    if words.ndim != 1 or words.size < rng.state_size or words.dtype != np.uint64:
        raise error(
            name,
            f"state is {words.dtype} {words.shape}; a generator needs {rng.state_size} uint64",
            "allocate cuda.local.array(rng.state_size, uint64)",
        )
