"""warpweave.viz: pictures of layouts, thread-value layouts, tiled copies and tiled MMAs.

    import warpweave.viz as viz
    viz.picture(cute.make_layout((4, 8), stride=(8, 1)))           # a grid of layout(m, n); Jupyter shows it
    viz.picture(tv_layout, tiler_mn).save("tv.svg")                 # which thread holds which element
    viz.picture(tiled_mma).save("tiled_mma.tex")                          # A, B and C, a colour per thread
    viz.print_latex(layout); viz.print_latex_tv(tv_layout, tiler_mn)  # CuTe DSL's cutlass.utils names

Layouts, tensors, tiled copies and tiled MMAs also show as pictures in Jupyter by themselves (`_repr_svg_`) when
they are static and small (at most 4096 cells).
"""
from __future__ import annotations

import sys

from .._core import ComposedLayout, Layout
from .._dsl.atoms.copy import ThrCopy, TiledCopy
from .._dsl.atoms.mma import MmaAtom, ThrMma, TiledMma
from .errors import DEFAULT_MAX_CELLS, fail_type

# The figure model and its writers load at the first picture: warpweave.utils imports this package for its
# print_latex names, and most programs draw nothing (the SVG writer's xml.sax.saxutils alone brings urllib.request,
# email and tempfile).


def picture(obj, tiler_mn=None, *, max_cells: int = DEFAULT_MAX_CELLS):
    """The picture of a Layout / ComposedLayout / Tensor (cell (m, n) shows layout((m, n))), of a thread-value
    layout over its tile (tiler_mn given: each element shows the thread and value that hold it), of a TiledCopy
    (source and destination) or of a TiledMma / MMA atom (A, B and C)."""
    from . import drawing

    return drawing.Picture(drawing.figure_of(obj, tiler_mn, max_cells=max_cells))


def repr_svg(obj):
    """What Jupyter shows for obj: its SVG, or None (its text then) when it is dynamic, large or not drawable."""
    from . import drawing

    return drawing.repr_svg(obj)


def _repr_svg_(self):
    """Jupyter's picture of a static, small layout, thread-value layouts of a tiled copy or MMA, or one thread's
    share of them (warpweave.viz); None keeps the text form."""
    return repr_svg(self)


# The layouts and tiled operations sit below this package and know nothing of pictures; their Jupyter form is
# attached here, and `import warpweave` imports this package (through warpweave.utils) before any is shown.
for _drawable in (Layout, ComposedLayout, TiledCopy, ThrCopy, MmaAtom, TiledMma, ThrMma):
    _drawable._repr_svg_ = _repr_svg_


def __getattr__(name):
    if name in ("Picture", "AUTO_MAX_CELLS"):
        from . import drawing

        return getattr(drawing, name)
    raise AttributeError(f"module 'warpweave.viz' has no attribute {name!r}")


def svg(obj, tiler_mn=None, *, max_cells: int = DEFAULT_MAX_CELLS) -> str:
    return picture(obj, tiler_mn, max_cells=max_cells).svg()


def latex(obj, tiler_mn=None, *, max_cells: int = DEFAULT_MAX_CELLS) -> str:
    return picture(obj, tiler_mn, max_cells=max_cells).latex()


def save(obj, path, tiler_mn=None, *, max_cells: int = DEFAULT_MAX_CELLS) -> str:
    """Writes the picture of obj to path (.svg or .tex)."""
    return picture(obj, tiler_mn, max_cells=max_cells).save(path)


def print_latex(x, *, file=None) -> None:
    """Prints the LaTeX (TikZ) document of a layout's picture (CuTe's print_latex); also takes a tiled copy or
    tiled MMA."""
    print(latex(x), end="", file=file if file is not None else sys.stdout)


def print_latex_tv(layout_tv, tiler_mn, *, file=None) -> None:
    """Prints the LaTeX document of a thread-value layout over the tile tiler_mn (CuTe's print_latex_tv)."""
    if tiler_mn is None:
        fail_type("print_latex_tv(layout_tv, tiler_mn) needs the tile the layout maps into (make_layout_tv gives "
                  "both)")
    print(latex(layout_tv, tiler_mn), end="", file=file if file is not None else sys.stdout)


__all__ = ["picture", "svg", "latex", "save", "print_latex", "print_latex_tv", "Picture", "repr_svg",
           "DEFAULT_MAX_CELLS", "AUTO_MAX_CELLS"]
