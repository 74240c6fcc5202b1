"""Choosing and padding the modes of tuples and layouts: cute.dice (the modes a coordinate fixes, the complement
of slicing), cute.append_ones and cute.prepend_ones (unit modes up to a rank)."""
from __future__ import annotations

from .. import _core
from .._dsl.values.tensor import full_layout
from .layout import append, prepend


def _dice_tuple(coord, t):
    if isinstance(coord, tuple):
        if not isinstance(t, tuple) or len(t) != len(coord):
            raise ValueError(f"dice: the coordinate {coord} does not match the modes of {t}")
        out = ()
        for c, x in zip(coord, t):
            if isinstance(c, tuple):
                out += _dice_tuple(c, x)   # a nested coordinate's kept modes join this level (CuTe's tuple_cat)
            elif c is not None:
                out += (x,)                # a fixed mode is kept whole
        return out
    return () if coord is None else t


def dice(src, dicer):
    """The modes of src where dicer holds an integer (CuTe's dice; None drops a mode, as slicing keeps exactly
    those): dice((M, N, K), (1, None, 1)) is (M, K). The modes kept inside a nested coordinate are modes of the
    result: dice((M, (N, K)), (1, (1, None))) is (M, N). A layout is diced in its shape and stride."""
    if isinstance(src, (_core.Layout,)):
        shape, stride = _dice_tuple(dicer, src.shape), _dice_tuple(dicer, src.stride)
        return _core.make_layout(shape, stride=stride)
    if hasattr(src, "layout") and hasattr(src, "_ww_with_layout"):
        return src._ww_with_layout(dice(getattr(src, "_ww_algebra_layout", full_layout(src)), dicer))
    if isinstance(src, (int, tuple)) or hasattr(src, "__ww_int__"):
        return _dice_tuple(dicer, src)
    raise TypeError(f"dice: expected a tuple, a layout or a tensor, got {type(src).__name__}")


def _unit_modes(src, up_to_rank, where):
    if up_to_rank is not None and (not isinstance(up_to_rank, int) or isinstance(up_to_rank, bool)
                                   or up_to_rank < 0):
        raise ValueError(f"{where}: up_to_rank must be a non-negative integer, got {up_to_rank!r}")
    tuple_like = isinstance(src, (int, tuple)) or hasattr(src, "__ww_int__")
    one = 1 if tuple_like else _core.make_layout(1, stride=0)
    if up_to_rank is None:  # one unit mode
        return (append if where == "append_ones" else prepend)(src, one)
    return (append if where == "append_ones" else prepend)(src, one, up_to_rank=up_to_rank)


def append_ones(t, up_to_rank: int | None = None):
    """t with modes of extent 1 (stride 0 for a layout or tensor) appended until it has up_to_rank modes (one
    mode when up_to_rank is None)."""
    return _unit_modes(t, up_to_rank, "append_ones")


def prepend_ones(t, up_to_rank: int | None = None):
    """t with modes of extent 1 (stride 0) put in front until it has up_to_rank modes (one when None)."""
    return _unit_modes(t, up_to_rank, "prepend_ones")
