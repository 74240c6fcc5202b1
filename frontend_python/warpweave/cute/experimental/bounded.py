"""Tensors that know where they are in a kernel's argument: what lets `cute.experimental.copy` predicate itself.

A global-memory tensor argument of a `@cute.experimental.kernel` becomes a BoundedTensor: the whole argument (its
pointer, layout and shape) and a coordinate tensor over the argument's shape (an identity layout, strides 1@i).
The layout algebra acts on the coordinate side: zipped_divide, flat_divide, composition or slicing build the same
shapes and strides whatever the strides' values are, so the coordinate tensor of the result is the coordinate of
each element of the result in the argument. The data view is read off it: a stride k@i is k times the argument's
i-th stride, and the coordinate tensor's origin is the argument's layout at that coordinate. An element lies in the
argument when its coordinate is elementwise less than the argument's shape (cute.elem_less); a tile that runs past
the argument's end (136 rows cut into tiles of 128) is thereby copied only where it has data.
"""
from __future__ import annotations

from ... import _core
from ..._dsl.base.errors import DSLTypeError, user_location
from ..._dsl.values.coordinates import CoordIterator, has_none, norm_coord
from ..._dsl.values.fragments import make_rmem_tensor
from ..._dsl.values.numeric import Boolean
from ..._dsl.values.pointer import GMEM, Pointer
from ..._dsl.values.tensor import Tensor, elem_less

Layout = _core.Layout


def _data_stride(coord_stride, source_stride, where):
    """The argument's stride that a coordinate stride k@i stands for: k times the argument's stride of mode i."""
    if isinstance(coord_stride, tuple):
        return tuple(_data_stride(s, source_stride, where) for s in coord_stride)
    if isinstance(coord_stride, _core.ScaledBasis):
        st = source_stride
        for i in coord_stride.mode:
            st = st[i] if isinstance(st, tuple) else st
        return coord_stride.value * st
    if isinstance(coord_stride, int) and coord_stride == 0:
        return 0
    raise DSLTypeError(f"{where}: the layout operation made a stride {coord_stride} that is no coordinate of the "
                       "kernel's argument (a bounded tensor takes the layout algebra of views: divides, "
                       "compositions, slices)", user_location(3))


class BoundedTensor:
    """A view of a global-memory argument of a @cute.experimental.kernel with each element's coordinate in it.

    The layout algebra transforms the coordinate layout (`_ww_algebra_layout`); `layout` and `tensor` are the
    data's (what strides and addresses are read from), `bounds` the argument's shape, `coordinates` the coordinate
    tensor, `in_bounds()` one Boolean per element."""

    def __init__(self, source: Tensor, coordinates: Tensor, slots: tuple = ()):
        self.source = source
        self.coordinates = coordinates
        self.slots = slots  # the argument's per-call parameter slots (kernels.py)

    @classmethod
    def of_argument(cls, t: Tensor, slots: tuple = ()) -> "BoundedTensor":
        return cls(t, Tensor(CoordIterator(0), _core.make_identity_layout(t.shape), None), slots)

    # --- what the layout algebra and indexing see -------------------------------------------------------------
    @property
    def _ww_algebra_layout(self):
        return self.coordinates.layout

    @property
    def layout(self):
        return self.tensor.layout

    @property
    def shape(self):
        return self.coordinates.shape

    @property
    def element_type(self):
        return self.source.element_type

    dtype = element_type

    @property
    def memspace(self):
        return self.source.memspace

    @property
    def bounds(self):
        return self.source.shape

    @property
    def iterator(self):
        p = self.tensor.iterator
        if not self.slots or not isinstance(p, Pointer) or not (isinstance(p.offset, int) and p.offset == 0):
            return p
        return ArgumentPointer.of(p, self)

    @property
    def stride(self):
        return self.tensor.stride

    @property
    def leading_dim(self):
        return self.tensor.leading_dim

    def _ww_with_layout(self, layout):
        if not isinstance(layout, Layout):
            raise DSLTypeError(f"a bounded tensor (a @cute.experimental.kernel's argument) takes plain layouts, got "
                               f"{layout}", user_location(3))
        return BoundedTensor(self.source, self.coordinates._ww_with_layout(layout), self.slots)

    def __getitem__(self, coord):
        if has_none(norm_coord(coord)):
            return BoundedTensor(self.source, self.coordinates[coord], self.slots)
        return self.tensor[coord]

    def __setitem__(self, coord, value):
        self.tensor[coord] = value

    def load(self):
        return self.tensor.load()

    def store(self, value):
        self.tensor.store(value)

    def __bool__(self):
        raise DSLTypeError("a Tensor has no truth value", user_location(2))

    def __repr__(self):
        return f"bounded {self.tensor!r} (coordinates {self.coordinates.layout} in {self.bounds})"

    __str__ = __repr__

    # --- the data and its predicates --------------------------------------------------------------------------
    @property
    def tensor(self) -> Tensor:
        """The data view: the argument's elements at this tensor's coordinates."""
        layout = self.coordinates.layout
        stride = _data_stride(layout.stride, self.source.stride, "bounded tensor")
        data = _core.make_layout(layout.shape, stride)
        base = self.coordinates.iterator.base
        offset = 0 if isinstance(base, int) and base == 0 else self.source.layout(base)
        return Tensor(self.source.iterator + offset, data, self.source.element_type)

    def in_bounds(self) -> Tensor:
        """A register tensor of Booleans of this tensor's shape: true where the element lies in the argument."""
        shape = self.shape
        n = _core.product(shape)
        if not isinstance(n, int):
            raise DSLTypeError(f"a bounded tensor's predicates need a static shape, got {shape}: partition it "
                               "first (cute.experimental.partition)", user_location(3))
        pred = make_rmem_tensor(shape, Boolean)
        for i in range(n):
            pred[i] = elem_less(self.coordinates[i], self.bounds)
        return pred


class ArgumentPointer(Pointer):
    """The data pointer of a whole kernel argument (BoundedTensor.iterator): cute.make_tensor over it, another
    layout of the argument's memory (the scale factors' blocked layout over a flat argument, say), is bounded too,
    with the argument's parameter slots, so that TMA loads of its tiles can make their tensor maps. Arithmetic on
    it gives plain pointers."""

    __slots__ = ("argument",)

    @classmethod
    def of(cls, p: Pointer, argument: "BoundedTensor") -> "ArgumentPointer":
        q = cls(p.base, p.dtype, p.memspace, p.base_align, p.offset, p.host, p.wide, p.assumed, p.swizzle)
        q.argument = argument
        return q

    def __ww_make_tensor__(self, layout):
        plain = self._copy()
        if not isinstance(layout, Layout):
            return Tensor(plain, layout, self.dtype)
        return BoundedTensor.of_argument(Tensor(plain, layout, self.dtype), self.argument.slots)


def bound_argument(x, slots: tuple = ()):
    """A kernel argument as a @cute.experimental.kernel sees it: a global-memory tensor becomes bounded."""
    if isinstance(x, Tensor) and isinstance(x.iterator, Pointer) and x.iterator.memspace == GMEM \
            and isinstance(x.layout, Layout):
        return BoundedTensor.of_argument(x, tuple(slots))
    return x


def data_of(x):
    """The tensor a copy or MMA reads or writes: a bounded tensor's data view, anything else as it is."""
    return x.tensor if isinstance(x, BoundedTensor) else x
