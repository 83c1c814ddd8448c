"""numba-cuda-mlir, the MLIR-based successor of numba-cuda, behind the compiler seam (`numba_tiles._backends.Backend`):
every place numba_tiles touches it, its typing and lowering of the spec mechanism's intrinsics (`register`,
`Call`) and `numba_tiles.compile` of its kernels (`mlir_compile.compile_kernel`).

numba-cuda-mlir has its own copy of Numba's types. A call's argument types are mapped to numba.cuda's
(`to_numba_cuda`), the intrinsic's rule types them as it does numba-cuda's, and the signature is mapped back
(`to_mlir`). Its lowering emits MLIR with the entry points' ABI of `numba_cuda.call_entry`: arrays as (data,
sizes, strides in items), scalars and results by pointer. Its extension API is young; where it has no public
way, the narrowest hook is used and named here, and ``tests/cpu/test_mlir.py`` pins each:

- ``numba_cuda_mlir.tools._cached_cc``: the compute capability numba-cuda-mlir compiles for takes the host
  GPU's from the driver even when a chip is given (`mlir_compile.compile_kernel` sets it for the arch asked for);
- ``numba_cuda_mlir.descriptor.mlir_target._typingctx_initialized`` / ``_targetctx_initialized``: whether
  `register` must refresh the contexts (the first refresh makes them, which takes a second);
- ``numba_cuda_mlir.lowering_utilities``: ``get_or_insert_function`` (an ``extern "C"`` declaration in the
  kernel's ``gpu.module``) and ``memref_data_pointer`` (an array's data pointer);
- the lowerer's ``_linker_config`` (its ``arch``: `link_arch_specific`), ``alloca``, ``get_storage_type``,
  ``as_storage``, ``from_storage``, ``lower_cast``, ``link_external_item``, ``mlir_funcOp``,
  ``metadata["gpu_target"]``, and ``get_numba_type`` and ``store_var`` (a description's attribute);
- ``numba_cuda_mlir.descriptor.MLIRDispatcher``: what a ``@cuda.jit(device=True)`` function is (an op);
- its launcher's rebuilding of a tuple argument with ``_fields`` by ``type(value)(*members)`` before typing it
  (`launch_arguments`), and a compile result's ``_codelibrary.get_cufunc().handle``: a copy of the kernel of its
  own for the occupancy query (`resident_blocks`);
- the frame of its copy of ``ConstraintNetwork.propagate`` (its ``constraint`` and ``typeinfer``): where a
  call being typed stands and what its arguments are (`_typing_call`, as `numba_cuda.typing_call` does).

Supported so far: intrinsics whose parameters are scalars, arrays and compile-time constants (the block and
warp collectives, the shared-tile matmul), user ops and comparisons among them (compiled by numba-cuda-mlir,
`compile_device_ltoir`), descriptions (`register_description`: their constants and methods) and handles
(``Matmul.operands``: `register_handle`, a tuple of their arrays to numba-cuda-mlir, launched by ``Matmul.launch``),
and epilogues (`pack`: the store's functor calls the user's function in numba-cuda-mlir's C ABI, `c_abi_fields`).
"""

import functools
import importlib.abc
import importlib.util
import io
import sys
import threading
import warnings
import weakref

from numba import cuda
from numba.cuda import types

from .._dtypes import half_bits
from .._errors import TilesError, call_site, error
from .numba_cuda import Handle, Keyed, attribute_type, typing_context

MIN_VERSION, MAX_VERSION = (0, 6), (0, 7)  # numba-cuda-mlir 0.6.*: the versions this adapter is written for


@functools.cache
def available():
    """Whether numba-cuda-mlir (a supported version) is installed."""
    if importlib.util.find_spec("numba_cuda_mlir") is None:
        return False
    from importlib.metadata import version

    found = tuple(int(p) for p in version("numba-cuda-mlir").split(".")[:2])
    return MIN_VERSION <= found < MAX_VERSION


# --- registering, once numba-cuda-mlir is imported ----------------------------------------------------

# Importing numba-cuda-mlir takes about half a second (more than all of numba_tiles after numba.cuda), which a process
# that never compiles with it should not pay at `import numba_tiles`. So the intrinsics, descriptions and handles are
# registered with it as its import ends (`_RegisterOnImport`), or at once where it is imported already: before any
# of its kernels can be typed either way.
_pending = []  # (register, args) made before numba-cuda-mlir was imported, in order
_pending_lock = threading.Lock()


def _once_imported(register):
    """``register(*args)`` now if numba-cuda-mlir is imported, else as soon as it is."""

    @functools.wraps(register)
    def deferred(*args):
        with _pending_lock:
            _pending.append((register, args))
            if "numba_cuda_mlir" not in sys.modules:
                if not any(isinstance(f, _RegisterOnImport) for f in sys.meta_path):
                    sys.meta_path.insert(0, _RegisterOnImport())
                return
        _register_pending()

    return deferred


def _register_pending():
    """Make the registrations that waited for numba-cuda-mlir's import."""
    with _pending_lock:
        waiting = list(_pending)
        _pending.clear()
    for register, args in waiting:
        register(*args)


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Finds ``numba_cuda_mlir`` as the other finders do, and makes the pending registrations as its import ends."""

    def find_spec(self, name, path, target=None):
        if name != "numba_cuda_mlir":
            return None
        sys.meta_path.remove(self)  # (the import itself is the other finders')
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            execute = spec.loader.exec_module

            def exec_module(module):
                execute(module)
                try:
                    _register_pending()
                except Exception as exc:  # (its import must not fail for us: numba-cuda-mlir's kernels lack ours)
                    warnings.warn(f"numba_tiles could not register its intrinsics with numba-cuda-mlir: {exc!r}")

            spec.loader.exec_module = exec_module
        return spec


def is_kernel(value):
    """Whether ``value`` is a numba-cuda-mlir ``@cuda.jit`` kernel (its dispatcher)."""
    return _is_theirs(value)


def python_function(value):
    """The Python function of ``value``, a numba-cuda-mlir ``@cuda.jit(device=True)`` function, else None."""
    if not (_is_theirs(value) and available()):
        return None
    from numba_cuda_mlir.descriptor import MLIRDispatcher

    return value.py_func if isinstance(value, MLIRDispatcher) and value.targetoptions.get("device") else None


# --- types ------------------------------------------------------------------------------------


def _theirs():
    from numba_cuda_mlir.numba_cuda import types as theirs

    return theirs


def _is_theirs(value):
    """Whether ``value`` (a type, a kernel) is numba-cuda-mlir's."""
    return type(value).__module__.startswith("numba_cuda_mlir.")


def _mapped(ty, target, back):
    """``ty`` of the other types module as the same type in ``target``; ``back`` maps nested types."""
    name = type(ty).__name__
    if isinstance(ty, _literals(ty)):
        return target.literal(ty.literal_value)
    if name == "Omitted":
        return target.Omitted(ty.value)
    if name == "NoneType":
        return target.none
    if isinstance(ty, (types.Dispatcher, _theirs().Dispatcher)):  # (an op's device function: `_spec` reads it back)
        return target.Dispatcher(ty.dispatcher)
    if name == "Function":  # (an op spelled as a Python function: operator.add, min, numpy.add)
        return _typing_context(target).resolve_value_type(ty.typing_key)
    if name == "Array":
        return target.Array(back(ty.dtype), ty.ndim, ty.layout, readonly=not ty.mutable)
    if name in ("UniTuple", "Tuple"):
        return target.Tuple([back(t) for t in ty])
    found = getattr(target, _SCALAR_NAMES.get(str(ty), str(ty)), None)
    if isinstance(found, target.Type) and name in ("Integer", "Float", "Boolean", "Complex"):
        return found
    raise TypeError(f"an argument of type {ty}")


_SCALAR_NAMES = {"__nv_bfloat16": "bfloat16"}  # (bfloat16's str is its C++ name)


def _typing_context(module):
    """The typing context of the compiler whose types ``module`` is (refreshed: its registries read)."""
    if module is types:
        return typing_context()
    from numba_cuda_mlir.descriptor import mlir_target

    mlir_target.typing_context.refresh()
    return mlir_target.typing_context


def _literals(ty):
    """The literal type classes of ``ty``'s types module (integer, string, boolean)."""
    module = _theirs() if _is_theirs(ty) else types
    return module.IntegerLiteral, module.StringLiteral, module.BooleanLiteral


def to_numba_cuda(ty):
    """A numba-cuda-mlir type as numba.cuda's (what the intrinsics' rules are written in)."""
    if isinstance(ty, _handle_class()):
        return ty.handle
    return _mapped(ty, types, to_numba_cuda) if _is_theirs(ty) else ty


def to_mlir(ty):
    """A numba.cuda type as numba-cuda-mlir's."""
    if isinstance(ty, Handle):
        return _handle_class()(ty)
    return ty if _is_theirs(ty) else _mapped(ty, _theirs(), to_mlir)


@functools.cache
def _handle_class():
    """numba-cuda-mlir's twin of `numba_cuda.Handle`: a tuple of the members' types to its compiler (passed and held as
    a tuple of arrays is), keyed by what made it; `to_numba_cuda` gives the handle back."""
    from numba_cuda_mlir import extending, models

    class MlirHandle(_theirs().Tuple):
        def __new__(cls, handle):  # (Tuple's own picks the class from the members' types)
            return object.__new__(cls)

        def __init__(self, handle):
            self.handle = handle
            super().__init__([to_mlir(t) for t in handle.types])
            self.name = handle.name

        @property
        def key(self):
            return self.handle.key

    extending.register_model(MlirHandle)(models.TupleModel)
    return MlirHandle


@_once_imported
def register_handle(cls):
    """`numba_cuda.register_handle` for numba-cuda-mlir: an instance of ``cls`` is typed by its ``_numba_type_``, and
    launched as `launch_arguments` makes it."""
    from numba_cuda_mlir import extending

    for typed in (cls, _Members):
        extending.typeof_impl.register(typed)(lambda value, c: to_mlir(value._numba_type_))


class _Members(tuple):
    """A handle as numba-cuda-mlir's launcher passes a bundle of arrays: a tuple, flattened into its members for
    the kernel and rebuilt from them by ``type(value)(*members)`` (as a namedtuple is) before it is typed, so the
    type is the class's (`_members_class`)."""

    _fields = ()  # (what tells the launcher to rebuild it from its members)

    def __new__(cls, *members):
        return super().__new__(cls, members)


@functools.cache
def _members_class(handle):
    return type("HandleMembers", (_Members,), {"_numba_type_": handle, "__slots__": ()})


def launch_arguments(args):
    """``args`` as a numba-cuda-mlir kernel's launch takes them: each handle (an object whose ``_numba_type_`` is a
    `Handle`, as ``Matmul.operands``'s) as the tuple of its members."""
    return tuple(
        _members_class(a._numba_type_)(*a) if isinstance(getattr(a, "_numba_type_", None), Handle) else a for a in args
    )


def resident_blocks(kernel, args, threads, nbytes):
    """`numba_cuda.resident_blocks` of a numba-cuda-mlir ``kernel``, compiled for ``args`` as `launch_arguments` passes
    them. The occupancy query runs on the compile result's own copy of the kernel, let first to take ``nbytes`` of
    dynamic shared memory (the query counts no block over the kernel's limit; launches lift it themselves)."""
    from cuda.bindings import driver

    compiled = kernel.compile_for(*launch_arguments(args))
    handle = compiled._codelibrary.get_cufunc().handle
    (status,) = driver.cuFuncSetAttribute(
        handle, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes
    )
    if status != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {nbytes}): {status}")
    return compiled.max_cooperative_grid_blocks(threads, nbytes)


def handle_member(lowerer, var, ty, member):
    """The member ``member`` of the call's variable ``var``, a handle of (numba.cuda) type ``ty``."""
    return lowerer.load_var(var)[ty.index(member)]


def _flags():
    """numba-cuda-mlir's flags of the function it compiles now, or None."""
    if not available():
        return None
    from numba_cuda_mlir.numba_cuda.core.targetconfig import ConfigStack

    return ConfigStack.top_or_none()


def _debug():
    """Whether the kernel being typed is a debug build (numba-cuda-mlir's flags: debuginfo without lineinfo)."""
    flags = _flags()
    return flags is not None and bool(flags.debuginfo) and not flags.dbg_directives_only


def typing_cc():
    """The compute capability of the function numba-cuda-mlir types now, or None (it types none). Its flags do not
    hold one while it types: it compiles for ``tools.get_gpu_compute_capability``'s (which `compile_kernel` sets)."""
    if _flags() is None:
        return None
    from numba_cuda_mlir import tools

    return tuple(tools.get_gpu_compute_capability(tuple))[:2]


# --- typing and lowering ------------------------------------------------------------------------


@_once_imported
def register(func, name, pysig, resolve, lower):
    """Make ``func`` (the intrinsic ``name``, of Python signature ``pysig``) callable in numba-cuda-mlir kernels:
    ``resolve(args, kws, origins, debug)`` → a numba.cuda signature for numba.cuda argument types (``origins``:
    `_typing_call`'s, or None; ``debug``: whether the kernel is a debug build); ``lower(call)`` lowers a call,
    ``call`` a `Call`."""
    from numba_cuda_mlir import extending
    from numba_cuda_mlir.numba_cuda.typing.templates import AbstractTemplate, signature

    theirs = _theirs()

    class Template(AbstractTemplate):
        key = func
        prefer_literal = True  # (compile-time parameters arrive as Literal types, as with numba-cuda)

        def generic(self, args, kws):
            try:
                args, kws = [to_numba_cuda(a) for a in args], {k: to_numba_cuda(v) for k, v in kws.items()}
            except TypeError as exc:
                raise error(
                    name,
                    f"{exc}: this call is not supported in numba-cuda-mlir kernels yet",
                    "compile the kernel with numba-cuda's @cuda.jit (see the numba-cuda-mlir guide)",
                ) from None
            site = _typing_call(func)
            try:
                sig = resolve(args, kws, site and site.origins, _debug())
            except TilesError as exc:
                if site is not None:
                    exc.args = (f"{exc.args[0]}\n\n{site.location}", *exc.args[1:])
                raise
            return signature(to_mlir(sig.return_type), *(to_mlir(a) for a in sig.args)).replace(pysig=sig.pysig)

    extending.typing_registry.register_global(func, theirs.Function(Template))
    extending.lower_builtin(func, theirs.VarArg(theirs.Any))(
        lambda lowerer, result, args, kws: lower(Call(pysig, lowerer, result, args, kws))
    )
    # numba-cuda-mlir reads its registries when it makes its typing and target contexts (its first compile):
    # refreshed only if they are made already (the first refresh makes them, about a second).
    from numba_cuda_mlir.descriptor import mlir_target

    if mlir_target._typingctx_initialized or mlir_target._targetctx_initialized:
        extending.refresh_registries(include_uninitialized_cuda=False)


@_once_imported
def register_description(cls, attribute):
    """`numba_cuda.register_description` for numba-cuda-mlir kernels: a module-level instance of ``cls`` is a
    compile-time object of its own type there; ``attribute(obj, name)`` is an int (a constant), an intrinsic
    bound to ``obj`` (registered with `register`) or None."""
    from numba_cuda_mlir import extending, models
    from numba_cuda_mlir._mlir import ir
    from numba_cuda_mlir._mlir.dialects import arith
    from numba_cuda_mlir.numba_cuda.typing.templates import AttributeTemplate

    theirs = _theirs()

    class Description(Keyed, theirs.Dummy):
        pass

    extending.register_model(Description)(models.OpaqueModel)
    extending.typeof_impl.register(cls)(lambda value, c: Description(value))

    @extending.typing_registry.register_attr
    class Attributes(AttributeTemplate):
        key = Description

        def generic_resolve(self, ty, attr):
            return attribute_type(attribute(ty.value, attr), theirs.IntegerLiteral, self.context.resolve_value_type)

    @extending.lowering_registry.lower_getattr_generic(Description)
    def lower(context, lowerer, target, value, attr):
        found = attribute(lowerer.get_numba_type(value.name).value, attr)
        # (an int as its constant; an intrinsic as itself, as numba-cuda-mlir holds a global function)
        lowerer.store_var(
            target, arith.constant(ir.IntegerType.get_signless(64), found) if isinstance(found, int) else found
        )


def _typing_call(func):
    """The call of ``func`` numba-cuda-mlir is typing now (an `_errors.CallSite`: where it stands, what its
    arguments are made of), or None: `_errors.call_site` in the frame of its copy of
    ``ConstraintNetwork.propagate``, as `numba_cuda.typing_call` finds numba-cuda's."""
    from numba_cuda_mlir import cuda as theirs_cuda
    from numba_cuda_mlir.numba_cuda.core import ir
    from numba_cuda_mlir.numba_cuda.core.typeinfer import CallConstraint, ConstraintNetwork

    return call_site(func, ConstraintNetwork.propagate, CallConstraint, ir, theirs_cuda.local.array)


def argument_types(lowerer, variables):
    """{name: numba-cuda-mlir type} of a call's variables ({name: variable})."""
    return {name: lowerer.get_numba_type(var.name) for name, var in variables.items()}


def target_flags(lowerer):
    """(compute capability, lineinfo) of the kernel being lowered."""
    return tuple(lowerer.metadata["gpu_target"]["cc"])[:2], bool(lowerer.targetoptions.get("lineinfo"))


class _Library:
    """What `_programs.for_call` groups the programs of one lowered function by (a weak key)."""


def code_library(lowerer):
    """The stand-in for the code library of the function being lowered (its intrinsics compile together)."""
    if not hasattr(lowerer, "_numba_tiles_library"):
        lowerer._numba_tiles_library = _Library()
    return lowerer._numba_tiles_library


def value(lowerer, var, given, entry):
    """The value of the call's variable ``var`` of type ``given`` (numba-cuda-mlir's), cast to the numba.cuda type
    ``entry`` (an array as it is)."""
    loaded = lowerer.load_var(var)
    wanted = to_mlir(entry)
    if isinstance(entry, types.Array) or given == wanted:
        return loaded
    return lowerer.lower_cast(given, wanted, loaded)


def constant(ty, value):
    """An MLIR constant of the numba.cuda type ``ty`` (half types as their i16 bits, as numba-cuda-mlir holds
    them; an unsigned value as the same bits of its signless integer, which MLIR takes only in the signed range)."""
    from numba_cuda_mlir import models
    from numba_cuda_mlir.lowering_utilities import constant as make

    if ty in (types.float16, types.bfloat16):
        value = half_bits(ty, value)
    elif isinstance(ty, types.Integer) and not ty.signed and value >= 2 ** (ty.bitwidth - 1):
        value -= 2**ty.bitwidth
    return make(value, models.mlir_data_manager.lookup(to_mlir(ty)).get_value_type())


def _array_operands(value, ndim):
    """An array's (data pointer, sizes..., strides... in items) from its memref."""
    from numba_cuda_mlir._mlir import ir
    from numba_cuda_mlir._mlir.dialects import arith, memref
    from numba_cuda_mlir.lowering_utilities import memref_data_pointer

    i64 = ir.IntegerType.get_signless(64)
    meta = memref.extract_strided_metadata(value)  # (base, offset, sizes..., strides...)
    sizes = [arith.index_cast(i64, meta[2 + d]) for d in range(ndim)]
    strides = [arith.index_cast(i64, meta[2 + ndim + d]) for d in range(ndim)]
    return [memref_data_pointer(value), *sizes, *strides]


def call_entry(lowerer, result, symbol, arguments, outputs):
    """Call ``extern "C" void symbol(args..., outputs*...)`` (``arguments``: (numba.cuda type, MLIR value) pairs;
    ``outputs``: the types it writes through pointers) and store what it writes into the call's ``result``."""
    from numba_cuda_mlir._mlir import ir
    from numba_cuda_mlir._mlir.dialects import func, llvm
    from numba_cuda_mlir.lowering_utilities import get_or_insert_function

    operands = []
    for ty, value_ in arguments:
        if ty == types.voidptr:  # a pointer (`pack`), as it is
            operands.append(value_)
            continue
        if isinstance(ty, types.Array):
            operands += _array_operands(value_, ty.ndim)
            continue
        theirs = to_mlir(ty)
        slot = lowerer.alloca(lowerer.get_storage_type(theirs))
        llvm.store(lowerer.as_storage(theirs, value_), slot)
        operands.append(slot)
    slots = [(to_mlir(ty), lowerer.alloca(lowerer.get_storage_type(to_mlir(ty)))) for ty in outputs]
    operands += [slot for _, slot in slots]
    callee = get_or_insert_function(
        symbol, ir.FunctionType.get([o.type for o in operands], []), lowerer.mlir_gpu_module
    )
    func.call([], callee.name.value, operands)
    loaded = [lowerer.from_storage(ty, llvm.load(lowerer.get_storage_type(ty), slot)) for ty, slot in slots]
    if loaded:
        lowerer.store_var(result, loaded[0] if len(loaded) == 1 else tuple(loaded))


def bound_threads(lowerer, threads):
    """The kernel's ``nvvm.maxntid``, the largest its calls ask (a device function's calls do not bound it)."""
    from numba_cuda_mlir._mlir import ir

    if not getattr(lowerer, "_is_kernel", False):
        return
    attributes = lowerer.mlir_funcOp.attributes
    if "nvvm.maxntid" in attributes and list(ir.DenseI32ArrayAttr(attributes["nvvm.maxntid"]))[0] >= threads:
        return
    attributes["nvvm.maxntid"] = ir.DenseI32ArrayAttr.get([threads, 1, 1])


class _Deferred(io.BytesIO):
    """numba-cuda-mlir reads an LTOIR's bytes by ``getvalue()`` when it resolves the kernel's links, after the
    whole function is lowered: the program of all its intrinsics is made then."""

    def __init__(self, code):
        super().__init__()
        self._code = code

    def getvalue(self):
        return self._code.data


_linked = weakref.WeakKeyDictionary()  # numba-cuda's LTOIR of a program → numba-cuda-mlir's (the same each time)
_linked_lock = threading.Lock()


def link(lowerer, code):
    """Link ``code`` (a ``numba.cuda.LTOIR`` or ``Fatbin``, made lazily) into the function being lowered."""
    from numba_cuda_mlir import cuda as theirs_cuda

    with _linked_lock:
        if code not in _linked:
            kind = theirs_cuda.Fatbin if isinstance(code, cuda.Fatbin) else theirs_cuda.LTOIR
            _linked[code] = kind(_Deferred(code), name=code.name)
        theirs = _linked[code]
    lowerer.link_external_item(theirs)  # (it links each object once)


ASKED = (
    threading.local()
)  # .arch: the arch `mlir_compile.compile_kernel` was asked for (in its thread, while it compiles)


def link_arch_specific(lowerer):
    """Link the function being lowered for the arch-specific form of its target (sm_90 → sm_90a), where its
    intrinsics' wgmma and TMA code links: numba-cuda-mlir links a kernel for the GPU's plain arch (numba-cuda an
    H100's for sm_90a itself). Returns the plain arch `compile_kernel` was asked for, if it was (left as it is:
    the caller refuses it, as ``tiles.compile`` does numba-cuda's), else None."""
    config = lowerer._linker_config
    if config["arch"].endswith(("a", "f")):
        return None
    asked = getattr(ASKED, "arch", None)
    if asked is None:
        config["arch"] += "a"
    return asked


class Call:
    """One call of an intrinsic that numba-cuda-mlir lowers: the `_backends.Call` of ``Spec.lower``, over the call's
    variables (bound by the intrinsic's ``pysig``) and its result's."""

    mlir = True

    def __init__(self, pysig, lowerer, result, args, kws):
        self.lowerer, self.result = lowerer, result
        self.variables = pysig.bind(*args, **dict(kws)).arguments
        self.given = argument_types(lowerer, self.variables)  # (numba-cuda-mlir's types)
        self.types = {name: to_numba_cuda(ty) for name, ty in self.given.items()}
        for name, p in pysig.parameters.items():
            self.types.setdefault(name, types.Omitted(p.default))

    def arguments(self):
        return dict(self.types)

    def target(self):
        return target_flags(self.lowerer)

    def bound_threads(self, threads):
        bound_threads(self.lowerer, threads)

    def code_library(self):
        return code_library(self.lowerer)

    def link(self, code):
        link(self.lowerer, code)

    def link_arch_specific(self):
        return link_arch_specific(self.lowerer)

    def member(self, handle, member):
        return handle_member(self.lowerer, self.variables[handle], self.types[handle], member)

    def callback(self, name, callback, omitted):
        return pack(self.lowerer, callback.extras, None if omitted else self.variables[name])

    def constant(self, ty, value):
        return constant(ty, value)

    def value(self, name, ty):
        return value(self.lowerer, self.variables[name], self.given[name], ty)

    def call_entry(self, symbol, passed, outputs, result):
        call_entry(self.lowerer, self.result, symbol, passed, outputs)


def allow_dynamic_shared_memory(kernel, nbytes, args):
    """(A numba-cuda-mlir kernel's launch lifts the limit itself: ``nbytes``, as asked.)"""
    return nbytes


FIELD_BYTES = 8  # (each field `pack` writes takes 8 bytes, whatever its type)


def c_abi_fields(extras, intrinsic=None):
    """The C types of the arguments numba-cuda-mlir's C ABI passes for values of the numba.cuda types ``extras``,
    in order: an array as its memref descriptor (allocated and aligned pointers, an offset, its sizes and strides
    in items), a number as itself. Other types raise the `TilesError` of ``intrinsic``."""
    from .._dtypes import cxx

    fields = []
    for ty in extras:
        if isinstance(ty, types.Array):
            fields += ["void*", "void*", "long long"] + ["long long"] * (2 * ty.ndim)
        elif isinstance(ty, (types.Integer, types.Float)) and ty.bitwidth >= 32:
            fields.append(cxx(ty))
        else:
            raise error(
                intrinsic,
                f"epilogue_args of {ty} are not passed in numba-cuda-mlir kernels yet",
                "pass arrays and 32- or 64-bit numbers, or compile the kernel with numba-cuda's @cuda.jit",
            )
    return fields


def pack(lowerer, extras, var):
    """A pointer to the fields (`c_abi_fields`, `FIELD_BYTES` each) of the call's variable ``var``, a tuple of
    values of the numba.cuda types ``extras`` (None: given none)."""
    from numba_cuda_mlir._mlir import ir
    from numba_cuda_mlir._mlir.dialects import arith, llvm
    from numba_cuda_mlir.lowering_utilities import llvm_ptr_add_bytes

    i64 = ir.IntegerType.get_signless(64)
    values = lowerer.load_var(var) if var is not None and extras else ()
    fields = []
    for ty, value_ in zip(extras, values if isinstance(values, tuple) else (values,)):
        if isinstance(ty, types.Array):
            data, *rest = _array_operands(value_, ty.ndim)
            fields += [data, data, arith.constant(i64, 0), *rest]  # (the offset is in the data pointer)
        else:
            fields.append(value_)
    slots = lowerer.alloca(i64, max(len(fields), 1))
    for k, field in enumerate(fields):
        llvm.store(field, llvm_ptr_add_bytes(slots, arith.constant(i64, FIELD_BYTES * k)))
    return slots


def compile_device_ltoir(pyfunc, signature, symbol, cc, fastmath=False):
    """``pyfunc``'s LTO-IR by numba-cuda-mlir for ``cc``, C ABI under ``symbol`` (``signature``: numba.cuda types)."""
    from numba_cuda_mlir import cuda as theirs_cuda

    theirs = to_mlir(signature.return_type)(*(to_mlir(a) for a in signature.args))
    code, _ = theirs_cuda.compile(
        pyfunc,
        theirs,
        device=True,
        abi="c",
        abi_info={"abi_name": symbol},
        output="ltoir",
        cc=tuple(cc[:2]),
        fastmath=fastmath,
    )
    return code
