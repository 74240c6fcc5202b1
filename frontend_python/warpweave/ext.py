"""warpweave.ext: the stable API for backends' Python packages.

A backend's package (manifest.proto, PythonPackage) imports warpweave's public modules (warpweave, warpweave.cute,
...) and this module, never warpweave._dsl: what the frontend does internally may change between releases, this
does not without a version bump (EXT_API_VERSION).

What a backend can do here:
- register operand kinds (how fragments of its non-register operands are made and passed at a call),
  memory spaces (e.g. tensor memory) and host-argument producers (e.g. a TMA tensor map computed per call);
- define names in cute.nvgpu.<module> and cute.arch (functions, or classes wrapping the manifest's op classes),
  select its instructions by Python name and parameters;
- emit its manifest's instructions and read its manifest entries, with `if` regions and rolled loops for library
  code;
- call its plugin's host hooks;
- raise errors that name the user's line.
"""
from __future__ import annotations

from . import _core
from ._dsl.atoms import atoms as _atoms
from ._dsl.atoms import element_copy as _element_copy
from ._dsl.atoms import host_arguments as _host_arguments
from ._dsl.atoms import instructions as _instructions
from ._dsl.atoms import operand_kinds as _operand_kinds
from ._dsl.base import trace as _trace
from ._dsl.base.errors import (  # noqa: F401
    DSLError, DSLNotImplementedError, DSLRuntimeError, DSLTypeError, DSLValueError, register_library_dir,
    user_location,
)
from ._dsl.atoms.host_arguments import DeviceHostArgument, HostArgument  # noqa: F401
from ._dsl.atoms.operand_kinds import OperandKind, kind_of  # noqa: F401
from ._dsl.device.array import Array, address_of  # noqa: F401 - primitives read addresses with address_of
from ._dsl.device import workspace as _workspace
from ._dsl.registry.plugins import registry as _registry
from ._dsl.registry.target import Target, select_target as current_target  # noqa: F401
from ._dsl.tracing import branches as _branches
from ._dsl.tracing import functional as _functional
from ._dsl.tracing import loops as _loops
from ._dsl.values import tensor as _tensor
from ._dsl.values.numeric import dtype as _dtype
from ._dsl.values.numeric import select  # noqa: F401 - cond ? a : b over DSL numbers (pipelines' states)
# The IR dialects user code writes (cutlass._mlir): a backend's NVVM ops of its generation (cutlass._mlir.dialects.nvvm,
# registered as "nvvm.<op>") are written with them, checked at the user's line as user ops are.
from ._mlir import ir as ir  # noqa: E402,F401
from ._mlir.dialects import arith as ir_arith, llvm as ir_llvm  # noqa: E402,F401

EXT_API_VERSION = 1


def user_error(message: str, cls: type[DSLError] = DSLValueError) -> DSLError:
    """An exception at the user's current line (the innermost frame outside warpweave and the backends), to raise."""
    return cls(message, user_location(2))


# --- operand kinds, memory spaces, host arguments -------------------------------------------------------------

def register_operand_kind(name: str, adapter: OperandKind) -> None:
    """Makes `adapter` the way the DSL handles manifest operands of kind `name` (Operand.kind)."""
    _operand_kinds.register(adapter, name)


def register_memory_space(name: str, address_space: int, *, address_bits: int = 8) -> None:
    """A memory space tensors may live in (e.g. "tmem" in LLVM address space 6), besides gmem, smem and rmem; one
    step of its addresses counts address_bits (32 for a space addressed by 32-bit columns), so a pointer's address
    there (Pointer.toint, its IR value) is its base plus its offset in those units."""
    _tensor.register_memory_space(name, address_space, address_bits)


def register_host_argument(name: str, producer, *, size: int, align: int = 8, export_c=None) -> None:
    """A per-call kernel parameter: producer(tensor, **attrs) -> `size` bytes, where tensor is the call's tensor
    argument (data_ptr, shape, stride, element_type). Kernels receive it as a grid-constant parameter.
    export_c(tensor, dst, **attrs) -> (C declarations, C statements): the same computed in C, for exported and
    TVM FFI calls (host_arguments.py says what the statements may use)."""
    _host_arguments.register(name, producer, size=size, align=align, export_c=export_c)


def host_argument(name: str, tensor, **attrs) -> HostArgument:
    """In @cute.jit host code: the stand-in of host argument `name` computed from `tensor` (a tensor argument of
    the jit function) and static attrs. Pass it to a kernel (directly or as an attribute of an object); inside,
    it is a DeviceHostArgument whose `address` is the IR value of a generic pointer to its bytes."""
    return _host_arguments.make(name, tensor, attrs)


def kernel_host_argument(name: str, min_align: int = 1, **attrs) -> DeviceHostArgument:
    """Inside a kernel: host argument `name` of static attributes alone, a parameter the kernel gets as its tracing
    asks for it (e.g. the template of a tensor map the kernel completes itself); host_arguments.kernel_parameter."""
    return _host_arguments.kernel_parameter(name, attrs, min_align)


def device_workspace(nbytes: int, align: int = 64):
    """Inside a kernel: a global-memory pointer (bytes) to this CTA's `nbytes` of the call's device workspace (a
    tensor map the CTA rewrites, ...). The compiled function then takes the workspace as its last argument, its
    size answered by get_aux_func(QueryDeviceWorkspaceFunc) (device/workspace.py)."""
    return _workspace.request(nbytes, align)


def at_kernel_entry():
    """Inside a kernel: a context whose code goes to the kernel's entry block, run by every thread before the
    body (state an operation keeps for the whole kernel, set up once, e.g. in shared memory it allocates there)."""
    return _trace.at_entry()


def register_python_name(qualified: str, obj) -> None:
    """Defines `obj` as cute.nvgpu.<module>.<name> (qualified "<module>.<name>", e.g. "cpasync.tma_partition"):
    functions and classes a backend's users call by CuTe DSL's names. It takes precedence over a manifest class of
    the same name, which stays reachable through manifest_class (to wrap it)."""
    _atoms.register_python_name(qualified, obj)


def register_plain_atom_copy(prefix: str, fn) -> None:
    """How cute.copy(atom, src, dst, pred=...) copies with a plain atom (cute.make_copy_atom's, not a tiled copy's)
    of an op whose Python name starts with prefix (e.g. "tcgen05.Ld"): fn(atom, src, dst, pred=) is called with
    the per-thread partitions a tiled copy of that atom made."""
    _element_copy.register_plain_atom_copy(prefix, fn)


def manifest_class(python_name: str):
    """The class made from the loaded manifests for an op name (e.g. "warpgroup.MmaF16BF16Op"): construct it with
    the manifest's Python parameters; its .entry() selects the atom. None when no manifest has the name."""
    return _atoms.manifest_class(python_name)


def select_instruction(python_name: str, params: dict | None = None, operands: set | None = None) -> tuple:
    """(backend name, entry) of the loaded instruction named python_name whose Python parameters are `params`
    (and, for a primitive, whose input operands are `operands`), usable on the current target."""
    b, entry = _atoms.select(python_name, {k: _atoms.canonical(v) for k, v in (params or {}).items()}, operands)
    return b.name, entry


def make_pointer(address, dtype, memspace: str, align: int = 1):
    """A pointer to `dtype` values in memory space `memspace` (e.g. a registered "tmem") whose base is the IR value
    `address` (an !llvm.ptr of that space), known aligned to `align` bytes: make tensors over it with
    cute.make_tensor. Its element offsets stay symbolic (Pointer.offset); Pointer.address(i) is a GEP."""
    _tensor.ptr_type(memspace)  # a clear error for an unregistered space
    return _tensor.Pointer(address, _dtype(dtype), memspace, align)


def qualifier(value, what: str, allowed) -> str:
    """The instruction qualifier that `value` names, an enumeration member (by its value) or a string (in any
    case), checked against `allowed`; otherwise an error at the user's line naming `what` and the choices."""
    q = getattr(value, "value", value)
    if isinstance(q, str):
        q = q.lower()
    if q not in allowed:
        raise DSLValueError(f"{what} must be one of {', '.join(allowed)}, got {value!r}", user_location(2))
    return q


def static_int(value, what: str) -> int:
    """A Python int, or a DSL integer known while tracing, as an int (an immediate of an instruction); otherwise
    an error at the user's line."""
    if hasattr(value, "is_static"):
        if not value.is_static:
            raise DSLValueError(f"{what} must be known while tracing", user_location(2))
        value = value.value
    if not isinstance(value, int) or isinstance(value, bool):
        raise DSLValueError(f"{what} must be an integer known while tracing, got {value!r}", user_location(2))
    return value


def full_layout(tensor):
    """The layout that addresses a tensor's elements: where its swizzle lives in its pointer (tensor.layout is then
    the plain outer layout, as CuTe DSL gives it), the swizzle composed with that layout (what descriptors, TMA
    boxes and element addresses are made of)."""
    return _tensor.full_layout(tensor)


def base_pointer(tensor):
    """The pointer full_layout(tensor) offsets: a tensor's iterator, or where the iterator stands for a swizzled
    pointer (whose + moves the logical address, before the swizzle, as in CuTe DSL) the plain pointer under it.
    make_tensor(base_pointer(t) + k, full_layout(t)) is t moved by k elements of its full layout's codomain."""
    return _tensor.base_pointer(tensor.iterator)


# --- instructions and the IR ----------------------------------------------------------------------------------

def in_kernel() -> bool:
    return _trace.in_kernel()


def when(cond, fn) -> None:
    """In a kernel: `if cond: fn()` for library code (a run-time condition becomes IR control flow; fn's effects
    must not rebind values the caller uses after it)."""
    _branches.when(cond, fn)


def rolled_range(trips: int):
    """In a kernel: `for i in ext.rolled_range(n): ...`, a loop of n trips that stays one in the kernel (the
    compiler neither unrolls nor peels it), i an Int32 known only at run time; the body runs once while tracing and
    must not rebind values the caller uses after it. For library code whose trips, unrolled, would all be live at
    once: a copy of many words from parameters, whose loads the compiler would otherwise issue together and hold in
    a register each."""
    if not _trace.in_kernel():
        raise user_error("ext.rolled_range is for code traced in a kernel", DSLValueError)
    where = user_location(2)
    return _functional._for_generate(0, static_int(trips, "rolled_range(trips)"), 1,
                                     _loops.loop_attributes(1, False, where), where, rolled=True)


def builder():
    """The IR builder of the kernel being traced (warpweave._core.IRBuilder)."""
    return _trace.builder()


def emit_instruction(builder, backend: str, entry: dict, inputs: dict, attrs: dict | None = None) -> dict:
    """Emits a manifest entry of `backend` with IR values for its inputs ({operand: [values]}); returns
    {output operand: [values]}."""
    return _instructions.emit_instruction(builder, backend, entry, inputs, attrs)


def manifest_entry(ident: str) -> tuple:
    """(backend, entry) of an atom or primitive id of a loaded manifest; KeyError if none has it."""
    hit = _registry.instruction(ident)
    if hit is None:
        raise KeyError(f"no loaded backend has the instruction {ident!r}")
    return hit


def backend(name: str):
    """A loaded backend (name, version, path, manifest, targets); KeyError if none of that name is loaded."""
    _registry.load()
    b = _registry.backends.get(name)
    if b is None:
        raise KeyError(f"no backend {name!r} is loaded")
    return b


def host_call(backend_name: str, hook: str, attrs: dict, out_size: int) -> bytes:
    """Calls a host hook of a backend's plugin (plugin_abi.h, host_call) with integer or string attributes."""
    return bytes(_core.plugin_host_call(backend_name, hook, attrs, out_size))


__all__ = ["EXT_API_VERSION", "DSLError", "DSLTypeError", "DSLValueError", "DSLRuntimeError", "user_error",
           "user_location", "register_library_dir", "OperandKind", "kind_of", "register_operand_kind",
           "register_memory_space", "make_pointer", "qualifier", "static_int", "register_host_argument", "host_argument", "HostArgument", "DeviceHostArgument",
           "register_python_name", "manifest_class", "select_instruction", "in_kernel", "when", "rolled_range",
           "builder",
           "emit_instruction", "manifest_entry", "backend", "host_call", "Target", "current_target", "select", "ir",
           "ir_arith", "ir_llvm", "DSLNotImplementedError", "Array", "address_of"]
