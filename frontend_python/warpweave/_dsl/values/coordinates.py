"""Coordinates of the layout algebra as the DSL's tensors take them: DSL integers read as algebra values, None
modes (CuTe's slice), the parts of a shape or layout a sliced coordinate keeps, and the coordinate iterator of an
identity tensor."""
from __future__ import annotations

from ... import _core
from ..base.errors import DSLTypeError, DSLValueError, user_location
from .numeric import Numeric

ComposedLayout = _core.ComposedLayout


class CoordIterator:
    """The iterator of an identity tensor: elements are coordinates (base + layout(c))."""

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base  # a coordinate tuple (ints or SymInts), or 0

    def __add__(self, off):
        return CoordIterator(coordinate_sum(self.base, off))

    def __getitem__(self, i):
        """Component i of the origin (CuTe DSL's iterator of a coordinate tensor is its origin, an int tuple):
        programs offset one mode of it and make a coordinate tensor of the result (make_tensor of a tuple)."""
        if isinstance(self.base, tuple):
            return self.base[i]
        if not isinstance(i, int):
            raise DSLTypeError(f"a coordinate iterator is indexed by a mode number, got {i!r}", user_location(2))
        return self.base   # the zero origin, of every rank


def coordinate_sum(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        a = a if isinstance(a, tuple) else ()
        b = b if isinstance(b, tuple) else ()
        n = max(len(a), len(b))
        return tuple(coordinate_sum(a[i] if i < len(a) else 0, b[i] if i < len(b) else 0) for i in range(n))
    return a + b


def int_of(x):
    if isinstance(x, Numeric):
        if not x.is_integer:
            raise DSLTypeError(f"a coordinate must be an integer, got {type(x).__name__}", user_location(2))
        return x.__ww_int__()
    if hasattr(x, "__ww_int__"):
        return x.__ww_int__()
    return x


def norm_coord(c):
    """A coordinate with DSL integers replaced by their algebra values."""
    if isinstance(c, tuple):
        return tuple(norm_coord(x) for x in c)
    if c is None:
        return None
    return int_of(c)


def has_none(c) -> bool:
    return c is None or (isinstance(c, tuple) and any(has_none(x) for x in c))


def zero_nones(c):
    if isinstance(c, tuple):
        return tuple(zero_nones(x) for x in c)
    return 0 if c is None else c


def _lift_slice(c, t, out: list):
    if isinstance(c, tuple):
        if not isinstance(t, tuple) or len(c) != len(t):
            raise DSLValueError(f"the coordinate {c} does not match the shape {t}", user_location(3))
        for ci, ti in zip(c, t):
            _lift_slice(ci, ti, out)
    elif c is None:
        out.append(t)


def slice_tuple(coord, t):
    """CuTe's slice: the parts of t under the None leaves of coord, one level of nesting removed."""
    if coord is None:
        return t
    if not isinstance(coord, tuple):
        return ()
    out: list = []
    _lift_slice(coord, t, out)
    return tuple(out)


def slice_layout(coord, layout):
    if isinstance(layout, ComposedLayout):
        raise DSLTypeError("slicing a swizzled layout: slice the tensor, or the layout's outer part",
                           user_location(2))
    return _core.make_layout(slice_tuple(coord, layout.shape), slice_tuple(coord, layout.stride))
