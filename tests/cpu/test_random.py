"""tiles.Random with no GPU: descriptions and their refusals, the twins' generators against published answers, and
kernels compiled with their generators in registers."""

import re

import pytest
from numba import cuda, float32, uint32, uint64

import numba_tiles as tiles
from numba_tiles._random import twins

from ..support import randoms
from ..support.sass import instructions, registers, sass

# Random123's known-answer vectors of Philox4x32-10 (kat_vectors: counter, key, the four words it makes)
PHILOX_ANSWERS = [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    (
        [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
        [0xA4093822, 0x299F31D0],
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1],
    ),
]


@pytest.mark.parametrize("counter, key, words", PHILOX_ANSWERS)
def test_the_philox_twin_gives_random123s_answers(counter, key, words):
    assert twins.philox(counter, key) == words


def test_the_pcg_twin_gives_pcg32s_answers():
    """pcg32's demo (seed 42, sequence 54) from the state its seeding makes: the same step and output function."""
    stream = 54 << 1 | 1
    state = ((0 * twins.PCG_MULTIPLIER + stream + 42) * twins.PCG_MULTIPLIER + stream) & twins.M64
    words = [state, stream, 0, 0]
    got = [twins._pcg_next(words) for _ in range(6)]
    assert got == [0xA15C02B7, 0x7B47F409, 0xBA1D3330, 0x83D2F293, 0xBFA4784B, 0xCBED606E]


def test_descriptions_name_their_sizes():
    rng = tiles.Random()
    assert (rng.generator, rng.distribution, rng.dtype, rng.width, rng.state_size) == (
        "philox",
        "uniform",
        "float32",
        4,
        4,
    )
    assert tiles.Random("philox", "normal", "float64", mean=2.0).width == 2
    assert tiles.Random("philox", "log_normal", stddev=0.5).width == 4
    assert tiles.Random("pcg", "bits").width == 1 and tiles.Random("pcg", "bits").dtype == "uint32"
    assert tiles.Random("philox", "uniform", low=-1.0) == tiles.Random(low=-1) != tiles.Random()
    assert (
        repr(tiles.Random("philox", "normal", stddev=2))
        == "Random('philox', 'normal', 'float32', mean=0.0, stddev=2.0)"
    )


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (("mt19937",), {}, r"generator"),
        (("philox", "poisson"), {}, r"distribution"),
        (
            ("philox", "uniform", "int32"),
            {},
            r"uniform draws float32 or float64, got dtype='int32'. Fix: pass dtype='float32'",
        ),
        (("pcg", "uniform", "float64"), {}, r"PCG draws no uniform float64 here. Fix: use generator=\"philox\""),
        (("pcg", "normal"), {}, r"PCG draws no normal float32"),
        (("philox", "uniform"), {"mean": 1.0}, r"uniform takes no parameter 'mean'. Fix: pass low and high"),
        (("philox", "uniform"), {"low": 2.0, "high": 1.0}, r"low < high"),
        (("philox", "normal"), {"stddev": 0.0}, r"stddev > 0"),
        (("philox", "log_normal"), {"stddev": -1.0}, r"log_normal needs stddev > 0"),
        (("pcg", "log_normal"), {}, r'PCG draws no log_normal float32 here. Fix: use generator="philox"\.$'),
    ],
)
def test_an_unsupported_description_is_refused_with_the_fix(args, kwargs, message):
    with pytest.raises(tiles.TilesError, match=message):
        tiles.Random(*args, **kwargs)


PHILOX = tiles.Random("philox", "normal", "float32")
PCG = tiles.Random("pcg", "bits")


@cuda.jit
def sums(out, seed, draws):
    i = cuda.grid(1)
    state = cuda.local.array(PHILOX.state_size, uint64)
    PHILOX.init(state, seed, i)
    values = cuda.local.array(PHILOX.width, float32)
    total = float32(0)
    for _ in range(draws):
        PHILOX.generate(state, values)
        for j in range(PHILOX.width):
            total += values[j]
    out[i] = total


@cuda.jit
def words(out, seed, draws):
    i = cuda.grid(1)
    state = cuda.local.array(PCG.state_size, uint64)
    PCG.init(state, seed, i, 3)
    values = cuda.local.array(PCG.width, uint32)
    total = uint32(0)
    for _ in range(draws):
        PCG.generate(state, values)
        total ^= values[0]
    out[i] = total


@pytest.mark.parametrize(
    "kernel, signature, arch",
    [
        (sums, "void(float32[::1], uint64, int32)", "sm_80"),
        (sums, "void(float32[::1], uint64, int32)", "sm_90"),
        (words, "void(uint32[::1], uint64, int32)", "sm_90"),
    ],
    ids=["philox-normal-sm_80", "philox-normal-sm_90", "pcg-bits-sm_90"],
)
def test_a_drawing_loop_keeps_its_generator_in_registers(kernel, signature, arch, tmp_path):
    """A loop of draws: the generator's state and the values stay in registers (no LDL/STL), cuRANDDx's code is
    inlined (the state's checks fold away for a local array: the only calls are Box-Muller's square root's, CUDA's
    slow path for tiny operands), Philox's rounds are integer multiplies."""
    cubin = tiles.compile(kernel, signature, arch=arch)
    code = sass(cubin, tmp_path)
    opcodes = {ins[1 if ins[0].startswith("@") else 0].split(".")[0] for ins in instructions(code) if ins}
    assert not opcodes & {"LDL", "STL"}, sorted(opcodes)
    assert set(re.findall(r"CALL[.A-Z]* `\(([$\w]+)\)", code)) <= {"$__internal_0_$__cuda_sm20_sqrt_rn_f32_slowpath"}
    assert re.search(r"\bIMAD\.(WIDE|HI)", code), sorted(opcodes)
    assert registers(cubin) <= 64


@pytest.mark.parametrize(
    "distribution, dtype, arch",
    # (the normal one: tests/cpu/test_mlir.py's fill, whose program it shares)
    [("uniform", "float32", "sm_90"), ("normal", "float32", "sm_80")],
)
def test_a_fill_stores_a_draw_at_a_time(distribution, dtype, arch, tmp_path):
    """``Random.fill``'s loop over a contiguous array: each Philox draw goes out as one 16-byte store, the generator
    stays in registers, and the loop takes two uniform float32 draws a step in about 70 instructions each (Philox's
    ten rounds are 60; a kernel's own loop of ``generate`` and indexed stores took about 150 a draw)."""
    rng = tiles.Random("philox", distribution, dtype)
    fill = randoms.fill_kernel(rng)
    code = sass(tiles.compile(fill, f"void({dtype}[::1], uint64)", arch=arch), tmp_path)
    opcodes = {ins[1 if ins[0].startswith("@") else 0].split(".")[0] for ins in instructions(code) if ins}
    assert "STG.E.128" in code and not opcodes & {"LDL", "STL"}, sorted(opcodes)
    if distribution == "uniform":
        lines = code.splitlines()
        store = next(i for i, line in enumerate(lines) if "STG.E.128" in line)
        start = max(i for i in range(store) if re.match(r"\s*\.L_x_\d+:", lines[i]))
        end = next(i for i in range(store, len(lines)) if "BRA" in lines[i])
        step = [line for line in lines[start : end + 1] if re.search(r"/\*[0-9a-f]{4}\*/", line)]
        draws = sum("STG.E.128" in line for line in step)
        assert draws == 2 and len(step) <= 75 * draws and not any("FADD" in line for line in step), (draws, len(step))


def test_misused_calls_are_refused_at_typing():
    @cuda.jit
    def wrong_state(out):
        state = cuda.local.array(4, uint32)
        PHILOX.init(state, 1)

    with pytest.raises(tiles.TilesError, match=r"state holds uint32; a generator's state is uint64"):
        tiles.compile(wrong_state, "void(float32[::1])", arch="sm_90")

    @cuda.jit
    def wrong_out(out):
        state = cuda.local.array(PHILOX.state_size, uint64)
        PHILOX.init(state, 1)
        PHILOX.generate(state, out)

    with pytest.raises(tiles.TilesError, match=r"out holds float64; this generator draws float32"):
        tiles.compile(wrong_out, "void(float64[::1])", arch="sm_90")

    @cuda.jit
    def wrong_fill(out):
        state = cuda.local.array(PHILOX.state_size, uint64)
        PHILOX.init(state, 1)
        PHILOX.fill(state, out)

    with pytest.raises(tiles.TilesError, match=r"Random.fill: out holds float64; .* Fix: pass a 1-D array of float32"):
        tiles.compile(wrong_fill, "void(float64[::1])", arch="sm_90")
    with pytest.raises(tiles.TilesError, match=r"Random.fill: out must be a 1-D"):
        tiles.compile(wrong_fill, "void(float32[:, ::1])", arch="sm_90")

    @cuda.jit
    def float_seed(out, seed):
        state = cuda.local.array(PHILOX.state_size, uint64)
        PHILOX.init(state, seed)

    with pytest.raises(tiles.TilesError, match=r"seed must be an integer"):
        tiles.compile(float_seed, "void(float32[::1], float32)", arch="sm_90")
