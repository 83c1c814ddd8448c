"""numba-cuda, behind the compiler seam (`numba_tiles._backends.Backend`): every place numba_tiles types and
lowers in numba-cuda's kernels, beyond ``numba.cuda`` and its types.

Other modules import only ``from numba import cuda`` and ``from numba.cuda import types`` (a test enforces it),
so that a numba-cuda upgrade that moves or changes one of these breaks here, in one place, and
``tests/cpu/test_numba_contract.py`` says which touchpoint broke:
- ``NumbaPerformanceWarning``: numba-cuda's own, the class its launches warn with (`_link` warns
  with it when ptxas serializes a kernel's wgmma);
- `register`: a typing template and a lowering for a Python function (numba-cuda's public
  extension API: ``infer_global``, ``AbstractTemplate``, ``lower_builtin``), whose errors leave
  numba-cuda's compiler unwrapped (it wraps only its own error types);
- `typing_call`: the call being typed, as numba-cuda's type inference holds it (its source
  location, and what the IR knows of each argument: a constant's value, a local array's length);
- `target_flags`: the compute capability, line info and debug flags of the code being lowered,
  from numba-cuda's own target configuration stack (its own lowering reads them the same way);
- `define_callback`: a function in the kernel's module that calls a user's device function (compiled
  with numba-cuda's C ABI calling convention) for the C++ (a matmul's epilogue);
- `bound_threads`: the kernel's launch bounds (NVVM's ``maxntidx`` annotation) from the block shape;
- the lowering helpers (`call_entry`, `Call`): declare and call an ``extern "C"`` function, pass
  arrays as (data, size, stride) and scalars by pointer;
- `compile_device_ltoir`: numba-cuda's public ``compile`` of a user's function to LTO-IR;
- `allow_dynamic_shared_memory`, `resident_blocks`: a kernel's dynamic shared memory and occupancy, on its
  loaded function.
The compiles and links numba-cuda makes of whole kernels are hooked in `numba_cuda_compile`.
"""

import functools

from numba import cuda
from numba.cuda import types
from numba.cuda.core.errors import NumbaPerformanceWarning  # numba-cuda's own (numba.core's is another)

from .._dtypes import half_bits
from .._errors import call_site
from .simulated import simulator_enabled

__all__ = ["NumbaPerformanceWarning"]


def available():
    """Whether numba-cuda compiles kernels here (not under its simulator, where they run as Python)."""
    return not simulator_enabled()


def is_kernel(value):
    """Whether ``value`` is a numba-cuda kernel (a ``@cuda.jit`` dispatcher)."""
    from numba.cuda.dispatcher import CUDADispatcher

    return isinstance(value, CUDADispatcher)


def launch_arguments(args):
    """``args`` as a numba-cuda kernel's launch takes them: as they are (a handle iterates over its members)."""
    return tuple(args)


# --- typing and lowering -------------------------------------------------------------------


def register(func, name, pysig, resolve, lower):
    """Make ``func`` (the intrinsic ``name``, of Python signature ``pysig``) callable in kernels: ``resolve(args, kws,
    origins, debug)`` → signature, ``lower(call)`` → its value, ``call`` a `Call`.

    ``origins`` is `typing_call`'s (positional, keyword) origins of the call (`Origin`), or None; ``debug`` whether
    the kernel is a debug build. A `TilesError` that ``resolve`` raises gets the call's file, line and source
    after its message. numba-cuda's typing lets an exception that is not a Numba error leave the compiler as it
    is (``get_call_type`` re-raises it; a ``TypingError`` would be wrapped in its list of candidate
    implementations), so the message the user reads starts with ours.
    """
    from numba.cuda.extending import lower_builtin
    from numba.cuda.typing.templates import AbstractTemplate, infer_global

    from .._errors import TilesError

    class Template(AbstractTemplate):
        key = func
        prefer_literal = True  # compile-time constants arrive as literal types only in this pass

        def generic(self, args, kws):
            site = typing_call(func)
            try:
                return resolve(args, kws, site and site.origins, target_flags()[2])
            except TilesError as exc:
                if site is not None:
                    exc.args = (f"{exc.args[0]}\n\n{site.location}", *exc.args[1:])
                raise

    infer_global(func, types.Function(Template))
    lower_builtin(func, types.VarArg(types.Any))(
        lambda context, builder, sig, args: lower(Call(pysig, context, builder, sig, args))
    )


def typing_call(func):
    """The call of ``func`` that numba-cuda's type inference is typing now (a `CallSite`), or None.

    numba-cuda 0.30 types every call in ``ConstraintNetwork.propagate``, whose frame holds the
    ``constraint`` (a ``CallConstraint``: the IR variables of the arguments, the call's ``loc``)
    and the ``typeinfer`` (the function's IR and its variables' types): found by walking up
    the Python frames from the typing template (`_errors.call_site`). Elsewhere (another caller, or a
    numba-cuda whose internals moved: the contract test fails) there is none, and errors go without a location.
    """
    try:
        from numba.cuda.core import ir
        from numba.cuda.core.typeinfer import CallConstraint, ConstraintNetwork
    except ImportError:
        return None
    return call_site(func, getattr(ConstraintNetwork, "propagate", None), CallConstraint, ir, cuda.local.array)


class Keyed:
    """A mixin for the Numba type (of either compiler's types) of a compile-time object: named after it and keyed by
    it, so that two equal objects are one type."""

    def __init__(self, value):
        self.value = value
        super().__init__(f"{type(value).__name__}({value!r})")

    @property
    def key(self):
        return self.value


def attribute_type(value, literal, resolve):
    """The Numba type (of either compiler) of ``value``, a description's attribute: an int is a compile-time constant,
    ``literal(value)``; None is no such attribute; anything else (an intrinsic bound to it) is ``resolve(value)``."""
    if isinstance(value, int):
        return literal(value)
    return None if value is None else resolve(value)


def register_description(cls, attribute):
    """Make module-level instances of ``cls`` usable in kernels: ``attribute(obj, name)`` is an
    int (a compile-time constant there, e.g. a ``cuda.shared.array`` size), a function
    registered with `register` (an intrinsic bound to ``obj``), or None (no such attribute).
    Two equal objects are one Numba type: the object is its key.
    """
    from numba.cuda.core.imputils import lower_constant
    from numba.cuda.extending import core_models, infer_getattr, lower_getattr_generic, register_model, typeof_impl
    from numba.cuda.typing.templates import AttributeTemplate

    class Description(Keyed, types.Dummy):
        pass

    register_model(Description)(core_models.OpaqueModel)
    typeof_impl.register(cls)(lambda value, c: Description(value))
    lower_constant(Description)(lambda context, builder, ty, value: context.get_dummy_value())

    @infer_getattr
    class Attributes(AttributeTemplate):
        key = Description

        def generic_resolve(self, ty, attr):
            return attribute_type(attribute(ty.value, attr), types.IntegerLiteral, self.context.resolve_value_type)

    @lower_getattr_generic(Description)
    def lower(context, builder, ty, value, attr):
        found = attribute(ty.value, attr)
        return context.get_constant(types.intp, found) if isinstance(found, int) else context.get_dummy_value()


# --- handles: kernel arguments made of arrays, typed by what made them -------------------


class Handle(types.BaseTuple):
    """The Numba type of a kernel argument that is a bundle of arrays (``tiles.Matmul.operands``'s): passed
    to a kernel member by member, as a tuple of them is, and typed by its ``key`` (what made it), so that a
    kernel's call can tell one maker's handle from another's. ``members``: ((name, Numba type), ...);
    ``info``: what the maker wants to read back at typing."""

    def __init__(self, name, key, members, info=None):
        self.members = tuple(members)
        self.types = tuple(ty for _, ty in self.members)
        self._key, self.info = key, info
        super().__init__(name)

    @property
    def key(self):
        return self._key

    def __getitem__(self, i):
        return self.types[i]

    def __len__(self):
        return len(self.types)

    def __iter__(self):
        return iter(self.types)

    def index(self, member):
        return [name for name, _ in self.members].index(member)


@functools.cache
def _handle_model():
    from numba.cuda.extending import core_models, register_model

    @register_model(Handle)
    class HandleModel(core_models.StructModel):
        def __init__(self, dmm, fe_type):
            super().__init__(dmm, fe_type, list(fe_type.members))


def register_handle(cls):
    """Make instances of ``cls`` kernel arguments: each has ``_numba_type_`` (a `Handle`) and iterates over its
    members' values (the arrays numba-cuda passes, in the order of the type's members)."""
    from numba.cuda.extending import typeof_impl

    _handle_model()
    typeof_impl.register(cls)(lambda value, c: value._numba_type_)


def typing_context():
    """numba-cuda's typing context, its registries read."""
    from numba.cuda.descriptor import cuda_target

    cuda_target.typing_context.refresh()
    return cuda_target.typing_context


def is_device_array(value):
    """Whether ``value`` is numba-cuda's own device array (not a view of another library's, nor numba-cuda-mlir's)."""
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return isinstance(value, DeviceNDArray)


def signature(result, args, pysig):
    """A typing signature whose arguments fold by ``pysig`` (an `inspect.Signature`)."""
    from numba.cuda.typing.templates import signature as make

    return make(result, *args).replace(pysig=pysig)


def target_flags():
    """(compute capability, lineinfo, debug) of the code being typed or lowered now."""
    from numba.cuda.core.targetconfig import ConfigStack

    flags = ConfigStack().top()
    debuginfo = bool(flags.debuginfo)
    lineinfo = debuginfo and bool(flags.dbg_directives_only)
    # (9, 0, "a") for an arch-specific build: its intrinsics are those of (9, 0), as numba-cuda's own link
    # for an H100 (compute_90a) takes code lowered for (9, 0).
    return tuple(flags.compute_capability)[:2], lineinfo, debuginfo and not lineinfo


def constant(context, ty, value):
    """An LLVM constant of ``ty``. numba-cuda's get_constant writes an invalid ``i16 0.0`` for half types."""
    from llvmlite import ir

    if ty in (types.float16, types.bfloat16):
        return ir.Constant(context.get_value_type(ty), half_bits(ty, value))
    return context.get_constant(ty, value)


def _pass(context, builder, ty, value):
    """An entry point's arguments for one value: an array's (data, sizes, strides in items), else a pointer to it."""
    from llvmlite import ir
    from numba.cuda import cgutils

    if ty == types.voidptr:  # a pointer (`pointer_to`), as it is
        return [value]
    if isinstance(ty, types.Array):  # data, then each dimension's size, then each one's stride in items
        array = context.make_array(ty)(context, builder, value)
        itemsize = ir.Constant(
            context.get_value_type(types.intp), context.get_abi_sizeof(context.get_data_type(ty.dtype))
        )
        sizes = [builder.extract_value(array.shape, d) for d in range(ty.ndim)]
        strides = [builder.sdiv(builder.extract_value(array.strides, d), itemsize) for d in range(ty.ndim)]
        return [array.data, *sizes, *strides]
    slot = cgutils.alloca_once(builder, context.get_value_type(ty))
    builder.store(value, slot)
    return [slot]


def call_entry(context, builder, symbol, arguments, outputs, result):
    """Call ``extern "C" void symbol(args..., outputs*...)``: ``arguments`` are (Numba type, LLVM value)
    pairs, ``outputs`` the types it writes through pointers; returns the ``result`` value."""
    from llvmlite import ir
    from numba.cuda import cgutils

    values = [v for ty, value in arguments for v in _pass(context, builder, ty, value)]
    slots = [cgutils.alloca_once(builder, context.get_value_type(ty)) for ty in outputs]
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [v.type for v in values + slots]), symbol
    )
    builder.call(fn, values + slots)
    loaded = [builder.load(slot) for slot in slots]
    if isinstance(result, types.BaseTuple):
        return context.make_tuple(builder, result, loaded)
    return loaded[0] if loaded else context.get_dummy_value()


def define_callback(context, builder, symbol, body, value, coordinates, extras):
    """Define, once in the module being lowered, ``void symbol(const V*, const int64*..., const void* extras,
    V* result)``: it loads the item (``value``: its Numba type), its ``coordinates`` int64 coordinates and the
    tuple of ``extras`` (Numba types) from ``extras``, calls ``body`` (a device function Numba compiled with its
    C ABI, ``V(V, int64..., *extras)``) and stores what it returns. ``weak_odr``: a kernel and the device
    functions it links may each define it (not linkonce: no call in this module keeps it)."""
    from llvmlite import ir
    from numba.cuda import cgutils
    from numba.cuda.core.callconv import CUDACABICallConv

    module = builder.module
    if symbol in module.globals:
        return
    convention = CUDACABICallConv(context)
    argtypes = (value, *(types.int64,) * coordinates, *extras)
    target = cgutils.get_or_insert_function(module, convention.get_function_type(value, argtypes), body)
    item, index = context.get_value_type(value), context.get_value_type(types.int64)
    raw = ir.IntType(8).as_pointer()
    wrapper = ir.Function(
        module,
        ir.FunctionType(
            ir.VoidType(), [item.as_pointer(), *[index.as_pointer()] * coordinates, raw, item.as_pointer()]
        ),
        symbol,
    )
    wrapper.linkage = "weak_odr"
    inner = ir.IRBuilder(wrapper.append_basic_block())
    loaded = [inner.load(pointer) for pointer in wrapper.args[: 1 + coordinates]]
    if extras:
        packed = context.get_value_type(types.Tuple(extras))
        given = inner.load(inner.bitcast(wrapper.args[1 + coordinates], packed.as_pointer()))
        loaded += [inner.extract_value(given, i) for i in range(len(extras))]
    _, result = convention.call_function(inner, target, value, argtypes, loaded)
    inner.store(result, wrapper.args[-1])
    inner.ret_void()


def pointer_to(context, builder, ty, value):
    """An ``i8*`` to a copy of ``value`` (of Numba type ``ty``) on the stack; a null pointer for None."""
    from llvmlite import ir
    from numba.cuda import cgutils

    raw = ir.IntType(8).as_pointer()
    if value is None:
        return ir.Constant(raw, None)
    slot = cgutils.alloca_once(builder, context.get_value_type(ty))
    builder.store(value, slot)
    return builder.bitcast(slot, raw)


def bound_threads(builder, threads):
    """Compile the function being lowered for blocks of at most ``threads`` threads (NVVM's ``maxntidx``).

    The same annotation as ``@cuda.jit(launch_bounds=threads)``; ptxas then caps the kernel's
    registers so that such a block fits on an SM. Several calls keep the largest. An annotation
    made here precedes the one ``launch_bounds=`` adds after lowering, and NVVM takes the first.
    NVVM honours it on kernels only: a device function's calls do not bound their caller.
    """
    from llvmlite import ir
    from numba.cuda import cgutils

    module, function = builder.module, builder.function
    annotations = cgutils.get_or_insert_named_metadata(module, "nvvm.annotations")
    ours = [
        i
        for i, md in enumerate(annotations.operands)
        if md.operands[0] is function and getattr(md.operands[1], "string", None) == "maxntidx"
    ]
    if ours and annotations.operands[ours[0]].operands[2].constant >= threads:
        return
    bound = module.add_metadata([function, "maxntidx", ir.Constant(ir.IntType(32), threads)])
    if ours:
        annotations.operands[ours[0]] = bound
    else:
        annotations.add(bound)


class Call:
    """One call of an intrinsic that numba-cuda lowers: the `_backends.Call` of ``Spec.lower``. ``sig`` folds the
    arguments by the intrinsic's ``pysig``, those not given as ``Omitted(default)``."""

    mlir = False

    def __init__(self, pysig, context, builder, sig, args):
        self.context, self.builder = context, builder
        self.types = dict(zip(pysig.parameters, sig.args))
        self.values = dict(zip(pysig.parameters, args))

    def arguments(self):
        return dict(self.types)

    def target(self):
        cc, lineinfo, _ = target_flags()
        return cc, lineinfo

    def bound_threads(self, threads):
        bound_threads(self.builder, threads)

    def code_library(self):
        return self.context.active_code_library

    def link(self, code):
        self.code_library().add_linking_file(code)

    def link_arch_specific(self):
        """(numba-cuda links a kernel for an H100's arch-specific target itself: nothing to do.)"""
        return None

    def member(self, handle, member):
        return self.builder.extract_value(self.values[handle], self.types[handle].index(member))

    def callback(self, name, callback, omitted):
        callback.define(self.context, self.builder)
        return pointer_to(self.context, self.builder, self.types.get(name), None if omitted else self.values[name])

    def constant(self, ty, value):
        return constant(self.context, ty, value)

    def value(self, name, ty):
        return self.values[name]

    def call_entry(self, symbol, passed, outputs, result):
        return call_entry(self.context, self.builder, symbol, passed, outputs, result)


def compile_device_ltoir(pyfunc, signature, symbol, cc, fastmath=False):
    """A ``@cuda.jit(device=True)`` function's LTO-IR with C ABI under ``symbol``."""
    code, _ = cuda.compile(
        pyfunc, signature, device=True, abi="c", abi_info={"abi_name": symbol}, output="ltoir", cc=cc, fastmath=fastmath
    )
    return code


def normalize_signature(signature):
    """``(argument types, return type or None)`` of a Numba signature's text, ``"void(float32[::1])"``, as
    ``@cuda.jit`` reads it."""
    from numba.cuda.core import sigutils

    return sigutils.normalize_signature(signature)


def typeof(value):
    from numba import typeof as numba_typeof

    return numba_typeof(value)


def allow_dynamic_shared_memory(dispatcher, nbytes, args):
    """Let the launches of ``dispatcher`` with ``args`` (compiled for them now if need be, for the
    current device) take ``nbytes`` of dynamic shared memory; returns the device's opt-in limit.

    CUDA lets a kernel take over 48 KiB only once its attribute says so; numba-cuda has no
    option for it, so it is set here on the loaded kernel, as numba-cuda itself sets the carveout.
    """
    from cuda.bindings import driver

    limit = cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    if nbytes > limit:
        return limit
    kernel = dispatcher.compile(tuple(dispatcher.typeof_pyval(a) for a in args))
    function = kernel.library.get_cufunc()
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    (error,) = driver.cuKernelSetAttribute(attribute, int(nbytes), function.handle, function.device.id)
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {nbytes}) failed: {error}")
    return limit


def resident_blocks(dispatcher, args, threads, nbytes):
    """How many blocks of ``dispatcher`` launched with ``args`` (compiled for them now if need be), ``threads``
    a block and ``nbytes`` of dynamic shared memory the current GPU runs at once (the driver's occupancy
    query, over all its SMs)."""
    kernel = dispatcher.compile(tuple(dispatcher.typeof_pyval(a) for a in args))
    return kernel.max_cooperative_grid_blocks(threads, nbytes)


# --- user functions -------------------------------------------------------------------------


def python_function(value):
    """The Python function of a ``@cuda.jit(device=True)`` function (compiled or simulated), else None."""
    return getattr(value, "py_func", None) if isinstance(value, _device_function_types()) else None


def fastmath(value):
    """Whether the ``@cuda.jit(device=True)`` function ``value`` was declared with ``fastmath=True``."""
    return bool(getattr(value, "targetoptions", {}).get("fastmath"))


def _device_function_types():
    if cuda.config.ENABLE_CUDASIM:
        from numba.cuda.simulator.kernel import FakeCUDAKernel

        return (FakeCUDAKernel,)
    from numba.cuda.dispatcher import CUDADispatcher

    return (CUDADispatcher,)
