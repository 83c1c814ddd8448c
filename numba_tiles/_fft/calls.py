"""What `FFT`'s calls in kernels check and instantiate: ``execute`` over cuFFTDx (fft.cuh, a program of the
precision's cuFFTDx library), ``load``, ``store`` and ``index`` over the register layout alone (fft_layout.cuh,
with CUB's families)."""

from numba.cuda import types

from .. import _compile
from .. import extending as ext
from .._entry import OWN_STORAGE
from .._library import CUFFTDX
from ..extending import Arg, Instance, Literal
from . import database

LAYOUT = ext.CUB.header("fft_layout.cuh")
KINDS = {"c2c": 0, "r2c": 1, "c2r": 2}  # fft.cuh's Kind


def items(fft, name, args, param="items"):
    """Check that ``param`` is a 1-D array of the FFT's complex dtype (a thread's items)."""
    found = ext.element(name, param, args[param], fix=f"allocate cuda.local.array(fft.storage_size, {fft.value_type})")
    if found.name != fft.value_type:
        raise ext.error(
            name,
            f"{param} holds {found.name}; this FFT's items are {fft.value_type}",
            f"allocate cuda.local.array(fft.storage_size, {fft.value_type})",
        )
    return found


def same_on_this_arch(fft, name):
    """Check that the kernel's arch runs the description as it was made (cuFFTDx's records differ by arch)."""
    cc = _compile.typing_cc()
    if cc is None:
        return
    arch = "sm_%d%d" % cc
    here = database.sizes(name, fft.size, fft.precision, arch, fft.elements_per_thread, fft.ffts_per_block, fft.kind)
    if here != fft._sizes:
        raise ext.error(
            name,
            f"this kernel compiles for {arch}, where cuFFTDx runs this FFT with other sizes than on {fft.arch}, "
            f"for which it was described ({here} there)",
            f"describe it for the kernel's arch: tiles.FFT(..., arch={arch!r})",
        )


def execute_rule(name, args):
    same_on_this_arch(args["mm"], name)
    return execute_instance(name, args)


def execute_instance(name, args):
    """``execute``'s instance for the description ``args["mm"]``, whatever the kernel's arch (which
    `execute_rule` checks first; a description compiled ahead has none)."""
    fft = args["mm"]
    items(fft, name, args)
    shared = args["shared"]
    if shared is None and fft.shared_memory_bytes > ext.STATIC_SHARED_BYTES:
        raise ext.error(
            name,
            f"this FFT works in {fft.shared_memory_bytes} bytes of shared memory, more than a block's "
            f"{ext.STATIC_SHARED_BYTES} bytes of static shared memory",
            "pass shared=cuda.shared.array(0, uint8), dynamic shared memory: launch with fft.shared_memory_bytes "
            "of it (tiles.allow_dynamic_shared_memory), or describe the FFT with fewer ffts_per_block",
        )
    if shared is not None and (not isinstance(shared, types.Array) or shared.ndim != 1):
        raise ext.error(
            name,
            f"shared must be a 1-D shared array, got {shared}",
            "allocate cuda.shared.array(fft.shared_memory_bytes, uint8, alignment=16), or leave it out",
        )
    library = CUFFTDX[fft.precision]
    header = library.header("fft.cuh")
    template = header.template(
        "numba_tiles::fft_execute",
        Size=fft.size,
        P=ext.named(name, "dtype", fft.precision).cxx,
        Kind=KINDS[fft.kind],
        Folded=fft.real_mode == "folded",
        Forward=fft.direction == "forward",
        EPT=fft.elements_per_thread,
        FPB=fft.ffts_per_block,
        Stride=fft.stride,
        Storage=fft.storage_size,
        SharedBytes=fft.shared_memory_bytes,
    )
    return Instance(
        intrinsic=name,
        header=header,
        template=template,
        result=types.none,
        params=(
            Arg("items", args["items"]),
            Literal("shared", OWN_STORAGE) if shared is None else Arg("shared", shared),
        ),
        threads=fft.threads,
    )


def side(fft, output):
    """(dtype name, items, length) of the FFT's input or ``output`` side: the real side packed, the complex side of
    r2c and c2r holding size // 2 + 1 values. (`pairs` says where the real side's values are.)"""
    real = fft.kind == ("c2r" if output else "r2c")
    half = fft.kind == ("r2c" if output else "c2r")
    ept = fft.elements_per_thread
    return (
        fft.precision if real else fft.value_type,
        ept // 2 + 1 if half else ept,
        fft.size // 2 + 1 if half else fft.size,
    )


def pairs(fft, output):
    """Whether the input or ``output`` side holds real values in pairs: folded, item i's two values are elements
    2 * index(i) and 2 * index(i) + 1; else real value j is element index(j)."""
    return fft.real_mode == "folded" and fft.kind == ("c2r" if output else "r2c")


def move_rule(name, args, output):
    """``load`` (``output`` False: src into items) or ``store`` (True: items into dst)."""
    fft = args["mm"]
    items(fft, name, args)
    param = "dst" if output else "src"
    dtype, count, length = side(fft, output)
    which = "output" if output else "input"
    array = ext.element(name, param, args[param], fix=f"pass a 1-D array of {dtype}, e.g. x[row]")
    if array.name != dtype:
        raise ext.error(
            name,
            f"{param} holds {array.name}; this {fft.kind} FFT's {which} is {dtype}",
            f"pass a 1-D array of {dtype}, e.g. x[row]",
        )
    template = LAYOUT.template(
        f"numba_tiles::fft_{'store' if output else 'load'}",
        Stride=fft.stride,
        Items=count,
        Length=length,
        Storage=fft.storage_size,
        Pairs=pairs(fft, output),
    )
    ops = (Arg("items", args["items"]), Arg(param, args[param]))
    return Instance(
        intrinsic=name,
        header=LAYOUT,
        template=template,
        result=types.none,
        params=ops if output else ops[::-1],
        threads=fft.threads,
    )


def index_rule(name, args):
    fft = args["mm"]
    ext.integer(name, "i", args["i"])
    return Instance(
        intrinsic=name,
        header=LAYOUT,
        template=LAYOUT.template("numba_tiles::fft_index", Stride=fft.stride),
        result=types.int64,
        params=(Arg("i", types.int64),),
        threads=fft.threads,
    )
