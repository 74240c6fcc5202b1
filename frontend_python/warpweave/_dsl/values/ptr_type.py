"""A typed pointer type (CuTe DSL's `cute.PtrType.get(element, memspace, alignment)`): the element (a DSL numeric
type, its `mlir_type`, a plain IR type of one, or a backend's pointee such as a tensor map), the memory and the
alignment in bytes. Programs build one to recast a pointer (`recast_iter`) and to describe a pointer argument of
their own JitArgument objects (`__get_mlir_types__` returning `[PtrType.get(dtype.mlir_type, gmem, 16)]`): such an
argument is passed as the address and seen in the function as a pointer of that element, memory and alignment."""
from __future__ import annotations

from ..base.errors import DSLTypeError, user_location
from ..base.ir_values import PointerType, Type
from .numeric import (BFloat16, Boolean, Float16, Float32, Float64, Int8, Int16, Int32, Int64, Numeric, TFloat32,
                      dtype as dtype_of)

# A plain IR type's numeric type where nothing says more (integers read signed, as IR integers are).
_BY_IR = {"i1": Boolean, "i8": Int8, "i16": Int16, "i32": Int32, "i64": Int64, "f16": Float16, "bf16": BFloat16,
          "f32": Float32, "f64": Float64, "tf32": TFloat32}


class PtrType:
    """A pointer type: its element, memory (a memory space's name) and alignment (bytes)."""

    def __init__(self, element, memspace, alignment):
        self.element = element
        self.memspace = getattr(memspace, "name", memspace)
        self.alignment = alignment

    @staticmethod
    def get(element, memspace, alignment, context=None) -> "PtrType":
        return PtrType(element, memspace, alignment)

    @property
    def dtype(self):
        """The element as a DSL type: a numeric type (also one its mlir_type remembers), or a backend's pointee's
        element (`pointee_dtype`)."""
        e = self.element
        if hasattr(e, "pointee_dtype"):
            return e.pointee_dtype
        if isinstance(e, type) and issubclass(e, Numeric):
            return e
        numeric = getattr(e, "numeric", None)
        if numeric is not None:
            return numeric
        if isinstance(e, Type) and e.text in _BY_IR:
            return _BY_IR[e.text]
        if isinstance(e, str):
            return dtype_of(e)
        raise DSLTypeError(f"cute.PtrType: no numeric type has the element {e!r}", user_location(3))

    def llvm_type(self) -> Type:
        """The untyped pointer the value is held in: a global one (a pointer a call passes is to global memory;
        generic memory is taken as global memory, as make_ptr takes it; another memory is refused where the
        argument is made)."""
        return PointerType.get(1)

    def __eq__(self, other):
        return isinstance(other, PtrType) and (str(self.element), self.memspace, self.alignment) == \
            (str(other.element), other.memspace, other.alignment)

    def __hash__(self):
        return hash((str(self.element), self.memspace, self.alignment))

    def __repr__(self):
        return f"!cute.ptr<{self.element!r}, {self.memspace}, align<{self.alignment}>>"
