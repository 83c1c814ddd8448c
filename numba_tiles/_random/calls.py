"""What `Random`'s calls in kernels check and instantiate: ``init``, ``generate`` and ``fill`` over cuRANDDx
(random.cuh)."""

from numba.cuda import types

from .. import extending as ext
from .._library import CURANDDX
from ..extending import Arg, Instance, Literal

HEADER = CURANDDX.header("random.cuh")
GENERATORS = {"philox": 0, "pcg": 1}  # random.cuh's Generator
DISTRIBUTIONS = {"uniform": 0, "normal": 1, "bits": 2, "log_normal": 3}  # random.cuh's Distribution
SEEDS = ("seed", "subsequence", "offset")


def _array_of(name, args, param, dtype, what, size=None):
    """Check that ``param`` is a 1-D array of ``dtype``: allocated as ``cuda.local.array(rng.<size>, <dtype>)``, or
    (``size`` None) any such array; the error says ``what`` of it before the dtype."""
    fix = f"allocate cuda.local.array(rng.{size}, {dtype})" if size else f"pass a 1-D array of {dtype}"
    found = ext.element(name, param, args[param], fix=fix)
    if found.name != dtype:
        raise ext.error(name, f"{param} holds {found.name}; {what} {dtype}", fix)


def state(name, args):
    """Check that ``state`` is a 1-D array of uint64 (a thread's generator)."""
    _array_of(name, args, "state", "uint64", "a generator's state is", "state_size")


def init_rule(name, args):
    rng = args["mm"]
    state(name, args)
    for param in SEEDS:
        ext.given_integer(name, args, param)
    template = HEADER.template(
        "numba_tiles::random_init", Generator=GENERATORS[rng.generator], StateWords=rng.state_size
    )
    params = (Arg("state", args["state"]), *(Arg(p, types.uint64, 0) for p in SEEDS))
    return Instance(intrinsic=name, header=HEADER, template=template, result=types.none, params=params)


def generate_rule(name, args):
    rng = args["mm"]
    state(name, args)
    _array_of(name, args, "out", rng.dtype, "this generator draws", "width")
    return _drawing(name, args, "random_generate")


def fill_rule(name, args):
    rng = args["mm"]
    state(name, args)
    _array_of(name, args, "out", rng.dtype, "this generator draws")
    return _drawing(name, args, "random_fill")


def _drawing(name, args, function):
    """The instance of random.cuh's ``function`` (``random_generate``, ``random_fill``) for ``args``' description,
    ``state`` and ``out``."""
    rng = args["mm"]
    real = rng.dtype if rng.distribution != "bits" else "float32"  # (bits take no parameters: any real type)
    cxx = ext.named(name, "dtype", real).cxx
    template = HEADER.template(
        f"numba_tiles::{function}",
        Generator=GENERATORS[rng.generator],
        StateWords=rng.state_size,
        Distribution=DISTRIBUTIONS[rng.distribution],
        Width=rng.width,
        P=cxx,
    )
    a, b = rng.parameters  # (the distribution's two parameters, C++ literals of its precision)
    # A shift of zero (uniform's low, normal's mean) is passed as -0.0: the same values (a draw's scaled value is
    # never -0.0), and adding -0.0 is the identity, which NVVM drops, where adding +0.0 is a float add a value.
    a = -0.0 if a == 0 else a
    params = (
        Arg("state", args["state"]),
        Arg("out", args["out"]),
        *(Literal(p, f"{cxx}({v!r})") for p, v in zip("ab", (a, b))),
    )
    return Instance(intrinsic=name, header=HEADER, template=template, result=types.none, params=params)
