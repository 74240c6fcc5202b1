"""The picture of a tiled MMA: its A (M x K), B (drawn K x N) and C (M x N) tiles, each element coloured by the
thread that holds it, arranged as the product reads: B above C, A left of C (as CuTe draws a tiled MMA)."""
from __future__ import annotations

from .errors import DEFAULT_MAX_CELLS
from .figure import Figure
from .tv_figure import tv_panel


def tiled_mma_figure(tiled_mma, *, max_cells: int = DEFAULT_MAX_CELLS) -> Figure:
    M, N, K = (tiled_mma.tile_size(i) for i in range(3))
    a = tv_panel(tiled_mma.get_layoutA_TV(), (M, K), "A", row_label="m", col_label="k", slot=(1, 0),
                 max_cells=max_cells)
    b = tv_panel(tiled_mma.get_layoutB_TV(), (N, K), "B", transpose=True, row_label="k", col_label="n",
                 slot=(0, 1), max_cells=max_cells)
    c = tv_panel(tiled_mma.get_layoutC_TV(), (M, N), "C", row_label="m", col_label="n", slot=(1, 1),
                 max_cells=max_cells)
    return Figure(f"{tiled_mma.atom}, {tiled_mma.size} threads, tile {M}x{N}x{K}", [a, b, c], "tv")
