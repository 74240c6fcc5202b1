"""A picture of a layout, a thread-value layout, a tiled copy or a tiled MMA: what `warpweave.viz.picture`
returns, shown by Jupyter (`_repr_svg_`) and written to .svg or .tex files."""
from __future__ import annotations

import os

from .._dsl.atoms.copy import ThrCopy, TiledCopy
from .._dsl.atoms.mma import MmaAtom, ThrMma, TiledMma
from .._dsl.base.errors import DSLError
from .copy_figure import tiled_copy_figure
from .errors import DEFAULT_MAX_CELLS, fail_type, fail_value
from .figure import Figure
from .latex_writer import to_latex
from .layout_figure import as_layout, layout_figure
from .mma_figure import tiled_mma_figure
from .svg_writer import to_svg
from .thread_highlight import highlight_thread
from .tv_figure import tv_figure


def figure_of(obj, tiler_mn=None, *, max_cells: int = DEFAULT_MAX_CELLS) -> Figure:
    """The figure of obj: a Layout, ComposedLayout or Tensor (its layout), a thread-value layout with the tile it
    maps into (tiler_mn given), a TiledCopy, a TiledMma or an MMA atom (a tiled MMA of one atom), or one thread's
    slice of a tiled copy or MMA (ThrCopy, ThrMma: that thread's elements highlighted)."""
    if isinstance(obj, Picture):
        return obj.figure
    if tiler_mn is not None:
        if isinstance(obj, (TiledCopy, TiledMma, MmaAtom)):
            fail_type(f"tiler_mn= is for thread-value layouts; a {type(obj).__name__} knows its tile")
        return tv_figure(as_layout(obj), tiler_mn, max_cells=max_cells)
    if isinstance(obj, (ThrCopy, ThrMma)):
        return highlight_thread(figure_of(obj.tiled, max_cells=max_cells), _static_int(obj.thr_idx))
    if isinstance(obj, TiledCopy):
        return tiled_copy_figure(obj, max_cells=max_cells)
    if isinstance(obj, TiledMma):
        return tiled_mma_figure(obj, max_cells=max_cells)
    if isinstance(obj, MmaAtom):
        return tiled_mma_figure(TiledMma(obj, (1, 1, 1)), max_cells=max_cells)
    return layout_figure(obj, max_cells=max_cells)


def _static_int(x):
    """A thread index as an int where it is one (a DSL Int32 of a known value too); else as it is."""
    if isinstance(x, int):
        return x
    if getattr(x, "is_static", False) and isinstance(x.value, int):
        return x.value
    return x


class Picture:
    """A figure with its writers: `.svg()`, `.latex()`, `.save(path)`; Jupyter shows it as SVG."""

    def __init__(self, figure: Figure):
        self.figure = figure

    def svg(self) -> str:
        return to_svg(self.figure)

    def latex(self) -> str:
        return to_latex(self.figure)

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        return f"<warpweave.viz picture of {self.figure.title}: {self.figure.cell_count()} cells>"

    def save(self, path) -> str:
        """Writes the picture to path: .svg as SVG, .tex as a LaTeX document; returns the path."""
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext == ".svg":
            text = self.svg()
        elif ext == ".tex":
            text = self.latex()
        else:
            fail_value(f"save: {path!r} names neither an .svg nor a .tex file")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path


# Jupyter shows a layout or tiled operation as a picture only when it is small; a larger one keeps its text form
# (the picture is then one call away, warpweave.viz.picture(x, max_cells=...)).
AUTO_MAX_CELLS = 4096


def repr_svg(obj):
    """The SVG that Jupyter shows for obj, or None (Jupyter then shows its text) when obj has no picture:
    dynamic, too large for a notebook cell, or of a kind that cannot be drawn."""
    try:
        return Picture(figure_of(obj, max_cells=AUTO_MAX_CELLS)).svg()
    except DSLError:
        return None
