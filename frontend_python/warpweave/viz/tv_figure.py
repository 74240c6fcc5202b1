"""The picture of a thread-value layout: which thread holds which element of a tile.

A thread-value layout maps (thread, value) to the column-major index of a tile (M, N). Its picture is the M x N
grid of the tile; the cell of element (m, n) names the thread T and its value V that hold it, coloured by the
thread, so that one thread's values show in one colour. Where several (thread, value) pairs hold one element
(broadcast, e.g. an MMA's A values that the threads along N share), the cell shows the first in (thread, value)
order and lists them all in its tooltip; an element that no thread holds stays empty.
"""
from __future__ import annotations

from .. import _core
from ..cute.layout import pretty_str
from . import palette
from .errors import DEFAULT_MAX_CELLS, check_cells, fail_type, fail_value
from .figure import Cell, Figure, Panel
from .layout_figure import is_static_layout, mode_sizes, static_size


def tile_shape(tiler, what: str) -> tuple[int, int]:
    """(M, N) of a tile given as a shape, a tiler (a tuple of ints and layouts) or a layout."""
    if isinstance(tiler, (_core.Layout, _core.ComposedLayout)):
        modes = mode_sizes(tiler)
    elif isinstance(tiler, int):
        modes = [tiler]
    elif isinstance(tiler, tuple):
        modes = []
        for t in tiler:
            if isinstance(t, _core.Layout):
                modes.append(static_size(t.size(), f"the tiler {tiler} of {what}"))
            elif isinstance(t, (int, tuple)):
                modes.append(static_size(t, f"the tiler {tiler} of {what}"))
            else:
                fail_type(f"the tiler of {what} holds a {type(t).__name__}; expected ints, shapes or layouts")
    else:
        fail_type(f"the tile of {what} is a shape or tiler (e.g. (16, 8) or the tiler_mn of make_layout_tv); got "
                  f"{type(tiler).__name__}")
    if not 1 <= len(modes) <= 2:
        fail_value(f"the tile {tiler} of {what} has {len(modes)} modes; a thread-value picture draws tiles of one "
                   "or two modes (M, N)")
    return (modes[0], modes[1] if len(modes) == 2 else 1)


def tv_panel(layout_tv, tile_mn: tuple[int, int], title: str, *, transpose: bool = False, row_label: str = "m",
             col_label: str = "n", slot=(0, 0), max_cells: int = DEFAULT_MAX_CELLS) -> Panel:
    """The panel of one thread-value layout over the (M, N) tile; transpose draws element (m, n) at row n,
    column m (an MMA's B tile, (N, K), drawn K x N above C)."""
    if not isinstance(layout_tv, (_core.Layout, _core.ComposedLayout)):
        fail_type(f"a thread-value layout is a Layout (thread, value) -> index; got {type(layout_tv).__name__}")
    if not is_static_layout(layout_tv):
        fail_value(f"the thread-value layout {layout_tv} is not static; pictures need static layouts")
    sizes = mode_sizes(layout_tv)
    if len(sizes) != 2:
        fail_value(f"a thread-value layout has two modes (thread, value); {layout_tv} has {len(sizes)}")
    threads, values = sizes
    M, N = tile_shape(tile_mn, f"the thread-value layout {layout_tv}")
    check_cells(f"the thread-value layout {layout_tv}", M * N, max_cells)
    holders: dict[int, list[tuple[int, int]]] = {}  # tile index -> the (thread, value) pairs holding it
    for t in range(threads):
        for v in range(values):
            idx = layout_tv((t, v))
            if not isinstance(idx, int) or not 0 <= idx < M * N:
                fail_value(f"the thread-value layout {layout_tv} maps thread {t}, value {v} to {idx}, outside the "
                           f"{M}x{N} tile (its indices are 0..{M * N - 1}, column-major)")
            holders.setdefault(idx, []).append((t, v))
    # An operand every thread sees whole (its thread mode has stride 0: shared memory that a warpgroup's MMA reads
    # through a descriptor, say) names no owner: its cells show the value index alone, in one colour.
    everyone = threads > 1 and all(len(hs) == threads for hs in holders.values())
    cells = {}
    for idx, hs in holders.items():
        m, n = idx % M, idx // M
        t, v = hs[0]
        lines, fill = ((f"V{v}",), palette.SHARED) if everyone else ((f"T{t}", f"V{v}"), palette.thread_color(t))
        cells[(n, m) if transpose else (m, n)] = Cell(lines, fill, value=idx, holders=tuple(hs))
    if everyone:
        title = f"{title} (all {threads} threads)" if title else f"all {threads} threads"
    rows, cols = (N, M) if transpose else (M, N)
    return Panel(title, rows, cols, cells, row_label=row_label, col_label=col_label, slot=slot)


def tv_figure(layout_tv, tile_mn, *, max_cells: int = DEFAULT_MAX_CELLS) -> Figure:
    panel = tv_panel(layout_tv, tile_mn, "", max_cells=max_cells)
    return Figure(f"{layout_tv} over {_tile_text(tile_mn)}", [panel], "tv")


def _tile_text(tile_mn) -> str:
    return pretty_str(tile_mn)
