"""cute.leading_dim(shape, stride): where a shape's unit stride is, as CuTe DSL answers it.

The strides are walked depth first (an integer stride is a one-mode tuple); the first leaf that is a static 1 whose
extent in the shape is not a static 1 gives the answer: its mode index for a top-level mode, its path of indices
for a nested one, and None when no leaf qualifies. A dynamic value (a runtime integer, a DSL number even of a known
value) is never "1": a dynamic stride is not unit, a dynamic extent is not unit. The extent is looked up along the
stride's path only for unit-stride leaves, so a shape with fewer modes than the stride is refused only where such a
leaf has no mode in the shape (an integer extent is rank 1 and stands for the whole of what lies below it).
"""
from __future__ import annotations

import numbers

from .._dsl.base.errors import DSLValueError, user_location


def _static_one(x) -> bool:
    # DSL numbers and runtime integers are not numbers.Number, so `== 1` is never asked of them (it would trace)
    return isinstance(x, numbers.Number) and x == 1


def _unit_leaves(stride, path=()):
    """(path, leaf) of each unit-stride leaf, depth first."""
    for i, s in enumerate(stride):
        if isinstance(s, tuple):
            yield from _unit_leaves(s, path + (i,))
        elif _static_one(s):
            yield path + (i,), s


def _extent_at(shape, stride, path):
    sub = shape
    for k, i in enumerate(path):
        rank = len(sub) if isinstance(sub, tuple) else 1
        if i >= rank:
            raise DSLValueError(f"leading_dim: the stride {stride} has a unit stride at mode {list(path)}, which the "
                                f"shape {shape} lacks (mode {i} of {sub}, of rank {rank})", user_location(3))
        if not isinstance(sub, tuple):
            return sub
        sub = sub[i]
    return sub


def leading_dim(shape, stride):
    """The leading dimension of a shape and stride: the index of the first mode with stride 1 (and extent other than
    1), a tuple of indices where that mode is nested, or None where there is none."""
    strides = stride if isinstance(stride, tuple) else (stride,)
    for path, _ in _unit_leaves(strides):
        if not _static_one(_extent_at(shape, stride, path)):
            return path[0] if len(path) == 1 else path
    return None
