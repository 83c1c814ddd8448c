"""Every place numba_tiles touches numba / numba-cuda beyond ``numba.cuda`` and its types.

Other modules import only ``from numba import cuda`` and ``from numba.cuda import types``
(a test enforces it), so that a numba-cuda upgrade that moves or changes one of these breaks
here, in one place, and ``tests/cpu/test_numba_contract.py`` says which touchpoint broke.

The touchpoints, each with its contract test:
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
- the lowering helpers (`call_entry`): declare and call an ``extern "C"`` function, pass
  arrays as (data, size, stride) and scalars by pointer;
- `lazy_ltoir`: a public ``numba.cuda.LTOIR`` whose bytes are made when numba-cuda first reads
  them (its documented file-object form), so that all of a kernel's intrinsics compile together;
- `compile_kernel_ltoir` / `compile_device_ltoir`: numba-cuda's public ``compile_all`` /
  ``compile`` to LTO-IR;
- `link_line_info_with_nvrtc`: numba-cuda's debug-info module flags given NVRTC's merge behavior,
  so that a kernel with line info links with our LTO-IR;
- `device_functions_for`: device functions compiled for the kernel's arch, with no GPU;
- `cache_kernels_with_intrinsics`: ``@cuda.jit(cache=True)`` for kernels that link our LTO-IR;
- `link_through`: numba-cuda's link of a kernel that links our LTO-IR, through the disk cache;
- the simulator hooks: the simulated thread, its block's shape, a per-block scratch dict, and the
  stand-in for ``numba.cuda`` in a simulated kernel's globals;
- `bytecode_ir`: numba-cuda's bytecode front end (the compiler's first step) over a simulated kernel's
  code, in plain terms, for the simulator's reading of which arguments are compile-time constants.
"""

import contextlib
import functools
import io
import sys
import typing
import weakref

from numba import cuda
from numba.cuda import types
from numba.cuda.core.errors import NumbaPerformanceWarning  # numba-cuda's own (numba.core's is another)

from ._dtypes import half_bits
from ._errors import call_site

__all__ = ["NumbaPerformanceWarning"]


# --- typing and lowering -------------------------------------------------------------------

def register(func, resolve, lower, error_type):
    """Make ``func`` callable in kernels: ``resolve(args, kws, origins)`` → signature,
    ``lower(context, builder, sig, args)`` → its value.

    ``origins`` is `typing_call`'s (positional, keyword) origins of the call (`Origin`), or None. An
    ``error_type`` that ``resolve`` raises gets the call's file, line and source after its message.
    numba-cuda's typing lets an exception that is not a Numba error leave the compiler as it is
    (``get_call_type`` re-raises it; a ``TypingError`` would be wrapped in its list of candidate
    implementations), so the message the user reads starts with ours.
    """
    from numba.cuda.extending import lower_builtin
    from numba.cuda.typing.templates import AbstractTemplate, infer_global

    class Template(AbstractTemplate):
        key = func
        prefer_literal = True  # compile-time constants arrive as literal types only in this pass

        def generic(self, args, kws):
            site = typing_call(func)
            try:
                return resolve(args, kws, site and site.origins)
            except error_type as exc:
                if site is not None:
                    exc.args = (f"{exc.args[0]}\n\n{site.location}", *exc.args[1:])
                raise

    infer_global(func, types.Function(Template))
    lower_builtin(func, types.VarArg(types.Any))(lower)


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


def handle_member(builder, ty, value, member):
    """The member ``member`` of ``value``, a `Handle` of type ``ty``, being lowered."""
    return builder.extract_value(value, ty.index(member))


def typing_context():
    """numba-cuda's typing context, its registries read."""
    from numba.cuda.descriptor import cuda_target

    cuda_target.typing_context.refresh()
    return cuda_target.typing_context


def is_device_array(value):
    """Whether ``value`` is numba-cuda's own device array (not a view of another library's, nor numba-cuda-mlir's)."""
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return isinstance(value, DeviceNDArray)


def resident_blocks(dispatcher, args, threads, nbytes):
    """How many blocks of ``dispatcher`` launched with ``args`` (compiled for them now if need be), ``threads``
    a block and ``nbytes`` of dynamic shared memory the current GPU runs at once (the driver's occupancy
    query, over all its SMs)."""
    kernel = dispatcher.compile(tuple(dispatcher.typeof_pyval(a) for a in args))
    return kernel.max_cooperative_grid_blocks(threads, nbytes)


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
        itemsize = ir.Constant(context.get_value_type(types.intp), context.get_abi_sizeof(context.get_data_type(ty.dtype)))
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
        builder.module, ir.FunctionType(ir.VoidType(), [v.type for v in values + slots]), symbol)
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
    wrapper = ir.Function(module, ir.FunctionType(ir.VoidType(), [item.as_pointer(), *[index.as_pointer()] * coordinates,
                                                                 raw, item.as_pointer()]), symbol)
    wrapper.linkage = "weak_odr"
    inner = ir.IRBuilder(wrapper.append_basic_block())
    loaded = [inner.load(pointer) for pointer in wrapper.args[:1 + coordinates]]
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
    ours = [i for i, md in enumerate(annotations.operands)
            if md.operands[0] is function and getattr(md.operands[1], "string", None) == "maxntidx"]
    if ours and annotations.operands[ours[0]].operands[2].constant >= threads:
        return
    bound = module.add_metadata([function, "maxntidx", ir.Constant(ir.IntType(32), threads)])
    if ours:
        annotations.operands[ours[0]] = bound
    else:
        annotations.add(bound)


def active_library(context):
    """The code library (a kernel's or a device function's) being lowered now."""
    return context.active_code_library


def link(library, code):
    """Link ``code`` (a ``numba.cuda.LTOIR``) into the code ``library``."""
    library.add_linking_file(code)


# --- code objects and numba-cuda's compilers ---------------------------------------------

class _Deferred(io.BytesIO):
    """A file object whose content is made on first read: ``LTOIR`` reads a file object's ``getvalue()``
    when numba-cuda takes its ``data`` at link time."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def getvalue(self):
        return self._make()


_ours = weakref.WeakSet()  # the LTO-IR objects numba_tiles linked into code libraries


def lazy_ltoir(name, make):
    """A ``numba.cuda.LTOIR`` named ``name`` whose bytes are ``make()``, called when numba-cuda links it."""
    code = cuda.LTOIR(_Deferred(make), name=name)
    _ours.add(code)
    return code


def ltoir(name, data):
    code = cuda.LTOIR(data, name=name)
    _ours.add(code)
    return code


def compile_kernel_ltoir(pyfunc, signature, cc, lineinfo=False, debug=False, fresh=False, fastmath=False,
                         launch_bounds=None):
    """A kernel's LTO-IR modules as bytes: numba-cuda's first, then every linked object's (``fresh``: its
    device functions compiled again, see `device_functions_for`)."""
    with device_functions_for(cc, fresh):
        codes, _ = cuda.compile_all(pyfunc, signature, device=False, abi="numba", output="ltoir", cc=cc,
                                    lineinfo=lineinfo, debug=debug, opt=not debug, fastmath=fastmath,
                                    launch_bounds=launch_bounds)
    # bytes, LTOIR objects (.data), or cuda.core ObjectCode (.code: numba-cuda's own fp16 helpers)
    return [code if isinstance(code, bytes) else getattr(code, "data", None) or code.code for code in codes]


class _Device:
    def __init__(self, cc):
        self.compute_capability = cc


@contextlib.contextmanager
def device_functions_for(cc, fresh=False):
    """While the block runs, in this thread, the ``@cuda.jit(device=True)`` functions a kernel calls
    compile for ``cc`` (a tuple), as the kernel does, with no GPU needed; ``fresh``: compiled again,
    in versions dropped afterwards (so that their intrinsics are lowered again, for `shared_memory`).

    numba-cuda 0.30 compiles a device function called from a kernel for the current device
    (``CUDADispatcher.compile_device`` asks ``get_current_device()``), whatever the kernel's
    ``cc``, and keeps one compiled version per argument types. So ``tiles.compile`` of a kernel
    that calls a helper failed on a machine with no GPU, and on one with a GPU the helper's
    intrinsics were built for that GPU, not for the arch asked. Here the dispatcher module's
    ``get_current_device`` answers ``cc`` to this thread, and a device function's compiled
    versions for another cc than the GPU's are kept apart (``overloads`` read through a
    property), so that neither a launch nor another arch ever takes them. Numba's compiler lock
    is held throughout. A numba-cuda without these names is left as it is (the contract test
    fails).
    """
    import collections
    import threading

    from numba.cuda import dispatcher
    from numba.cuda.core.compiler_lock import global_compiler_lock

    cls = dispatcher.CUDADispatcher
    original = getattr(dispatcher, "get_current_device", None)
    if original is None or "overloads" in vars(cls) or not hasattr(cls, "compile_device"):
        yield
        return
    me = threading.get_ident()

    @functools.cache
    def own():
        """The GPU's cc, asked only once a device function compiles (it makes numba-cuda's context)."""
        try:
            return tuple(original().compute_capability)
        except Exception:  # no driver or no GPU: every version is another cc's
            return None

    def get_current_device():
        return _Device(cc) if threading.get_ident() == me else original()

    throwaway = collections.defaultdict(collections.OrderedDict)

    def table(self):
        if self.targetoptions.get("device") and threading.get_ident() == me:
            if fresh:
                return throwaway[id(self)]
            if tuple(cc) != own():
                by_cc = self.__dict__.setdefault("_numba_tiles_overloads", {})
                return by_cc.setdefault(tuple(cc), collections.OrderedDict())
        return self.__dict__["overloads"]

    def set_table(self, value):
        self.__dict__["overloads"] = value

    with global_compiler_lock:
        dispatcher.get_current_device, cls.overloads = get_current_device, property(table, set_table)
        try:
            yield
        finally:
            dispatcher.get_current_device = original
            del cls.overloads


def compile_device_ltoir(pyfunc, signature, symbol, cc, fastmath=False):
    """A ``@cuda.jit(device=True)`` function's LTO-IR with C ABI under ``symbol``."""
    code, _ = cuda.compile(pyfunc, signature, device=True, abi="c", abi_info={"abi_name": symbol},
                           output="ltoir", cc=cc, fastmath=fastmath)
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
    error, = driver.cuKernelSetAttribute(attribute, int(nbytes), function.handle, function.device.id)
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {nbytes}) failed: {error}")
    return limit


# --- numba-cuda's extension entry point -------------------------------------------------

EXTENSION_LOADER = "numba.cuda.core.entrypoints"  # the module that loads ``numba_cuda_extensions`` entry points


def loaded_as_extension():
    """Whether numba_tiles is being imported by numba-cuda's extension loader (our ``numba_cuda_extensions``
    entry point, at a process's first kernel compile) rather than by code that uses it."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == EXTENSION_LOADER:
            return True
        frame = frame.f_back
    return False


# --- @cuda.jit(cache=True) ----------------------------------------------------------------

def cache_kernels_with_intrinsics(stamp):
    """Let ``@cuda.jit(cache=True)`` cache kernels that call intrinsics, and invalidate them with ``stamp()``.

    numba-cuda 0.30 refuses to pickle a code library that has linking files
    (``CUDACodeLibrary._reduce_states``: "Cannot pickle CUDACodeLibrary with linking files"),
    and every kernel that calls an intrinsic links LTO-IR of ours, so ``cache=True`` failed at the
    first launch. numba-cuda saves a kernel after ``bind()``, when its code library holds the
    linked cubin for the GPU's cc; the cache entry is per cc (its index key has the cc) and is
    loaded as that cubin, never linked again. So ours are left out of what is pickled when the
    cubin is there (other linking files still refuse, as before). ``stamp()`` (numba_tiles',
    the toolchain's and every library's versions, and the options from the environment) joins
    numba-cuda's index key, so that a kernel cached under another toolchain, ``lto_libs`` or
    ``NUMBA_TILES_DEBUG`` is compiled again. A numba-cuda without these names is left as it is
    (``cache=True`` then fails as before, and the contract test fails).
    """
    from numba.cuda import codegen, dispatcher

    library, cache = getattr(codegen, "CUDACodeLibrary", None), getattr(dispatcher, "CUDACache", None)
    if not (hasattr(library, "_reduce_states") and hasattr(cache, "_index_key")) or hasattr(library, "_numba_tiles"):
        return
    reduce_states, index_key = library._reduce_states, cache._index_key

    def _reduce_states(self):
        ours = {f for f in self._linking_files if f in _ours}
        if not ours or not self._cubin_cache:
            return reduce_states(self)
        self._linking_files -= ours
        try:
            return reduce_states(self)
        finally:
            self._linking_files |= ours

    def _index_key(self, sig, codegen):
        return index_key(self, sig, codegen) + (("numba_tiles", stamp()),)

    library._reduce_states, cache._index_key, library._numba_tiles = _reduce_states, _index_key, True


def link_through(link):
    """Link every kernel that links LTO-IR of ours with ``link(objects, options)`` (`_link.link`: the disk cache).

    numba-cuda 0.30 links a kernel at its first launch in ``_Linker.complete`` (cuda.core's
    ``Linker`` over the ``ObjectCode``s it gathered, with the options of
    ``_get_linker_options``), which returns the cubin as an ``ObjectCode``. For a link whose
    objects include one of ours (by name), ``complete`` takes the cubin from ``link`` instead;
    its info and error logs are then empty. Other links are numba-cuda's, as before. A numba-cuda
    without these names is left as it is (every launch links, and the contract test fails).
    """
    from cuda.core import ObjectCode
    from numba.cuda.cudadrv import driver

    linker = getattr(driver, "_Linker", None)
    if not all(hasattr(linker, n) for n in ("complete", "_get_linker_options")) or hasattr(linker, "_numba_tiles"):
        return
    complete = linker.complete

    def complete_through_link(self):
        names = {code.name for code in list(_ours)}
        if not any(getattr(o, "name", None) in names for o in self._object_codes):
            return complete(self)
        cubin = link(self._object_codes, self._get_linker_options(ptx=False))
        # As after numba-cuda's own link: `info_log` (read by get_cubin) needs `linker` set and `_complete`.
        self.linker, self._info_log, self._error_log, self._complete = link, "", "", True
        return ObjectCode.from_cubin(cubin, name=f"{self.arch}.cubin")

    linker.complete, linker._numba_tiles = complete_through_link, True


# --- line info -----------------------------------------------------------------------------

_LLVM_FLAG_ERROR = 1  # LLVM's module-flag merge behavior "Error", which NVRTC's LTO-IR uses


def link_line_info_with_nvrtc():
    """Give numba-cuda's "Dwarf Version" / "Debug Info Version" module flags NVRTC's merge behavior.

    With ``lineinfo=True`` or ``debug=True``, numba-cuda marks these flags with LLVM's "Warning"
    behavior (2). NVRTC's LTO-IR marks them "Error" (1), with or without ``-lineinfo``.
    nvJitLink refuses to link two modules whose behaviors for one flag differ ("linking module
    flags 'Debug Info Version': IDs have conflicting behaviors"), so every kernel with line info
    that called an intrinsic failed to link. The flags' values are unchanged. This replaces
    numba-cuda 0.30's ``DIBuilder._set_module_flags``; a numba-cuda without that method is left as
    it is, and the contract test fails.
    """
    from numba.cuda import cgutils, debuginfo

    builder = debuginfo.DIBuilder
    if not all(hasattr(builder, name) for name in ("_set_module_flags", "_const_int", "DWARF_VERSION",
                                                    "DEBUG_INFO_VERSION")):
        return

    def set_module_flags(self):
        flags = cgutils.get_or_insert_named_metadata(self.module, "llvm.module.flags")
        for name, version in (("Dwarf Version", self.DWARF_VERSION), ("Debug Info Version", self.DEBUG_INFO_VERSION)):
            if version is not None:
                flag = self.module.add_metadata([self._const_int(_LLVM_FLAG_ERROR), name, self._const_int(version)])
                if flag not in flags.operands:
                    flags.add(flag)

    builder._set_module_flags = set_module_flags


# --- Python functions and the simulator ---------------------------------------------------

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


def simulator_enabled():
    return bool(cuda.config.ENABLE_CUDASIM)


def is_cuda_module(value):
    """Whether ``value`` is ``numba.cuda``, or the stand-in for it that the simulator puts in a running
    kernel's globals (whose ``blockDim``, ``threadIdx``, ... are run-time values)."""
    if value is cuda:
        return True
    if not cuda.config.ENABLE_CUDASIM:
        return False
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    return isinstance(value, FakeCUDAModule)


def simulated_thread():
    """The simulator's thread running now, or None outside a simulated kernel."""
    import threading

    thread = threading.current_thread()
    return thread if hasattr(thread, "syncthreads") and hasattr(thread, "thread_id") else None


def simulated_block_dim(thread):
    """The (x, y, z) block shape the simulated ``thread``'s kernel was launched with."""
    dims = tuple(thread._manager._block_dim)
    return dims + (1,) * (3 - len(dims))


def simulated_grid_dim(thread):
    """The (x, y, z) grid shape the simulated ``thread``'s kernel was launched with."""
    dims = tuple(thread._manager._grid_dim)
    return dims + (1,) * (3 - len(dims))


def block_scratch(thread):
    """A dict shared by the simulated threads of ``thread``'s block (and only them)."""
    return thread._manager.__dict__.setdefault("_numba_tiles_scratch", {})


# --- the compiler's front end, for the simulator --------------------------------------------

class BytecodeIR(typing.NamedTuple):
    """A function's IR as numba-cuda's bytecode front end makes it (the compiler's first step, before its
    rewrites and type inference), in plain terms.

    ``definitions``: {variable: [(block, definition), ...]}, where a definition is one of
    ``("const", value)``, ``("global", name)`` (a module global or a builtin), ``("freevar", name)`` (a
    closure variable), ``("arg", name)``, ``("var", variable)``, ``("getattr", variable, attribute)``,
    ``("getitem", variable, index variable)``, ``("static_getitem", variable, index)``, ``("tuple",
    variables)``, ``("unpack", variable)`` (the sequence ``a, b = ...`` unpacks: its items are static_getitems
    of this), ``("truth", variable)`` (a branch's test of it), ``("computed",)`` (arithmetic, a comparison or
    a call: computed at run time) or ``("other",)``. A variable assigned again where the function always
    passes is a variable of its own (``n``, then ``n.1``).
    ``exits``: {block: (test variable or None, successors)}: a branch goes to the first successor where
    its test is true. ``entry``: the first block.
    ``calls``: {offset of a call instruction, as ``dis`` numbers it: (positional argument variables,
    ((keyword, variable), ...))}, or None for a call that spreads ``*args`` or ``**kwargs``.
    """

    definitions: dict
    exits: dict
    entry: int
    calls: dict


def bytecode_ir(code, globals_):
    """`BytecodeIR` of the function of ``code`` (its globals ``globals_``), or None where numba-cuda's front
    end does not take its bytecode (the compiler would refuse the function)."""
    import types as pytypes

    from numba.cuda.core import bytecode

    # Empty cells: the IR names a closure variable; its value is the running frame's, read where it is needed.
    closure = tuple(pytypes.CellType() for _ in code.co_freevars) or None
    function = pytypes.FunctionType(code, globals_, code.co_name, None, closure)
    interpreter = _recording_interpreter()
    try:
        identity = bytecode.FunctionIdentity.from_function(function)
        recorder = interpreter(identity)
        func_ir = recorder.interpret(bytecode.ByteCode(func_id=identity))
    except Exception:  # (bytecode it does not take: an exception kept in a variable, yield from, await, ...)
        return None
    return _plain_ir(func_ir, recorder.calls, bytecode._FIXED_OFFSET)


@functools.cache
def _recording_interpreter():
    """numba-cuda's Interpreter, recording which call instruction made each of the IR's calls."""
    from numba.cuda.core import interpreter, ir

    class Recording(interpreter.Interpreter):
        def __init__(self, func_id):
            super().__init__(func_id)
            self.made = {}  # offset of a call instruction, as numba-cuda numbers it → the call expressions it made
            self.dispatching = None

        def _dispatch(self, inst, kws):
            self.dispatching = inst
            try:
                return super()._dispatch(inst, kws)
            finally:
                self.dispatching = None

        def store(self, value, name, redefine=False):
            inst = self.dispatching  # (CALL, CALL_KW, CALL_FUNCTION[_KW|_EX], CALL_METHOD)
            if inst is not None and inst.opname.startswith("CALL") and isinstance(value, ir.expr_types) \
                    and value.op == "call":
                self.made.setdefault(inst.offset, []).append(value)
            return super().store(value, name, redefine)

        @property
        def calls(self):
            """{id(call expression): (its instruction's offset, the expression)}, for instructions that made one."""
            return {id(made[0]): (offset, made[0]) for offset, made in self.made.items() if len(made) == 1}

    return Recording


def _plain_ir(func_ir, calls, shift):
    """`BytecodeIR` of numba-cuda's ``func_ir``; ``calls`` is `_recording_interpreter`'s, ``shift`` how far
    numba-cuda's instruction offsets are past ``dis``'s (it puts a NOP first)."""
    from numba.cuda.core import ir

    raw = {}
    for label, block in func_ir.blocks.items():
        for stmt in block.body:
            if isinstance(stmt, ir.assign_types):
                raw.setdefault(stmt.target.name, []).append((label, stmt.value))

    def is_bool(var):  # (the front end tests a branch's value with a call of the builtin bool)
        found = raw.get(var.name, ())
        return len(found) == 1 and isinstance(found[0][1], ir.global_types) and found[0][1].value is bool

    def plain(value):
        if isinstance(value, ir.var_types):
            return ("var", value.name)
        if isinstance(value, ir.const_types):
            return ("const", value.value)
        if isinstance(value, ir.global_types):
            return ("global", value.name)
        if isinstance(value, ir.freevar_types):
            return ("freevar", value.name)
        if isinstance(value, ir.arg_types):
            return ("arg", value.name)
        if not isinstance(value, ir.expr_types):
            return ("other",)
        if value.op == "getattr":
            return ("getattr", value.value.name, value.attr)
        if value.op == "getitem":
            return ("getitem", value.value.name, value.index.name)
        if value.op == "static_getitem":
            return ("static_getitem", value.value.name, value.index)
        if value.op == "build_tuple":
            return ("tuple", tuple(item.name for item in value.items))
        if value.op == "exhaust_iter":
            return ("unpack", value.value.name)
        if value.op in ("binop", "inplace_binop", "unary") or value.op == "call" and id(value) in calls:
            return ("computed",)
        if value.op == "call" and not value.kws and len(value.args) == 1 and is_bool(value.func):
            return ("truth", value.args[0].name)
        return ("other",)

    definitions = {name: [(label, plain(value)) for label, value in found] for name, found in raw.items()}
    found_calls = {}
    for found in raw.values():
        for _, value in found:
            if isinstance(value, ir.expr_types) and id(value) in calls:
                spread = value.vararg is not None or value.varkwarg is not None
                found_calls[calls[id(value)][0] - shift] = None if spread else (
                    tuple(a.name for a in value.args), tuple((k, v.name) for k, v in value.kws))
    exits = {}
    for label, block in func_ir.blocks.items():
        end = block.body[-1] if block.body else None
        if isinstance(end, ir.branch_types):
            exits[label] = (end.cond.name, (end.truebr, end.falsebr))
        elif isinstance(end, ir.jump_types):
            exits[label] = (None, (end.target,))
        else:
            exits[label] = (None, ())
    return BytecodeIR(definitions, exits, min(func_ir.blocks), found_calls)
