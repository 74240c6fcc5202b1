"""The picture of a layout: a grid of its coordinates, each cell showing the layout's value there.

A rank-2 layout (M, N) is an M x N grid: row m, column n shows layout((m, n)), where m and n are the 1-D
coordinates of the (possibly nested) modes, so that cell (m, n) is also layout(m + M * n). A rank-1 layout is a
column (M x 1), as CuTe draws it. A layout of rank 3 or more is drawn as one M x N panel per coordinate of the
modes after the second (their 1-D index, the modes grouped), side by side.
"""
from __future__ import annotations

from .. import _core
from .._dsl.values.runtime import RuntimeTensor
from .._dsl.values.tensor import CoordIterator
from ..cute.layout import is_static, pretty_str
from . import palette
from .errors import DEFAULT_MAX_CELLS, check_cells, fail_type, fail_value
from .figure import Cell, Figure, Panel

_PANELS_PER_ROW = 4


def as_layout(obj, what: str = ""):
    """The layout of a Layout, ComposedLayout or Tensor."""
    if isinstance(obj, (_core.Layout, _core.ComposedLayout)):
        return obj
    inner = getattr(obj, "layout", None)
    if isinstance(inner, (_core.Layout, _core.ComposedLayout)):
        return inner
    if isinstance(obj, RuntimeTensor):  # a host tensor (from_dlpack, a fake tensor): its shape and strides
        if any(obj.dynamic_shape) or any(obj.dynamic_stride):
            fail_value(f"the tensor {obj} has dynamic extents or strides (mark_layout_dynamic); pictures need "
                       "static layouts: draw the tensor before marking it")
        return _core.make_layout(tuple(obj.shape), tuple(obj.stride))
    fail_type(f"{what}cannot draw a {type(obj).__name__}: it draws layouts, tensors, thread-value layouts (with "
              "their tile), tiled copies, tiled MMAs and MMA atoms")


def outer_layout(layout):
    return layout.outer if isinstance(layout, _core.ComposedLayout) else layout


def static_size(x, what: str) -> int:
    n = _core.product(x) if isinstance(x, tuple) else x
    if not isinstance(n, int):
        fail_value(f"{what} has the dynamic extent {x}; pictures need static shapes")
    return n


def is_static_layout(layout) -> bool:
    if isinstance(layout, _core.ComposedLayout):
        return layout.outer.is_static() and isinstance(layout.offset, int)
    return layout.is_static()


def mode_sizes(layout) -> list[int]:
    """The 1-D extent of each top-level mode."""
    shape = outer_layout(layout).shape
    modes = shape if isinstance(shape, tuple) else (shape,)
    return [static_size(m, f"the layout {layout}") for m in modes]


def _coordinate_iterator(obj):
    """The iterator of a coordinate (identity) tensor, whose elements are its base + layout(c); else None."""
    it = getattr(obj, "iterator", None)
    return it if isinstance(it, CoordIterator) else None


def sub_mode_periods(mode_shape) -> tuple[int, ...]:
    """The extents after which a nested mode's coordinate carries into its next sub-mode: (2, 3) -> (2,),
    (2, (3, 2)) -> (2, 6); a flat mode has none."""
    leaves = _core.tuple_flatten(mode_shape) if isinstance(mode_shape, tuple) else (mode_shape,)
    leaves = leaves if isinstance(leaves, tuple) else (leaves,)
    out, p = [], 1
    for leaf in leaves[:-1]:
        p *= leaf
        if 1 < p and (not out or out[-1] != p):
            out.append(p)
    return tuple(out)


def layout_figure(obj, *, max_cells: int = DEFAULT_MAX_CELLS) -> Figure:
    """A layout's picture; a coordinate tensor (e.g. a tile of make_identity_tensor) shows its coordinates."""
    layout = as_layout(obj)
    coords = _coordinate_iterator(obj)
    base = None if coords is None else coords.base
    if base is not None and not is_static(base):
        fail_value(f"the coordinate tensor {obj} starts at the dynamic coordinate {base}; pictures need static "
                   "coordinates")
    if not is_static_layout(layout):
        fail_value(f"the layout {layout} has dynamic shapes or strides; pictures need a static layout (draw the "
                   "layout a kernel builds from static values, or a fake tensor's static layout)")
    sizes = mode_sizes(layout)
    rank = len(sizes)
    M = sizes[0]
    N = sizes[1] if rank >= 2 else 1
    K = 1
    for s in sizes[2:]:
        K *= s
    check_cells(f"the layout {layout}", M * N * K, max_cells)
    rest_shape = tuple(outer_layout(layout).shape[2:]) if rank >= 3 else ()

    def value_at(m, n, k):
        if rank == 1:
            return layout(m)
        if rank == 2:
            return layout((m, n))
        # The rest modes' coordinate from their 1-D index k, as the layout reads a grouped mode.
        rest = _core.idx2crd(k, rest_shape)
        return layout((m, n) + tuple(rest))

    panels = []
    for k in range(K):
        cells = {}
        for n in range(N):
            for m in range(M):
                v = value_at(m, n, k)
                if coords is not None:
                    v = (coords + v).base
                cells[(m, n)] = Cell((pretty_str(v),), palette.value_color(v), value=v)
        title = "" if K == 1 else _slice_title(rank, _core.idx2crd(k, rest_shape) if rank > 3 else k)
        shape = outer_layout(layout).shape
        modes = shape if isinstance(shape, tuple) else (shape,)
        panels.append(Panel(title, M, N, cells, slot=(k // _PANELS_PER_ROW, k % _PANELS_PER_ROW),
                            row_periods=sub_mode_periods(modes[0]),
                            col_periods=sub_mode_periods(modes[1]) if rank >= 2 else ()))
    title = str(layout) if base is None else f"coordinates {pretty_str(base)} + {layout}"
    return Figure(title, panels, "layout")


def _slice_title(rank, rest_coord) -> str:
    rest = rest_coord if isinstance(rest_coord, tuple) else (rest_coord,)
    return "(_,_," + ",".join(pretty_str(c) for c in rest) + ")"
