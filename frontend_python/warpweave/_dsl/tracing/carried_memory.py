"""How a pointer, or a tensor over one, is carried through a dynamic region (region_carry.py): as two region values,
the pointer's base (an address of its memory space) and its element offset. What is a type in CuTe DSL stays fixed
across the region and must be the same at its end: the element type, the memory space, the swizzle, the tensor's
layout, and the alignment the region assumes (that of the value it enters with). So a tensor whose layout is fixed
and whose pointer moves each trip (a stage's buffer, an accumulator in tensor memory shifted by a runtime offset) is
one variable of the loop, as in CuTe DSL.

Carrying the base and the offset apart, and not their sum as one address, leaves addressing to each memory space:
global and shared memory count bytes, tensor memory counts 32-bit columns (a backend's own arithmetic on
Pointer.base and Pointer.offset). A base the region keeps is one value around the loop, which the compiler folds.
Register tensors are not carried so: a variable keeps its registers and takes a new fragment's values
(region_scope.takes_register_values), since registers moved at run time would live in local memory.
"""
from __future__ import annotations

import math

from ..base import trace
from ..base.errors import DSLTypeError, user_location
from ..values.numeric import SymInt
from ..values.pointer import GENERIC, GMEM, RMEM, SMEM, Pointer, elem_bytes, is_packed, ptr_type
from ..values.swizzled_face import base_pointer
from ..values.tensor_type import SwizzledOrigin, Tensor, face_of, full_layout, with_face


def _index_type(p) -> str:
    # global (and generic) addresses are 64-bit, and so may their offsets be; the other spaces are addressed in 32
    wide = p.wide or p.memspace in (GMEM, GENERIC) or isinstance(p.offset, SymInt) and p.offset.bits > 32
    return "i64" if wide else "i32"


def _offset_divisibility(dtype, align: int) -> int:
    """The divisibility of an element offset that leaves a pointer `align`-byte aligned (Pointer.alignment_at)."""
    return 2 * align if is_packed(dtype) else max(1, align // elem_bytes(dtype))


def _same_int(a, b) -> bool:
    d = a - b
    return isinstance(d, int) and d == 0


def carried_pointer(p) -> bool:
    """A pointer of a kernel that a region carries by base and offset (not a host placeholder, not registers; a
    pointer of another class, an experimental kernel's argument, keeps its own protocol)."""
    return type(p) in (Pointer, SwizzledOrigin) and p.base is not None and p.memspace != RMEM


def carried_tensor(t) -> bool:
    return isinstance(t, Tensor) and carried_pointer(base_pointer(t.iterator) if face_of(t) is not None else t.iterator)


class CarriedPointer:
    """A pointer variable carried through a region: (base, offset), with its type-level rest kept."""

    what = "pointer"

    def __init__(self, name, p):
        self.name = name
        self.ptr = p
        # the alignment of the base and of the address: the offset is carried as a multiple of it (its quotient, so
        # that the index algebra knows the multiple: an 8-bit value's byte within a 32-bit column stays static)
        self.align = self._region_alignment(p)
        self.unit = _offset_divisibility(p.dtype, self.align)
        self.index_type = _index_type(p)
        # Byte-addressed memory carries one address, as a loop over k-tiles advancing a global pointer wants it: a
        # (base, offset) pair there cost the Ampere tensor-op GEMM's main loop four instructions. Offsets that are
        # not whole bytes (4-bit elements), a swizzle counted from an origin, and other address units keep the pair.
        self.as_address = (type(p) is Pointer and p.memspace in (GMEM, SMEM) and not is_packed(p.dtype)
                           and p.swizzle is None)

    @staticmethod
    def _region_alignment(p) -> int:
        # A bare pointer is assumed no more aligned than its element: a pipeline's barrier fetched once before a loop
        # at stage 0 (the buffer's alignment) and again inside it at a runtime stage (the barrier's own) is one
        # variable, as in CuTe DSL. A tensor keeps what it enters with: its accesses are vectorised by it.
        align = math.gcd(p.alignment_at(0), p.base_align)
        return align if is_packed(p.dtype) else math.gcd(align, max(1, elem_bytes(p.dtype)))

    def ir_types(self):
        if self.as_address:
            return [ptr_type(self.ptr.memspace)]
        return [ptr_type(self.ptr.memspace), self.index_type]

    def _values(self, p):
        if self.as_address:
            return [p.address(0)]
        return [p.base, trace.builder().materialize(p.offset // self.unit, self.index_type)]

    def values(self, p):
        return self._values(p)

    def _rebuild(self, ir_values):
        p = self.ptr
        if self.as_address:
            return Pointer(ir_values[0], p.dtype, p.memspace, self.align, 0, None, p.wide, 0, p.swizzle)
        base, offset = ir_values
        off = trace.lift_int(offset, self.index_type) * self.unit
        out = Pointer(base, p.dtype, p.memspace, self.align, off, None, p.wide, 0, p.swizzle)
        return SwizzledOrigin.of(out, p.origin_swizzle, p.origin_offset) if isinstance(p, SwizzledOrigin) else out

    def rebuild(self, ir_values):
        return self._rebuild(ir_values)

    def _fail(self, lineno, where, what):
        raise DSLTypeError(f"variable '{self.name}' ({self.what}) {what} inside the dynamic {where} at line {lineno}; "
                           f"a {self.what} carried through dynamic control flow may only move its pointer",
                           user_location(5))

    def _check_pointer(self, q, lineno, where):
        p = self.ptr
        if q.dtype is not p.dtype or q.memspace != p.memspace:
            self._fail(lineno, where, f"changes from {p.dtype.__name__} values in {p.memspace} memory to "
                                      f"{q.dtype.__name__} values in {q.memspace} memory")
        if q.swizzle != p.swizzle:
            self._fail(lineno, where, f"changes its swizzle from {p.swizzle} to {q.swizzle}")
        if isinstance(p, SwizzledOrigin) != isinstance(q, SwizzledOrigin) or isinstance(p, SwizzledOrigin) and not (
                q.origin_swizzle == p.origin_swizzle and _same_int(q.origin_offset, p.origin_offset)):
            self._fail(lineno, where, "changes the swizzle its pointer carries")
        # (a pointer aligned by a promise, Pointer.align, over a base aligned so: its offset is the multiple)
        got = math.gcd(q.alignment_at(0), q.base_align)
        if got % self.align:
            raise DSLTypeError(f"variable '{self.name}' ({self.what}) enters the dynamic {where} at line {lineno} "
                               f"{self.align}-byte aligned but is only {got}-byte aligned at its end; the region "
                               "assumes what it entered with (cute.assume(offset, divby=...) states a runtime "
                               "offset's multiple)", user_location(4))

    def yields(self, after, lineno, where):
        if not carried_pointer(after):
            self._fail(lineno, where, f"becomes a {type(after).__name__}")
        self._check_pointer(after, lineno, where)
        return self._values(after)


class CarriedTensor(CarriedPointer):
    """A tensor in global, shared or tensor memory (or another space a backend registers) carried through a region:
    its pointer as a carried pointer, its layout and element type the same throughout."""

    what = "tensor"

    @staticmethod
    def _region_alignment(p) -> int:
        return math.gcd(p.alignment_at(0), p.base_align)

    def __init__(self, name, t):
        # a thread slice that stands for a pointer-swizzled one (swizzled_face.py) carries both: its own pointer,
        # which its accesses use, and the swizzled tensor the program sees (dead in the kernel unless it reads it)
        face = face_of(t)
        self.face = CarriedTensor(name, face) if face is not None else None
        super().__init__(name, base_pointer(t.iterator) if face is not None else t.iterator)
        self.layout, self.shown = full_layout(t), t.layout
        self.dtype = t.element_type

    def ir_types(self):
        return super().ir_types() + (self.face.ir_types() if self.face is not None else [])

    def values(self, t):
        if self.face is None:
            return self._values(t.iterator)
        return self._values(base_pointer(t.iterator)) + self.face.values(face_of(t))

    def rebuild(self, ir_values):
        n = len(super().ir_types())
        plain = Tensor(self._rebuild(ir_values[:n]), self.layout, self.dtype)
        return plain if self.face is None else with_face(plain, self.face.rebuild(ir_values[n:]))

    def yields(self, after, lineno, where):
        if not carried_tensor(after):
            got = "a tensor in registers" if isinstance(after, Tensor) and isinstance(after.iterator, Pointer) \
                else f"a {type(after).__name__}"
            self._fail(lineno, where, f"becomes {got}")
        if after.element_type is not self.dtype:
            self._fail(lineno, where, f"changes its element type from {self.dtype.__name__} to "
                                      f"{after.element_type.__name__}")
        L = full_layout(after)
        if type(L) is not type(self.layout) or not (L == self.layout) or (face_of(after) is None) != (
                self.face is None):
            self._fail(lineno, where, f"changes its layout ({self.shown} before, {after.layout} after)")
        if self.face is None:
            self._check_pointer(after.iterator, lineno, where)
            return self._values(after.iterator)
        self._check_pointer(base_pointer(after.iterator), lineno, where)
        return self._values(base_pointer(after.iterator)) + self.face.yields(face_of(after), lineno, where)
