"""One thread's part of a tiled copy or tiled MMA (a ThrCopy or ThrMma, from get_slice(t)): the tiled operation's
picture with the elements that thread holds in its colour, naming its value index, and every other element grey.
"""
from __future__ import annotations

from dataclasses import replace

from . import palette
from .errors import fail_type
from .figure import Figure

_OTHERS = "#eeeeee"


def highlight_thread(figure: Figure, thread) -> Figure:
    if not isinstance(thread, int) or isinstance(thread, bool):
        fail_type(f"the picture of one thread's part needs a static thread index, got {thread!r} (a slice made "
                  "inside a kernel holds the running thread's index)")
    panels = []
    for p in figure.panels:
        cells = {}
        for rc, cell in p.cells.items():
            mine = [(t, v) for t, v in cell.holders if t == thread]
            if mine:
                t, v = mine[0]
                cells[rc] = replace(cell, lines=(f"T{t}", f"V{v}"), fill=palette.thread_color(t),
                                    holders=tuple(mine) + tuple(h for h in cell.holders if h[0] != thread))
            else:
                cells[rc] = replace(cell, lines=(), fill=_OTHERS)
        panels.append(replace(p, cells=cells))
    return Figure(f"thread {thread} of {figure.title}", panels, figure.kind)
