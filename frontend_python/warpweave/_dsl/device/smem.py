"""Shared memory: the kernel's dynamic shared memory, carved by SmemAllocator into arrays, tensors and structs.

Every kernel that allocates shared memory uses one extern array (`__ww_dynamic_smem`, 1024-byte aligned); the
allocators of a kernel carve it in order, so offsets and alignments are static and known to the compiler. The
launch passes at least the bytes the kernel carved, whatever smem= says.
"""
from __future__ import annotations

import enum

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import Numeric, Uint8, dtype as dtype_of
from ..values.tensor import (ComposedLayout, Layout, Pointer, SMEM, SwizzledOrigin, Tensor, elem_bytes, element_swizzle,
                             is_packed)

DYNAMIC_SMEM = "__ww_dynamic_smem"
BASE_ALIGN = 1024


def _kernel():
    st = trace.current()
    if st.kernel is None:
        raise DSLTypeError("shared memory is allocated inside a @cute.kernel function", user_location(3))
    return st


def base_pointer():
    """The IR value of the kernel's dynamic shared memory's first byte (declared on first use)."""
    st = _kernel()
    k = st.kernel
    if getattr(k, "smem_base", None) is None:
        if not getattr(st, "declared_dynamic_smem", False):
            st.builder.add_module_text(
                f"llvm.mlir.global external @{DYNAMIC_SMEM}() {{addr_space = 3 : i32, alignment = {BASE_ALIGN} : i64}}"
                " : !llvm.array<0 x i8>")
            st.declared_dynamic_smem = True
        b = st.builder
        with trace.at_entry():
            k.smem_base = b.op1("llvm.mlir.addressof", [], "!llvm.ptr<3>", f"global_name = @{DYNAMIC_SMEM}")
    return k.smem_base


def _carve(nbytes: int, align: int, *, reserved: bool = False, gaps=()) -> int:
    """Reserves nbytes at an offset aligned to `align`; returns the offset.

    User allocations are laid out in order, each after the last. The bytes that alignment leaves unused (before
    an aligned allocation, and `gaps`, the padding inside a struct, relative to it) are kept as holes; a reserved
    allocation (partition=RESERVED, and the barriers and words the pipelines and allocators keep for themselves)
    takes the lowest hole it fits in, as CuTe DSL puts those below the user's buffers: a kernel whose small
    reserved fields precede 1024-byte aligned buffers fits them in the padding, not after the buffers."""
    if not isinstance(nbytes, int) or nbytes < 0:
        raise DSLValueError(f"shared memory sizes must be static and non-negative, got {nbytes}", user_location(3))
    if align <= 0 or align & (align - 1):
        raise DSLValueError(f"byte_alignment must be a power of two, got {align}", user_location(3))
    if align > BASE_ALIGN:
        raise DSLValueError(f"byte_alignment {align} exceeds the {BASE_ALIGN}-byte alignment of shared memory",
                            user_location(3))
    k = _kernel().kernel
    if reserved:
        off = _take_hole(k.smem_holes, nbytes, align)
        if off is not None:
            return off
    top = k.smem_bytes
    off = (top + align - 1) // align * align
    k.smem_bytes = off + nbytes
    k.smem_holes.extend(h for h in [(top, off)] + [(off + s, off + e) for s, e in gaps] if h[0] < h[1])
    return off


def _take_hole(holes: list, nbytes: int, align: int):
    """The offset of nbytes at `align` in the lowest hole that holds them (the hole shrinks to what is left of
    it), or None."""
    for i, (s, e) in sorted(enumerate(holes), key=lambda h: h[1]):
        off = (s + align - 1) // align * align
        if off + nbytes <= e:
            holes[i:i + 1] = [h for h in ((s, off), (off + nbytes, e)) if h[0] < h[1]]
            return off
    return None


def _pointer(offset: int, dtype) -> Pointer:
    if is_packed(dtype):   # element offsets of 4-bit values count half bytes
        return Pointer(base_pointer(), dtype, SMEM, BASE_ALIGN, offset * 2)
    eb = elem_bytes(dtype)
    if offset % eb:
        raise DSLValueError(f"shared memory offset {offset} is not aligned for {dtype.__name__}", user_location(3))
    return Pointer(base_pointer(), dtype, SMEM, BASE_ALIGN, offset // eb)


def allocate_elements(dtype, num_elems: int, byte_alignment: int) -> Pointer:
    """A pointer to num_elems fresh values of dtype in the kernel's shared memory, carved after every earlier
    allocation of the kernel (cutlass.Array(..., space=smem) takes its storage so)."""
    return _pointer(_carve(_bytes_of(num_elems, dtype), max(byte_alignment, elem_bytes(dtype))), dtype)


class SmemPartition(enum.Enum):
    """Where CuTe DSL places an allocation in shared memory: RESERVED, the low addresses, with the barriers and
    words the library keeps for itself, or USER, the buffers above them. warpweave lays USER allocations out in
    order and puts a RESERVED one in the lowest alignment padding it fits in (see _carve), else after the rest."""
    RESERVED = 0
    USER = 1


def _is_reserved(partition) -> bool:
    if partition is not None and not isinstance(partition, SmemPartition):
        raise DSLTypeError(f"partition must be a SmemPartition, got {partition!r}", user_location(3))
    return partition is SmemPartition.RESERVED


class SmemAllocator:
    """Carves the kernel's shared memory: allocate(bytes or a cute.struct), allocate_array, allocate_tensor."""

    def allocate(self, size_or_type, byte_alignment: int = 1, *, partition=None):
        reserved = _is_reserved(partition)
        if isinstance(size_or_type, type) and issubclass(size_or_type, Struct):
            t = size_or_type
            off = _carve(t.size_in_bytes(), max(byte_alignment, t.alignment()), reserved=reserved, gaps=t._gaps)
            return t._bind(off)
        if isinstance(size_or_type, int):
            return _pointer(_carve(size_or_type, byte_alignment, reserved=reserved), Uint8)
        if isinstance(size_or_type, type) and issubclass(size_or_type, Numeric) and size_or_type.width >= 8:
            # One value of a numeric type (a scalar in shared memory): a pointer to it, aligned to its size.
            t = size_or_type
            return _pointer(_carve(elem_bytes(t), max(byte_alignment, elem_bytes(t)), reserved=reserved), t)
        raise DSLTypeError(f"SmemAllocator.allocate takes a byte count, a numeric type or a @cute.struct class, got "
                           f"{size_or_type!r}", user_location(2))

    def allocate_array(self, element_type, num_elems: int = 1, byte_alignment: int = 0, *, partition=None):
        reserved = _is_reserved(partition)
        t = dtype_of(element_type)
        return _pointer(_carve(num_elems * elem_bytes(t), max(byte_alignment, elem_bytes(t)), reserved=reserved), t)

    def allocate_tensor(self, element_type, layout, byte_alignment: int = 16, swizzle=None, *, partition=None):
        """A shared-memory tensor of `layout` (a Layout or a swizzled ComposedLayout); `swizzle` composes one.
        4-bit types are packed two to a byte (tensor.is_packed): sizes and swizzle periods count their bytes."""
        reserved = _is_reserved(partition)
        t = dtype_of(element_type)
        if isinstance(layout, tuple) or isinstance(layout, int):
            layout = _core.make_layout(layout)
        if swizzle is not None:
            if isinstance(layout, ComposedLayout):
                raise DSLTypeError("allocate_tensor: the layout is already composed; pass swizzle= with its outer "
                                   "layout", user_location(2))
            layout = _core.ComposedLayout(element_swizzle(swizzle, t, "allocate_tensor"), 0, layout)
        if not isinstance(layout, (Layout, ComposedLayout)):
            raise DSLTypeError(f"allocate_tensor: expected a layout, got {type(layout).__name__}", user_location(2))
        cos = layout.cosize()
        if not isinstance(cos, int):
            raise DSLTypeError(f"allocate_tensor: shared memory layouts must be static, got {layout}",
                               user_location(2))
        align = max(byte_alignment, elem_bytes(t))
        inner = layout.inner if isinstance(layout, ComposedLayout) else None
        if isinstance(inner, _core.Swizzle) and inner.num_bits:
            # A swizzle permutes address bits below its period: the buffer starts at a multiple of the period, so
            # that the swizzle of offsets is the swizzle of addresses (what TMA and the MMAs apply).
            align = max(align, _bytes_of(1 << (inner.num_bits + inner.num_base + inner.num_shift), t))
        ptr = _pointer(_carve(_bytes_of(cos, t), align, reserved=reserved), t)
        if swizzle is not None:   # the swizzle is the pointer's, as CuTe DSL gives it (the tensor has strides)
            ptr = SwizzledOrigin.of(ptr, layout.inner, 0)
        return Tensor(ptr, layout, t)


def _bytes_of(num_elems: int, t) -> int:
    """The bytes num_elems values of t take in memory (4-bit types packed two to a byte)."""
    return -(-num_elems // 2) if is_packed(t) else num_elems * elem_bytes(t)


# --- cute.struct --------------------------------------------------------------------------------------------------

class _MemRangeType:
    def __init__(self, dtype, count):
        self.dtype = dtype_of(dtype)
        if not isinstance(count, int) or count < 0:
            raise DSLValueError(f"MemRange count must be a static non-negative integer, got {count}",
                                user_location(3))
        self.count = count

    def size(self):
        return _bytes_of(self.count, self.dtype)

    def alignment(self):
        return elem_bytes(self.dtype)

    def bind(self, off):
        return MemRange(self, off)


class MemRange:
    """A struct field of `count` values of `dtype` in shared memory."""

    def __class_getitem__(cls, item):
        dtype, count = item
        return _MemRangeType(dtype, count)

    def __init__(self, t: _MemRangeType, off: int):
        self._t = t
        self._off = off

    def data_ptr(self):
        return _pointer(self._off, self._t.dtype)

    def _elements(self):
        return Tensor(_pointer(self._off, self._t.dtype), _core.make_layout(self._t.count), self._t.dtype)

    def __getitem__(self, i):
        """Element i of the range (a load from shared memory)."""
        return self._elements()[i]

    def __setitem__(self, i, value):
        self._elements()[i] = value

    def __len__(self):
        return self._t.count

    @property
    def element_type(self):
        return self._t.dtype

    def get_tensor(self, layout, swizzle=None, dtype=None):
        """The range as a tensor of `layout` (a layout or shape; swizzle composes a swizzle with it: one from
        cute.make_swizzle swizzles byte addresses, as in CuTe DSL, see UserSwizzle)."""
        t = dtype_of(dtype) if dtype is not None else self._t.dtype
        if isinstance(layout, (tuple, int)):
            layout = _core.make_layout(layout)
        if swizzle is not None:
            layout = _core.ComposedLayout(element_swizzle(swizzle, t, "get_tensor"), 0, layout)
        need = _bytes_of(layout.cosize(), t)
        if need > self._t.size():
            raise DSLValueError(f"get_tensor: {layout} needs {need} bytes; the field holds {self._t.size()}",
                                user_location(2))
        ptr = _pointer(self._off, t)
        if swizzle is not None:   # the swizzle is the pointer's, as CuTe DSL gives it (the tensor has strides)
            ptr = SwizzledOrigin.of(ptr, layout.inner, 0)
        return Tensor(ptr, layout, t)


class _AlignType:
    def __init__(self, inner, align):
        self.inner = _field_type(inner)
        self.align = align

    def size(self):
        return self.inner.size()

    def alignment(self):
        return max(self.align, self.inner.alignment())

    def bind(self, off):
        return self.inner.bind(off)


class Align:
    def __class_getitem__(cls, item):
        inner, align = item
        return _AlignType(inner, align)


class _ScalarType:
    def __init__(self, dtype):
        self.dtype = dtype

    def size(self):
        return elem_bytes(self.dtype)

    def alignment(self):
        return elem_bytes(self.dtype)

    def bind(self, off):
        return _pointer(off, self.dtype)


class _StructType:
    def __init__(self, cls):
        self.cls = cls

    def size(self):
        return self.cls.size_in_bytes()

    def alignment(self):
        return self.cls.alignment()

    def bind(self, off):
        return self.cls._bind(off)


def _field_type(t):
    if isinstance(t, (_MemRangeType, _AlignType, _ScalarType, _StructType)):
        return t
    if isinstance(t, type) and issubclass(t, Struct):
        return _StructType(t)
    if isinstance(t, type) and issubclass(t, Numeric):
        return _ScalarType(t)
    raise DSLTypeError(f"cute.struct field type {t!r}: use MemRange[dtype, n], Align[..., n], a numeric type or "
                       "another struct", user_location(4))


class Struct:
    """Base of @cute.struct classes: fields laid out in order, each at its alignment."""

    _fields: list = []
    _size = 0
    _align = 1
    _gaps: tuple = ()   # (start, end) byte ranges no field covers: alignment padding, a reserved allocation's room

    def __init__(self, offset):
        # CuTe DSL builds a struct over a shared-memory pointer (e.g. one SmemAllocator.allocate returned): the
        # fields are laid out from its byte offset in the kernel's shared memory.
        if isinstance(offset, Pointer):
            offset = _offset_of(offset, type(self))
        object.__setattr__(self, "_offset", offset)
        for name, ft, off in self._fields:
            object.__setattr__(self, name, ft.bind(offset + off))

    def __setattr__(self, name, value):
        # `storage.count = 16` stores into a scalar field (CuTe DSL's struct fields are memory, not attributes).
        field = next((ft for n, ft, _ in type(self)._fields if n == name), None)
        if field is None:
            object.__setattr__(self, name, value)
            return
        inner = field.inner if isinstance(field, _AlignType) else field
        if not isinstance(inner, _ScalarType):
            raise DSLTypeError(f"{type(self).__name__}.{name} is a {type(inner).__name__.strip('_')} field of shared "
                               "memory: write its elements, not the field", user_location(2))
        getattr(self, name).store(value if isinstance(value, inner.dtype) else inner.dtype(value))

    @classmethod
    def size_in_bytes(cls) -> int:
        return cls._size

    @classmethod
    def alignment(cls) -> int:
        return cls._align

    @classmethod
    def _bind(cls, off):
        return cls(off)


def _offset_of(ptr: Pointer, cls) -> int:
    """The byte offset of a pointer into the kernel's shared memory, for a struct of cls laid out there."""
    st = _kernel()
    base = getattr(st.kernel, "smem_base", None)
    if ptr.memspace != SMEM or base is None or ptr.base != base or not isinstance(ptr.offset, int):
        raise DSLTypeError(f"{cls.__name__}(ptr): a struct is laid out over a pointer into the kernel's shared "
                           f"memory at a static offset (from SmemAllocator), got {ptr!r}", user_location(3))
    off = ptr.offset * elem_bytes(ptr.dtype)
    if off % cls.alignment():
        raise DSLValueError(f"{cls.__name__}(ptr): offset {off} is not {cls.alignment()}-byte aligned",
                            user_location(3))
    return off


def struct(cls):
    """@cute.struct: a class whose annotations are shared-memory fields (MemRange, Align, numbers, structs)."""
    fields, gaps, off, align = [], [], 0, 1
    for name, t in cls.__dict__.get("__annotations__", {}).items():
        ft = _field_type(t)
        a = ft.alignment()
        start = (off + a - 1) // a * a
        gaps.append((off, start))
        fields.append((name, ft, start))
        inner = ft.inner if isinstance(ft, _AlignType) else ft
        if isinstance(inner, _StructType):
            gaps.extend((start + s, start + e) for s, e in inner.cls._gaps)
        off = start + ft.size()
        align = max(align, a)
    size = (off + align - 1) // align * align
    gaps.append((off, size))
    return type(cls.__name__, (Struct,), {"_fields": fields, "_size": size, "_align": align,
                                          "_gaps": tuple(g for g in gaps if g[0] < g[1]),
                                          "__doc__": cls.__doc__, "__module__": cls.__module__})


struct.MemRange = MemRange
struct.Align = Align
