"""The picture of a layout, independent of the format it is written in: panels of cells on a grid.

A figure holds panels (a layout's grid; the source and destination of a tiled copy; the A, B and C tiles of a
tiled MMA), each placed at a (row, column) slot of the figure. A panel is a grid of cells; a cell holds the lines
of text it shows, its fill colour and what it stands for (the layout's value, or the thread and value that hold
it), so that the SVG and LaTeX writers and the tests read the same model.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Cell:
    lines: tuple[str, ...]
    fill: str
    # What the cell stands for: the layout's value (layout pictures), or the (thread, value) pairs that hold the
    # element, the first of them shown (thread-value pictures).
    value: object = None
    holders: tuple[tuple[int, int], ...] = ()


@dataclass
class Panel:
    title: str
    rows: int
    cols: int
    cells: dict = field(default_factory=dict)  # (row, col) -> Cell; a missing cell is drawn empty
    row_label: str = ""                          # the mode the rows walk (e.g. "m"), shown at the corner
    col_label: str = ""
    slot: tuple[int, int] = (0, 0)               # where the panel sits in the figure's arrangement
    # Periods of a nested mode's sub-modes, innermost first: rows of ((2,3),4) group by 2 (a line every 2 rows).
    row_periods: tuple[int, ...] = ()
    col_periods: tuple[int, ...] = ()

    def cell(self, r: int, c: int) -> Cell | None:
        return self.cells.get((r, c))


@dataclass
class Figure:
    title: str
    panels: list[Panel]
    kind: str  # "layout" or "tv": layouts show one line per cell, thread-value pictures two

    def cell_count(self) -> int:
        return sum(p.rows * p.cols for p in self.panels)
