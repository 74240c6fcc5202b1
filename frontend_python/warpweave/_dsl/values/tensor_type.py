"""The Tensor type: an iterator (a pointer into global, shared or register memory, or a coordinate) and a layout.

Indexing with a full coordinate reads or writes one element; a coordinate holding None slices (CuTe's slice: the
None modes stay, the pointer moves to the rest). A view moves the iterator and keeps what a swizzle must see in
the layout.
"""
from __future__ import annotations

import warnings

from ... import _core
from ..base import trace
from ..base.errors import DSLError, DSLTypeError, DSLValueError, user_location
from .coordinates import CoordIterator, coordinate_sum, has_none, norm_coord, slice_layout, zero_nones
from .numeric import Int32, Int64
from . import hooks
from .pointer import GMEM, RMEM, SMEM, Pointer, load_scalar, store_scalar, store_scalars
from .swizzled_face import SwizzledFace, align_swizzled, base_pointer
from .tensor_ssa import TensorSSA

Layout = _core.Layout
ComposedLayout = _core.ComposedLayout


class DSLIndexError(DSLError, IndexError):
    """A static index outside a tensor whose extent is known while tracing."""


class DSLIndexWarning(UserWarning):
    """A static index outside a register tensor, which compiles to an access that reads an undefined value or
    writes nothing."""


def swizzle_span(inner) -> int:
    """The period of a swizzle: adding a multiple of it commutes with the swizzle, so such offsets can move from
    inside a composed layout to the pointer."""
    if isinstance(inner, _core.Swizzle):
        return 1 << (inner.num_base + inner.num_bits + abs(inner.num_shift))
    return 0


class SwizzledOrigin(Pointer):
    """The iterator of a tensor whose swizzle came with its pointer (make_tensor of a swizzled pointer,
    SmemAllocator.allocate_tensor(swizzle=)). To the tensor's own operations it is the base pointer its composed
    layout (Swizzle o r o layout) offsets; to the program it stands for CuTe DSL's swizzled pointer at the tensor's
    origin, base + r with the swizzle: make_tensor(t.iterator, layout) is swizzled as t is, and recast_ptr reads
    the origin's address. Arithmetic on it is the program's, CuTe DSL's: it moves the logical address and keeps
    the swizzle; the tensor's own operations move the base (base_pointer)."""

    __slots__ = ("origin_swizzle", "origin_offset")

    @staticmethod
    def of(ptr, swizzle, offset):
        out = SwizzledOrigin(ptr.base, ptr.dtype, ptr.memspace, ptr.base_align, ptr.offset, ptr.host, ptr.wide,
                             ptr.assumed, None)
        out.origin_swizzle, out.origin_offset = swizzle, offset
        return out

    def origin(self) -> Pointer:
        """The plain pointer to the tensor's origin (the swizzle is the tensor's, not this address's)."""
        return self._copy() + self.origin_offset

    def swizzled(self) -> Pointer:
        """CuTe DSL's pointer: the origin with the swizzle."""
        return self.origin()._copy(swizzle=self.origin_swizzle)

    # What a program reads of the pointer is CuTe DSL's swizzled pointer's: its type (with the swizzle, of byte
    # addresses), its alignment and its address are the origin's; the tensor's own operations use the base.
    @property
    def type(self):
        return self.swizzled().type

    @property
    def alignment(self) -> int:
        return self.origin().alignment_at(0)

    def toint(self, dtype=None, *, loc=None, ip=None):
        return self.origin().toint(dtype)

    def base_pointer(self) -> Pointer:
        return self._copy()

    @property
    def face(self) -> Pointer:
        return self.swizzled()

    def __add__(self, off):
        return self.swizzled() + off

    __radd__ = __add__

    def align(self, min_align: int):
        return align_swizzled(self, self.origin(), min_align)

    def __repr__(self):
        return repr(self.swizzled())


def view(tensor, outer_offset, outer_layout):
    """`tensor` moved by outer_offset (in units of its layout's codomain; for a composed layout, of the outer
    layout's) and given outer_layout. A swizzled tensor keeps what the swizzle must see inside its composed
    offset and moves the rest, a multiple of the swizzle's span, into the pointer."""
    L = tensor._layout
    if isinstance(L, ComposedLayout):
        total = L.offset + outer_offset
        span = swizzle_span(L.inner)
        d, r = _core.split_divisible(total, span) if span else (0, total)
        it = base_pointer(tensor.iterator) + d
        if isinstance(tensor.iterator, SwizzledOrigin):
            it = SwizzledOrigin.of(it, L.inner, r)
        return Tensor(it, _core.ComposedLayout(L.inner, r, outer_layout), tensor.element_type)
    return Tensor(base_pointer(tensor.iterator) + outer_offset, outer_layout, tensor.element_type)


def outer_of(layout):
    return layout.outer if isinstance(layout, ComposedLayout) else layout


def _pointer_swizzled(t) -> bool:
    return isinstance(t.iterator, SwizzledOrigin) and isinstance(t._layout, ComposedLayout)


def with_face(plain, face):
    """`plain` (a tensor that addresses through a plain layout) standing for `face`, the pointer-swizzled tensor
    CuTe DSL has of the same elements (swizzled_face.py): its iterator, layout and slices are the program's."""
    out = Tensor(SwizzledFace.of(base_pointer(plain.iterator), face.iterator.face), plain._layout, plain._dtype)
    out._face = face
    return out


def face_of(t):
    """The pointer-swizzled tensor a plain one stands for (with_face), or None."""
    return getattr(t, "_face", None)


def full_layout(t):
    """The layout that addresses t's elements: a tensor's swizzle included where CuTe DSL keeps it in the pointer
    (Tensor.layout is then the outer layout); for anything else with a layout, that layout."""
    return t._layout if type.__instancecheck__(Tensor, t) else t.layout


class _TensorType(type):
    def __instancecheck__(cls, x):
        # A buffer passed to a @cute.jit function (from_dlpack, a fake tensor) is a cute.Tensor to user code too, as
        # in CuTe DSL: programs sort their arguments into tensors and scalars with isinstance.
        return type.__instancecheck__(cls, x) or (cls is Tensor and getattr(type(x), "is_runtime_tensor", False))


class Tensor(metaclass=_TensorType):
    """A CuTe tensor: iterator and layout."""

    def __init__(self, iterator, layout, dtype=None):
        if not isinstance(layout, (Layout, ComposedLayout)):
            raise DSLTypeError(f"make_tensor: expected a Layout, got {type(layout).__name__}", user_location(2))
        if isinstance(iterator, SwizzledOrigin) and isinstance(layout, Layout):
            # the iterator stands for CuTe DSL's swizzled pointer: a plain layout over it is swizzled by it
            layout = _core.ComposedLayout(iterator.origin_swizzle, iterator.origin_offset, layout)
        self.iterator = iterator
        self._layout = layout
        self._face = None   # the pointer-swizzled tensor a plain one stands for (with_face)
        self._dtype = dtype if dtype is not None else getattr(iterator, "dtype", None)

    @property
    def layout(self):
        """The layout as CuTe DSL gives it: of a tensor whose swizzle lives in its pointer (its iterator), the plain
        outer layout, the swizzle being applied through the pointer; what addresses the elements is full_layout."""
        if self._face is not None:
            return self._face.layout
        return self._layout.outer if _pointer_swizzled(self) else self._layout

    # --- properties -------------------------------------------------------------------------------------------
    @property
    def element_type(self):
        return self._dtype

    dtype = element_type  # CuTe DSL's newer name for it

    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        if self._face is not None:
            return self._face.stride
        L = self._layout
        if isinstance(L, ComposedLayout):
            if not (isinstance(self.iterator, SwizzledOrigin) or isinstance(L.inner, _core.Swizzle)):
                raise DSLTypeError(f"a tensor of the composed layout {L} has no single stride", user_location(2))
            # A swizzle permutes addresses, not coordinates: CuTe DSL keeps it in the pointer of such a tensor (a
            # shared buffer's get_tensor(layout, swizzle=...), make_tensor of a swizzled pointer), whose stride is
            # the layout's; here it is composed with the layout, and the stride is still that layout's.
            return L.outer.stride
        return L.stride

    @property
    def leading_dim(self):
        """The first mode, left to right, of stride 1 and extent other than 1 (a tuple of indices where that mode
        is nested); None when no mode is (CuTe DSL's Tensor.leading_dim)."""
        outer = self.layout.outer if isinstance(self.layout, ComposedLayout) else self.layout

        def find(shape, stride):
            if isinstance(shape, tuple):
                for i, (sh, st) in enumerate(zip(shape, stride)):
                    hit = find(sh, st)
                    if hit is not None:
                        return (i,) if hit == () else (i,) + hit
                return None
            return () if isinstance(stride, int) and stride == 1 and not (isinstance(shape, int) and shape == 1) \
                else None

        hit = find(outer.shape, outer.stride)
        if hit is None or hit == ():
            return None if hit is None else 0
        return hit[0] if len(hit) == 1 else hit

    @property
    def memspace(self):
        return self.iterator.memspace if isinstance(self.iterator, Pointer) else "coord"

    @property
    def value(self):
        """CuTe DSL's IR handle of the tensor, which its dialect's ops take: a tensor here is its own (iterator and
        layout, no IR op)."""
        return self

    @property
    def is_coordinate_tensor(self) -> bool:
        return isinstance(self.iterator, CoordIterator)

    @property
    def type(self) -> str:
        if self.is_coordinate_tensor:
            return f"coord_tensor<{self.layout}>"
        p = self.iterator
        if self._face is not None:
            return self._face.type
        if _pointer_swizzled(self):   # CuTe DSL prints the pointer's swizzle (of byte addresses) apart
            p = p.swizzled()
            return (f"tensor<{self._dtype.__name__}, {p.memspace}, align {p.alignment_at(0)}, "
                    f"{p.type.swizzle_type}, {self.layout}>")
        return f"tensor<{self._dtype.__name__}, {p.memspace}, align {p.alignment_at(0)}, {self.layout}>"

    def __repr__(self):
        return self.type

    __str__ = __repr__

    def _ww_with_layout(self, layout):
        return Tensor(self.iterator, layout, self._dtype)

    # --- indexing ---------------------------------------------------------------------------------------------
    def _offset(self, coord):
        return self._layout(coord)

    def _outside_registers(self, coord, off, access: str) -> bool:
        """Whether a static index falls outside a register tensor (a fixed array of registers). CuTe DSL compiles
        such an access (an out-of-bounds one on the array: undefined behaviour, which its compiler folds away), and
        shipped libraries contain loops that run past a fragment's end; so it is not refused, but warned of at the
        user's line, and made well defined: a read gives an undefined value, a write writes nothing."""
        if not (isinstance(off, int) and isinstance(self.iterator, Pointer) and self.iterator.memspace == RMEM):
            return False
        n = _core.product(self.shape)
        cos = outer_of(self.layout).cosize()
        bad = isinstance(coord, int) and isinstance(n, int) and not 0 <= coord < n
        bad = bad or (isinstance(cos, int) and not 0 <= off < max(cos, 1))
        if bad:
            where = user_location(3)
            # the same text for every index at one line, so that a loop running past the end warns once
            text = (f"an index is out of range for the register tensor of shape {self.shape} ({n} elements, "
                    f"layout {self.layout}): the {access} " +
                    ("gives an undefined value" if access == "read" else "writes nothing"))
            if where is None:
                warnings.warn(text, DSLIndexWarning, stacklevel=3)
            else:
                warnings.warn_explicit(text, DSLIndexWarning, where[0], where[1])
        return bad

    def __getitem__(self, coord):
        coord = norm_coord(coord)
        if has_none(coord):
            outer = outer_of(self._layout if self._face is not None else self.layout)
            part = view(self, outer(zero_nones(coord)), slice_layout(coord, outer))
            return part if self._face is None else with_face(part, self._face[coord])
        offset = self._offset(coord)
        if self.is_coordinate_tensor:
            return _coord_value(coordinate_sum(self.iterator.base, offset))
        if self._outside_registers(coord, offset, "read"):
            return self._dtype.from_ir(trace.builder().op1("llvm.mlir.undef", [], self._dtype.ir_type))
        return load_scalar(self.iterator, offset)

    def __setitem__(self, coord, value):
        coord = norm_coord(coord)
        if self.is_coordinate_tensor:
            raise DSLTypeError("a coordinate (identity) tensor is read-only", user_location(2))
        if has_none(coord):
            self[coord].store(value)
            return
        offset = self._offset(coord)
        if not self._outside_registers(coord, offset, "write"):
            store_scalar(self.iterator, offset, value)

    def __iter__(self):
        raise DSLTypeError("iterate a tensor with an index range: for i in range(cute.size(t)): t[i]", user_location(2))

    def __bool__(self):
        # Python's default would make every tensor true, so `if t:` would silently take its branch.
        raise DSLTypeError("a Tensor has no truth value: test an element (if t[i]: ...), or its size "
                           "(cute.size(t) > 0), or `t is not None`", user_location(2))

    # --- whole-tensor values ----------------------------------------------------------------------------------
    # A whole tensor's loads and stores run no user code: their operations take the caller's line, found once.
    @trace.one_user_line
    def load(self):
        """All elements as a TensorSSA (in the order of the tensor's coordinates)."""
        n = static_size(self, "load")
        if self.is_coordinate_tensor:
            return [self[i] for i in range(n)]
        return TensorSSA([self[i] for i in range(n)], self.shape, self._dtype)

    @trace.one_user_line
    def store(self, value):
        n = static_size(self, "store")
        if isinstance(value, TensorSSA):
            if len(value.values) != n:
                raise DSLValueError(f"store: {len(value.values)} values into a tensor of {n} elements",
                                    user_location(2))
            if self._fills_by_vectors():   # a thread's values as wide stores, not one store per element
                hooks.fill_memory(self, value)
                return
            if self._stores_as_registers(value.values):
                return
            for i, v in enumerate(value.values):
                self[i] = v
        elif self._fills_by_vectors():
            hooks.fill_memory(self, value)
        else:
            for i in range(n):
                self[i] = value

    def _stores_as_registers(self, values) -> bool:
        """Stores a TensorSSA into a kernel's register tensor of static offsets as the registers hold it
        (store_scalars: 16- and 8-bit values a 32-bit register at a time, wider ones as one array), and says whether it
        did. Per-element stores of 16-bit values leave LLVM the register's halves apart: the instruction that reads
        the register whole (an MMA's A operand after a type conversion) gets it rebuilt by shifts and ors where it
        is read, which the conversion to a narrower type cannot fuse into one paired conversion, and which, placed
        among an asynchronous MMA's instructions, makes the assembler wait for each MMA before the next."""
        it = self.iterator
        if (not isinstance(it, Pointer) or it.memspace != RMEM or self._face is not None
                or self._dtype is None or self.is_coordinate_tensor or not trace.in_kernel()):
            return False
        offsets = [self._offset(i) for i in range(len(values))]
        if not all(type(o) is int for o in offsets) or len(set(offsets)) != len(offsets):
            return False
        order = sorted(range(len(offsets)), key=offsets.__getitem__)
        store_scalars(it, [offsets[i] for i in order], [values[i] for i in order])
        return True

    def _fills_by_vectors(self) -> bool:
        """Whether a fill (or a store of a TensorSSA) goes through the vectorizing copy: a kernel's shared- or
        global-memory tensor of whole-byte values (a register tensor has no stores to merge; the host side records
        element stores), a thread's part of one (its values go through a register fragment: at most _FILL_BYTES of
        them)."""
        it = self.iterator
        if not isinstance(it, Pointer) or it.memspace not in (SMEM, GMEM) or self._dtype is None:
            return False
        st = trace.current_or_none()
        if st is None or st.kernel is None or self._dtype.width < 8 or self._dtype.is_boolean:
            return False
        n = _core.product(self.shape)
        return isinstance(n, int) and n * self._dtype.width // 8 <= _FILL_BYTES

    def fill(self, value):
        self.store(value)


# The most bytes a fill stores through a register fragment (a thread's part of a tile; larger tensors, filled whole
# by every thread, are stored element by element).
_FILL_BYTES = 512


def static_size(t, op):
    n = _core.product(t.shape)
    if not isinstance(n, int):
        raise DSLTypeError(f"{op}: needs a tensor of static size, got shape {t.shape}", user_location(3))
    return n


def _coord_value(c):
    if isinstance(c, tuple):
        return tuple(_coord_value(x) for x in c)
    if isinstance(c, int):
        return c
    return Int32._wrap(c) if c.bits <= 32 else Int64._wrap(c)
