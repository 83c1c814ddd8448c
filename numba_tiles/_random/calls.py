"""What `Random`'s calls in kernels check and instantiate: ``init`` and ``generate`` over cuRANDDx (random.cuh)."""

from numba.cuda import types

from .. import extending as ext
from .._library import CURANDDX
from ..extending import Arg, Instance, Literal

HEADER = CURANDDX.header("random.cuh")
GENERATORS = {"philox": 0, "pcg": 1}  # random.cuh's Generator
DISTRIBUTIONS = {"uniform": 0, "normal": 1, "bits": 2}  # random.cuh's Distribution
SEEDS = ("seed", "subsequence", "offset")


def state(rng, name, args):
    """Check that ``state`` is a 1-D array of uint64 (a thread's generator)."""
    found = ext.element(name, "state", args["state"], fix="allocate cuda.local.array(rng.state_size, uint64)")
    if found.name != "uint64":
        raise ext.error(
            name,
            f"state holds {found.name}; a generator's state is uint64",
            "allocate cuda.local.array(rng.state_size, uint64)",
        )


def init_rule(name, args):
    rng = args["mm"]
    state(rng, name, args)
    for param in SEEDS:
        ext.given_integer(name, args, param)
    template = HEADER.template(
        "numba_tiles::random_init", Generator=GENERATORS[rng.generator], StateWords=rng.state_size
    )
    params = (Arg("state", args["state"]), *(Arg(p, types.uint64, 0) for p in SEEDS))
    return Instance(intrinsic=name, header=HEADER, template=template, result=types.none, params=params)


def generate_rule(name, args):
    rng = args["mm"]
    state(rng, name, args)
    found = ext.element(name, "out", args["out"], fix=f"allocate cuda.local.array(rng.width, {rng.dtype})")
    if found.name != rng.dtype:
        raise ext.error(
            name,
            f"out holds {found.name}; this generator draws {rng.dtype}",
            f"allocate cuda.local.array(rng.width, {rng.dtype})",
        )
    real = rng.dtype if rng.distribution != "bits" else "float32"  # (bits take no parameters: any real type)
    cxx = ext.named(name, "dtype", real).cxx
    template = HEADER.template(
        "numba_tiles::random_generate",
        Generator=GENERATORS[rng.generator],
        StateWords=rng.state_size,
        Distribution=DISTRIBUTIONS[rng.distribution],
        Width=rng.width,
        P=cxx,
    )
    a, b = rng.parameters  # (the distribution's two parameters, C++ literals of its precision)
    params = (
        Arg("state", args["state"]),
        Arg("out", args["out"]),
        *(Literal(p, f"{cxx}({v!r})") for p, v in zip("ab", (a, b))),
    )
    return Instance(intrinsic=name, header=HEADER, template=template, result=types.none, params=params)
