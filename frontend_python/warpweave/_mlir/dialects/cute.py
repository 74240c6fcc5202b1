"""`cutlass._mlir.dialects.cute`: CuTe DSL's own `cute` dialect. warpweave's IR has no such dialect (its layouts,
tensors and atoms are the Python objects of cute), so the module has no ops: naming one is an error at the user's
line that says so, never IR that MLIR would refuse later. What it has is the typed-pointer recast programs write
with it (`recast_iter(PtrType.get(element, memspace, alignment), ptr)`), which is cute.recast_ptr: the element a DSL
type, or what a backend's dialect names (cute_nvgpu.TmaDescriptorTiledType: a tensor map, whose pointer is one to
its words, `pointee_dtype`)."""
from ..._dsl.base.errors import DSLTypeError, user_location
from ..._dsl.base.ir_dialects import unknown_op
from ..._dsl.values.tensor import Pointer, recast_ptr

__all__ = ["PtrType", "recast_iter"]


class PtrType:
    """A pointer type: its element (a DSL type, or a backend's pointee), memory and alignment (bytes)."""

    def __init__(self, element, memspace, alignment):
        self.element = element
        self.memspace = getattr(memspace, "name", memspace)
        self.alignment = alignment

    @staticmethod
    def get(element, memspace, alignment, context=None) -> "PtrType":
        return PtrType(element, memspace, alignment)

    def __repr__(self):
        return f"!cute.ptr<{self.element!r}, {self.memspace}, align<{self.alignment}>>"


def recast_iter(result_type, iterator, *, loc=None, ip=None) -> Pointer:
    """The pointer `iterator` as one of result_type (a PtrType of its memory)."""
    if not isinstance(result_type, PtrType) or not isinstance(iterator, Pointer):
        raise DSLTypeError(f"cute.recast_iter takes a cute.PtrType and a pointer, got {result_type!r} and "
                           f"{type(iterator).__name__}", user_location(2))
    if result_type.memspace != iterator.memspace:
        raise DSLTypeError(f"cute.recast_iter: the pointer is to {iterator.memspace} memory, the type to "
                           f"{result_type.memspace}", user_location(2))
    dtype = getattr(result_type.element, "pointee_dtype", result_type.element)
    return recast_ptr(iterator, dtype=dtype).align(result_type.alignment)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("cute", name, __all__)
