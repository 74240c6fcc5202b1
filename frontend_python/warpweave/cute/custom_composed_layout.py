"""A composed layout whose inner transformation is a Python function (CuTe DSL's make_composed_layout with a
callable `inner`): R(c) = inner(offset + outer(c)).

The function runs where the layout is applied, while tracing: it may index a tensor (a gather through an index
tensor), compute with coordinates, or return a coordinate tuple. Shape and size are the outer layout's, so the
layout operations that act on the user-visible shape (size, rank, shape) see the outer layout.
"""
from __future__ import annotations

from .. import _core


def _add(a, b):
    """offset + outer(c): elementwise over (nested) coordinate tuples; an int broadcasts as 0 in missing modes."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        a = a if isinstance(a, tuple) else ((a,) if a != 0 else ())
        b = b if isinstance(b, tuple) else ((b,) if b != 0 else ())
        n = max(len(a), len(b))
        return tuple(_add(a[i] if i < len(a) else 0, b[i] if i < len(b) else 0) for i in range(n))
    return a + b


class CustomComposedLayout:
    """inner o offset o outer, with inner a Python function of one coordinate."""

    def __init__(self, inner, offset, outer):
        if not callable(inner):
            raise TypeError(f"make_composed_layout: inner must be a Swizzle, a Layout or a function, got "
                            f"{type(inner).__name__}")
        if not isinstance(outer, (_core.Layout, _core.ComposedLayout, CustomComposedLayout)):
            raise TypeError(f"make_composed_layout: outer must be a layout, got {type(outer).__name__}")
        self.inner = inner
        self.offset = offset
        self.outer = outer

    @property
    def shape(self):
        return self.outer.shape

    def __call__(self, coord):
        return self.inner(_add(self.offset, self.outer(coord)))

    def size(self):
        return _core.product(self.outer.shape)

    def __repr__(self):
        name = getattr(self.inner, "__name__", type(self.inner).__name__)
        return f"{name} o {self.offset} o {self.outer}"

    __str__ = __repr__
