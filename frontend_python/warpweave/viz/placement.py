"""Where a figure's parts go on the page, in pixels: the SVG and LaTeX writers draw from the same placement.

Every cell of a figure has one size, wide enough for its longest text. Each panel has its title above, its column
indices above the grid and its row indices to the left. Panels sit in the slots of a grid of their own; a slot
column is as wide as its widest panel, a slot row as tall as its tallest.
"""
from __future__ import annotations

from dataclasses import dataclass

from .figure import Figure, Panel

CHAR_W = 7.0      # advance of one character of the cells' 11 px monospace font
MARGIN = 10.0
GAP = 24.0        # between panels
TITLE_H = 22.0    # the figure's title line
PANEL_TITLE_H = 18.0
INDEX_H = 14.0    # the column indices above a grid


@dataclass
class PanelPlace:
    panel: Panel
    x: float        # the grid's top-left corner
    y: float
    index_w: float  # width of the row indices left of the grid

    def cell_xy(self, r: int, c: int, place: "Placement") -> tuple[float, float]:
        return self.x + c * place.cell_w, self.y + r * place.cell_h


@dataclass
class Placement:
    width: float
    height: float
    cell_w: float
    cell_h: float
    panels: list[PanelPlace]


def _text_len(figure: Figure) -> int:
    longest = 1
    for p in figure.panels:
        for cell in p.cells.values():
            for line in cell.lines:
                longest = max(longest, len(line))
    return longest


def place(figure: Figure) -> Placement:
    lines = 2 if figure.kind == "tv" else 1
    cell_w = max(22.0, CHAR_W * _text_len(figure) + 8.0)
    cell_h = 14.0 * lines + 6.0
    sizes = {}
    for p in figure.panels:
        index_w = CHAR_W * len(str(max(p.rows - 1, 0))) + 8.0
        w = index_w + p.cols * cell_w
        h = (PANEL_TITLE_H if p.title else 0.0) + INDEX_H + p.rows * cell_h
        sizes[id(p)] = (index_w, w, h)
    slot_rows = max(p.slot[0] for p in figure.panels) + 1
    slot_cols = max(p.slot[1] for p in figure.panels) + 1
    col_w = [0.0] * slot_cols
    row_h = [0.0] * slot_rows
    for p in figure.panels:
        _, w, h = sizes[id(p)]
        col_w[p.slot[1]] = max(col_w[p.slot[1]], w)
        row_h[p.slot[0]] = max(row_h[p.slot[0]], h)
    top = MARGIN + (TITLE_H if figure.title else 0.0)
    xs = [MARGIN + sum(col_w[:i]) + GAP * i for i in range(slot_cols)]
    ys = [top + sum(row_h[:i]) + GAP * i for i in range(slot_rows)]
    places = []
    for p in figure.panels:
        index_w, w, h = sizes[id(p)]
        r, c = p.slot
        # Right- and bottom-aligned in its slot, so that an MMA's A and B line up with C's rows and columns.
        x = xs[c] + (col_w[c] - w) + index_w
        y = ys[r] + (row_h[r] - h) + (PANEL_TITLE_H if p.title else 0.0) + INDEX_H
        places.append(PanelPlace(p, x, y, index_w))
    width = max(MARGIN * 2 + sum(col_w) + GAP * (slot_cols - 1), CHAR_W * 1.2 * len(figure.title) + 2 * MARGIN)
    height = top + sum(row_h) + GAP * (slot_rows - 1) + MARGIN
    return Placement(width, height, cell_w, cell_h, places)
