"""`cutlass._mlir.dialects.cute`: CuTe DSL's own `cute` dialect. warpweave's IR has no such dialect (its layouts,
tensors and atoms are the Python objects of cute), so the module has no ops: naming one is an error at the user's
line that says so, never IR that MLIR would refuse later. What it has is the typed-pointer recast programs write
with it (`recast_iter(PtrType.get(element, memspace, alignment), ptr)`), which is cute.recast_ptr: the element a DSL
type or its mlir_type, or what a backend's dialect names (cute_nvgpu.TmaDescriptorTiledType: a tensor map, whose
pointer is one to its words, `pointee_dtype`); the memory spaces (AddressSpace), by their names."""
from ..._dsl.base.errors import DSLTypeError, user_location
from ..._dsl.base.ir_dialects import unknown_op
from ..._dsl.values.ptr_type import PtrType
from ..._dsl.values.runtime import AddressSpace  # noqa: F401 - the dialect's memory spaces, by the same names
from ..._dsl.values.tensor import Pointer, recast_ptr

__all__ = ["AddressSpace", "PtrType", "recast_iter"]


def recast_iter(dst, src, *, loc=None, ip=None) -> Pointer:
    """The pointer `src` as one of type `dst` (a PtrType of its memory); the parameters are named as the generated
    builder names them."""
    result_type, iterator = dst, src
    if not isinstance(result_type, PtrType) or not isinstance(iterator, Pointer):
        raise DSLTypeError(f"cute.recast_iter takes a cute.PtrType and a pointer, got {result_type!r} and "
                           f"{type(iterator).__name__}", user_location(2))
    if result_type.memspace != iterator.memspace:
        raise DSLTypeError(f"cute.recast_iter: the pointer is to {iterator.memspace} memory, the type to "
                           f"{result_type.memspace}", user_location(2))
    return recast_ptr(iterator, dtype=result_type.dtype).align(result_type.alignment)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("cute", name, __all__)
