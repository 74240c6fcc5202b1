"""The picture of a tiled copy: its source and destination thread-value layouts over the copy's tile, side by
side (S left, D right), each element coloured by the thread that reads (S) or writes (D) it."""
from __future__ import annotations

from .errors import DEFAULT_MAX_CELLS
from .figure import Figure
from .tv_figure import tile_shape, tv_panel


def tiled_copy_figure(tiled_copy, *, max_cells: int = DEFAULT_MAX_CELLS) -> Figure:
    tile = tile_shape(tiled_copy.tiler_mn, "the tiled copy")
    src = tv_panel(tiled_copy.get_layoutS_TV(), tile, "S (source)", slot=(0, 0), max_cells=max_cells)
    dst = tv_panel(tiled_copy.get_layoutD_TV(), tile, "D (destination)", slot=(0, 1), max_cells=max_cells)
    return Figure(f"{tiled_copy.atom} over {tile[0]}x{tile[1]}, {tiled_copy.size} threads", [src, dst], "tv")
