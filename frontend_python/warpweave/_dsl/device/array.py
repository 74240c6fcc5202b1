"""`cutlass.Array`: a typed, shaped view of memory in a kernel (CuTe DSL's experimental programs' array).

An Array is a pointer and a shape: a view of a tensor the kernel was given (global memory), fresh shared memory
carved from the kernel's allocation (`space=AddressSpace.smem`), a register array (no space), or a view of an
existing pointer (`cutlass.Array(ptr, shape=...)`). It is a thin view over a cute Tensor: element accesses go
through the tensor's layout (row-major for a shape given here, the tensor's own for a tensor argument), vector
accesses through its pointer, so an Array and a tensor of the same memory read and write alike.

Indexing: `a[i]`, `a[i, j]` one element; `a[i:n]` the n elements from flat position i as one Vector (CuTe DSL's
slice: start and count, not start and stop); `a.load(i, n)` / `a.store(v, i)` the same with alignment and
memory qualifiers; `masked_load` / `masked_store` per lane.

For primitives (the backends' wrappers of instructions that take an address): `address_of(x)` is the one way to
read an address from what a program passes them, so that each takes an Array, a cute pointer, a Tensor or a
shared-memory struct field alike.
"""
from __future__ import annotations

import math

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.ir_values import PointerType, Value
from ..base.markers import accept_locations_in_class
from ..values.fragments import make_rmem_tensor
from ..values.ir_vector import Vector
from ..values.numeric import Boolean, Numeric, NumericMeta, Uint8
from ..values.pointer import (
    GENERIC, RMEM, SMEM, Pointer, elem_bytes, is_packed, load_vector_value, masked_load, masked_store, memspace_of,
    element_index, load_scalar, pointer_of, store_scalar, store_vector_value,
)
from ..values.runtime import AddressSpace
from ..values.tensor import ComposedLayout, Layout, Tensor, base_pointer, full_layout
from .arch import printf
from .device_pointer import make_ptr
from .smem import allocate_elements

def _shape_of(shape) -> tuple:
    """A shape given to cutlass.Array: a positive int or a tuple of them, known while tracing."""
    dims = shape if isinstance(shape, tuple) else (shape,)
    out = []
    for d in dims:
        if isinstance(d, Numeric) and d.is_static:
            d = d.value
        if isinstance(d, bool) or not isinstance(d, int):
            raise DSLTypeError(f"cutlass.Array: a shape is a positive int or a tuple of them known while tracing, "
                               f"got {shape!r}", user_location(3))
        if d < 1:
            raise DSLValueError(f"cutlass.Array: the shape {shape!r} has an extent below 1", user_location(3))
        out.append(d)
    if not out:
        raise DSLValueError("cutlass.Array: the shape has no extent", user_location(3))
    return tuple(out)


def _row_major(shape: tuple) -> Layout:
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return _core.make_layout(shape, tuple(reversed(strides)))


def _dtype_of(dtype, what="dtype"):
    if not isinstance(dtype, NumericMeta) or not dtype.ir_type:
        raise DSLTypeError(f"cutlass.Array: {what} is a DSL numeric type (cutlass.Float32, ...), got {dtype!r}",
                           user_location(3))
    return dtype


def _alignment(alignment, default: int) -> int:
    if alignment is None:
        return default
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < 1 or alignment & (alignment - 1):
        raise DSLValueError(f"cutlass.Array: alignment is a power of two number of bytes, got {alignment!r}",
                            user_location(3))
    return alignment


class Array:
    """CuTe DSL's cutlass.Array. Made with

    - `Array(dtype, n_or_shape, space=AddressSpace.smem, alignment=bytes)`: shared memory of the kernel, carved
      after every earlier allocation (arrays of different calls never overlap);
    - `Array(dtype, n_or_shape)`: a register array of the thread;
    - `Array(ptr, shape=..., dtype=..., addrspace=...)`: a view of memory a pointer (or another Array) points to;
    - a kernel or @cute.jit parameter annotated `cutlass.Array`: the tensor argument, seen as an Array."""

    def __init__(self, source=None, shape=None, *, space=None, alignment=None, dtype=None, addrspace=None):
        if source is None and dtype is not None:  # Array(dtype=..., shape=..., space=...)
            source, dtype = dtype, None
        if isinstance(source, Value) and PointerType.isinstance(source.type):  # an IR pointer (an op's result)
            source, dtype = pointer_of(source, dtype=dtype or Uint8), None
        if isinstance(source, NumericMeta):
            if dtype is not None:
                raise DSLTypeError("cutlass.Array: the element type is given twice (positionally and as dtype=)",
                                   user_location(2))
            self._tensor = _allocate(_dtype_of(source), shape, space if space is not None else addrspace,
                                     alignment)
        elif isinstance(source, (Pointer, Array, Tensor)):
            self._tensor = _view(source, shape, dtype, space if space is not None else addrspace, alignment)
        else:
            raise DSLTypeError(f"cutlass.Array: the first argument is an element type (cutlass.Float32, ...) or a "
                               f"pointer, an Array or a tensor to view, got {type(source).__name__}",
                               user_location(2))

    @classmethod
    def of_tensor(cls, tensor: Tensor) -> "Array":
        """The Array view of a tensor (a kernel argument annotated cutlass.Array)."""
        a = cls.__new__(cls)
        a._tensor = tensor
        return a

    # --- what it is -------------------------------------------------------------------------------------------
    @property
    def tensor(self) -> Tensor:
        """The cute Tensor this Array views (same memory, same layout)."""
        return self._tensor

    @property
    def iterator(self) -> Pointer:
        return self._tensor.iterator

    @property
    def shape(self) -> tuple | None:
        """The extents (None for a view of a pointer given without a shape)."""
        if full_layout(self._tensor) is _UNSIZED:
            return None
        s = self._tensor.shape
        return s if isinstance(s, tuple) else (s,)

    @property
    def strides(self) -> tuple | None:
        if full_layout(self._tensor) is _UNSIZED:
            return None
        s = self._tensor.stride
        return s if isinstance(s, tuple) else (s,)

    @property
    def dtype(self):
        return self._tensor.element_type

    element_type = dtype

    @property
    def space(self) -> AddressSpace:
        ms = self.iterator.memspace
        return AddressSpace[ms] if ms in AddressSpace.__members__ else ms

    @property
    def alignment(self) -> int:
        return self.iterator.alignment_at(0)

    @property
    def size(self) -> int | None:
        return None if self.shape is None else _core.product(self._tensor.shape)

    def __len__(self):
        self._coordinates()
        return self.shape[0]

    def __repr__(self):
        space = self.space.name if isinstance(self.space, AddressSpace) else self.space
        shape = "" if self.shape is None else f"shape={self.shape}, "
        return f"Array(dtype={self.dtype.__name__}, address_space={space}, {shape}alignment={self.alignment})"

    def __bool__(self):
        raise DSLTypeError("a cutlass.Array has no truth value: test an element, or `a is not None`",
                           user_location(2))

    # --- pointers and views -----------------------------------------------------------------------------------
    def ir_value(self, *, loc=None, ip=None):
        """The address of the first element as an IR pointer value (`!llvm.ptr<N>`), for ops written with the IR."""
        return self.iterator.ir_value()

    def data_ptr(self, idx=0) -> Pointer:
        """A typed pointer (cutlass.Pointer) to element idx (a flat position or a coordinate; the first by
        default)."""
        return self._ptr(idx, None)

    def subview(self, idx=0, shape=None) -> "Array":
        """The Array from element idx on (a flat position, or a coordinate): a stage of a buffer, the i-th
        barrier of an array of them; of the same shape unless `shape` is given."""
        shape = self.shape if shape is None else _shape_of(shape)
        return Array.of_tensor(Tensor(self._ptr(idx, None), _UNSIZED if shape is None else _row_major(shape),
                                      self.dtype))

    def tospace(self, space) -> "Array":
        """The same memory seen from another address space (shared memory through generic addresses, ...)."""
        ms = memspace_of(space)
        p = self.iterator
        return self if ms == p.memspace else Array.of_tensor(Tensor(p.tospace(ms), full_layout(self._tensor),
                                                                    self.dtype))

    def align(self, alignment: int) -> "Array":
        """This Array, with the promise that its first element's address is a multiple of `alignment` bytes."""
        return Array.of_tensor(Tensor(self.iterator.align(alignment), full_layout(self._tensor), self.dtype))

    # --- element access ---------------------------------------------------------------------------------------
    def __getitem__(self, idx):
        """a[i]: the element at flat position i; a[i, j]: at a coordinate; a[i:n]: n elements from i (a Vector)."""
        if isinstance(idx, slice):
            start, count = _slice(idx)
            return self.load(start, count)
        if isinstance(idx, tuple):
            self._coordinates()
            if any(isinstance(i, slice) for i in idx):
                return self._sub_array(idx)
            return self._tensor[idx]
        return load_scalar(self.iterator, _flat(idx))

    def _sub_array(self, idx: tuple) -> "Array":
        """a[i, :]: the Array of the modes a `:` keeps (a row of a row-major array), a view of the same memory."""
        if len(idx) != len(self.shape) or any(isinstance(i, slice) and i != slice(None) for i in idx):
            raise DSLValueError(f"cutlass.Array index {idx!r}: a sub-array takes `:` for whole modes and an index "
                                f"for each other mode of the shape {self.shape}", user_location(3))
        return Array.of_tensor(self._tensor[tuple(None if isinstance(i, slice) else i for i in idx)])

    def __setitem__(self, idx, value):
        if isinstance(idx, slice):
            start, count = _slice(idx)
            self.store(value, start, count)
        elif isinstance(idx, tuple):
            self._coordinates()
            self._tensor[idx] = value
        else:
            store_scalar(self.iterator, _flat(idx), value)

    def _coordinates(self):
        if self.shape is None:
            raise DSLTypeError("cutlass.Array: a view made without a shape is indexed by flat positions only",
                               user_location(3))

    def _ptr(self, idx, alignment):
        """The pointer to element idx: a flat position, or a coordinate (a tuple) through the layout."""
        if isinstance(idx, tuple):
            self._coordinates()
        off = full_layout(self._tensor)(tuple(idx)) if isinstance(idx, tuple) else _flat(idx)
        p = self.iterator if isinstance(off, int) and off == 0 else base_pointer(self.iterator) + off
        return p.align(alignment) if alignment else p

    def load(self, idx=0, vector_size=None, *, alignment=None, is_volatile=False, is_invariant=False,
             is_nontemporal=False):
        """The element at idx (a flat position or a coordinate), or with vector_size=n the n elements from it as
        one Vector (one vector access: alignment= promises the alignment of element idx's address in bytes)."""
        p = self._ptr(idx, alignment)
        return load_vector_value(p, 0, vector_size or 1, volatile=is_volatile, invariant=is_invariant,
                                 nontemporal=is_nontemporal, scalar=vector_size is None)

    def store(self, value, idx=0, vector_size=None, *, alignment=None, is_volatile=False, is_nontemporal=False):
        """Writes value at idx (a flat position or a coordinate): a number, a Vector (its lanes from idx on), or
        a number broadcast to vector_size lanes."""
        n = vector_size if vector_size is not None else (None if isinstance(value, Vector) else 1)
        store_vector_value(self._ptr(idx, alignment), 0, value, n, volatile=is_volatile, nontemporal=is_nontemporal)

    def masked_load(self, idx, vector_size, mask, default=None, *, alignment=None):
        """vector_size elements from flat position idx as a Vector: lane i read where mask[i] holds (a Boolean
        Vector or register Array), else `default` (zero)."""
        return masked_load(self._ptr(idx, alignment), 0, _mask(mask), default, vector_size)

    def masked_store(self, idx, value, mask, *, alignment=None):
        """Writes lane i of the Vector value at flat position idx + i where mask[i] holds."""
        masked_store(self._ptr(idx, alignment), 0, value, _mask(mask))

    def fill(self, value):
        self._tensor.fill(value)

    def print_runtime(self, max_elements: int = 16):
        """Prints the first max_elements elements (flat positions) from the device when the kernel runs:
        [1.0, 2.0, ...]."""
        n = self.size
        if not isinstance(n, int):
            raise DSLTypeError(f"Array.print_runtime: the array's size is known only at run time ({self.shape})",
                               user_location(2))
        if isinstance(max_elements, bool) or not isinstance(max_elements, int) or max_elements < 1:
            raise DSLValueError(f"Array.print_runtime: max_elements is a positive int, got {max_elements!r}",
                                user_location(2))
        shown = [self[i] for i in range(min(n, max_elements))]
        printf("[" + ", ".join("{}" for _ in shown) + (", ...]" if n > max_elements else "]"), *shown)


accept_locations_in_class(Array)


def _slice(idx: slice):
    """CuTe DSL's Array slice `a[start:count]`: count elements from start (a count known while tracing)."""
    if idx.step is not None:
        raise DSLValueError("cutlass.Array slice: a[start:count] takes no step", user_location(3))
    count = idx.stop
    if isinstance(count, Numeric) and count.is_static:
        count = count.value
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise DSLValueError(f"cutlass.Array slice a[start:count]: count is a positive int known while tracing "
                            f"(the number of elements, not an end), got {count!r}", user_location(3))
    return (0 if idx.start is None else idx.start), count


def _flat(idx):
    return element_index(idx, "cutlass.Array: a flat position is given")


def _mask(mask):
    """A mask as a Boolean Vector: a register Array or tensor of Booleans is read whole."""
    if isinstance(mask, Vector):
        return mask
    t = mask.tensor if isinstance(mask, Array) else mask
    if isinstance(t, Tensor) and t.element_type is Boolean:
        n = t.shape[0] if isinstance(t.shape, tuple) else t.shape
        return Vector.from_elements([t[i] for i in range(n)], Boolean)
    raise DSLTypeError(f"a mask is a Boolean Vector or an Array of Booleans, got {type(mask).__name__}",
                       user_location(4))


def _allocate(dtype, shape, space, alignment) -> Tensor:
    if shape is None:
        raise DSLTypeError("cutlass.Array(dtype, shape): the shape (a number of elements or a tuple) is missing",
                           user_location(3))
    shape = _shape_of(shape)
    ms = RMEM if space is None else memspace_of(space)
    if not trace.in_kernel():
        raise DSLTypeError("cutlass.Array allocates memory inside a @cute.kernel function", user_location(3))
    n = math.prod(shape)
    if ms == SMEM:
        ptr = allocate_elements(dtype, n, _alignment(alignment, elem_bytes(dtype)))
        return Tensor(ptr, _row_major(shape), dtype)
    if ms == RMEM:
        _alignment(alignment, 1)
        return make_rmem_tensor(_row_major(shape), dtype)
    raise DSLValueError(f"cutlass.Array allocates shared memory (space=cutlass.AddressSpace.smem) or registers (no "
                        f"space); {ms} memory comes as a kernel argument or through a pointer", user_location(3))


# The layout of a view of a pointer given without a shape (cutlass.Array(ptr, dtype=...)): its size is unknown, so
# it is read and written at flat positions only (its shape is None).
_UNSIZED = _core.make_layout(1)


def _view(source, shape, dtype, space, alignment) -> Tensor:
    ptr = source.iterator if isinstance(source, (Array, Tensor)) else source
    if not isinstance(ptr, Pointer):
        raise DSLTypeError(f"cutlass.Array: a view needs memory, got a tensor over {type(ptr).__name__}",
                           user_location(3))
    if dtype is not None and _dtype_of(dtype) is not ptr.dtype:
        if is_packed(dtype) or is_packed(ptr.dtype):
            raise DSLTypeError("cutlass.Array: a view of 4-bit values over another type", user_location(3))
        ptr = ptr.recast(dtype)
    if space is not None:
        ms = memspace_of(space, "addrspace")
        if ms != ptr.memspace:
            if ptr.memspace != GENERIC and ms != GENERIC:
                raise DSLValueError(f"cutlass.Array: the pointer is in {ptr.memspace} memory, not {ms}",
                                    user_location(3))
            ptr = ptr.tospace(ms)
    if alignment is not None:
        ptr = ptr.align(_alignment(alignment, 1))
    if shape is None:
        if isinstance(source, (Array, Tensor)):
            return Tensor(ptr, full_layout(source.tensor if isinstance(source, Array) else source), ptr.dtype)
        return Tensor(ptr, _UNSIZED, ptr.dtype)
    return Tensor(ptr, _row_major(_shape_of(shape)), ptr.dtype)


def print_nd_vector(v) -> None:
    """Prints a Vector from the device as nested brackets of its shape ([[1, 2], [3, 4]])."""
    if not isinstance(v, Vector):
        raise DSLTypeError(f"print_nd_vector prints a cutlass.Vector, got {type(v).__name__}", user_location(2))
    lanes = list(v.to_elements())

    def nest(shape, lanes):
        if len(shape) == 1:
            return "[" + ", ".join("{}" for _ in lanes) + "]"
        step = len(lanes) // shape[0]
        return "[" + ", ".join(nest(shape[1:], lanes[k * step:(k + 1) * step]) for k in range(shape[0])) + "]"

    printf(nest(v.shape, lanes), *lanes)


def make_array_view(tensor, *, dtype=None, bounds_check: bool = False) -> Array:
    """A tensor seen as a cutlass.Array (its element type recast to dtype if given). bounds_check asks for
    accesses checked against the shape, which warpweave does not compile in: it is refused rather than ignored."""
    if bounds_check:
        raise DSLValueError("make_array_view(bounds_check=True): checked accesses are not compiled by warpweave",
                            user_location(2))
    if not isinstance(tensor, Tensor) or not isinstance(tensor.iterator, Pointer):
        raise DSLTypeError(f"make_array_view takes a tensor over memory, got {type(tensor).__name__}",
                           user_location(2))
    if dtype is None or dtype is tensor.element_type:
        return Array.of_tensor(tensor)
    return Array(tensor.iterator, tensor.shape, dtype=dtype)


def inttoptr(value, mem_space, dtype) -> Pointer:
    """cutlass.inttoptr: a pointer to dtype values at the integer address `value` in mem_space (a
    cutlass.AddressSpace or NVVM's number: 3 shared, 6 tensor memory, ...), in a kernel."""
    return make_ptr(dtype, value, AddressSpace[memspace_of(mem_space, "mem_space")])


def array_argument(value, annotation):
    """A kernel or @cute.jit argument as its annotation asks: a tensor for a parameter annotated cutlass.Array
    is seen as an Array."""
    named = annotation is Array or isinstance(annotation, str) and annotation.split(".")[-1] == "Array"
    if named and isinstance(value, Tensor):
        return Array.of_tensor(value)
    return value


def address_of(x, what: str = "an address") -> Pointer:
    """The pointer a primitive takes from what a program passes it: an Array (its first element), a Tensor (its
    iterator), a cute pointer, an IR pointer value (a byte pointer of its address space), or an object whose `.ptr`
    / `.iterator` is one. The backends' primitives that take an address read it with this (warpweave.ext's
    address_of), so each accepts all of them alike: a barrier's initialization given
    `bar = cutlass.Array(cutlass.Int64, 1, space=cutlass.AddressSpace.smem)` itself, a peer CTA's address of
    `arr.data_ptr()`, a bulk copy's destination `smem.subview(k)`."""
    if isinstance(x, Pointer):
        return x
    if isinstance(x, Value) and PointerType.isinstance(x.type):  # an IR pointer value (llvm.addrspacecast's)
        return pointer_of(x, dtype=Uint8)
    if isinstance(x, Array):
        return x.iterator
    if isinstance(x, Tensor) and isinstance(x.iterator, Pointer):
        return x.iterator
    for name in ("iterator", "ptr"):
        p = getattr(x, name, None)
        if isinstance(p, Pointer):
            return p
    raise DSLTypeError(f"{what} is a pointer, a cutlass.Array or a tensor, got {type(x).__name__}",
                       user_location(3))


__all__ = ["Array", "address_of", "array_argument", "inttoptr", "make_array_view", "print_nd_vector"]
