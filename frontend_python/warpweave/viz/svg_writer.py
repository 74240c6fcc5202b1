"""A figure as an SVG document (what Jupyter shows through _repr_svg_, and warpweave.viz writes to .svg files).

Each cell is a group `<g class="cell">` holding its rectangle and text, with data- attributes saying what it stands
for (row, column, the layout's value or the holding thread and value), so that programs and tests can read a
picture back; a cell several (thread, value) pairs hold lists them in its tooltip (<title>).
"""
from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from .figure import Figure
from .placement import INDEX_H, place


# A tooltip lists this many holders of a cell, then their count: an operand all 128 threads of a warpgroup see
# would otherwise list 128 pairs in each of its cells.
_TOOLTIP_HOLDERS = 8


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def to_svg(figure: Figure) -> str:
    pl = place(figure)
    w, h = pl.width, pl.height
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(w)}" height="{_f(h)}" '
           f'viewBox="0 0 {_f(w)} {_f(h)}" font-family="monospace" font-size="11">',
           f'<rect class="background" x="0" y="0" width="{_f(w)}" height="{_f(h)}" fill="#ffffff"/>']
    if figure.title:
        out.append(f'<text class="title" x="10" y="24" font-size="13">{escape(figure.title)}</text>')
    cw, ch = pl.cell_w, pl.cell_h
    for pp in pl.panels:
        p = pp.panel
        out.append(f'<g class="panel" data-title={quoteattr(p.title)} data-rows="{p.rows}" data-cols="{p.cols}">')
        if p.title:
            out.append(f'<text class="panel-title" x="{_f(pp.x)}" y="{_f(pp.y - INDEX_H - 5)}" '
                       f'font-size="12" font-weight="bold">{escape(p.title)}</text>')
        corner = (p.row_label + "\\" + p.col_label) if p.row_label else ""
        if corner:
            out.append(f'<text class="axes" x="{_f(pp.x - 3)}" y="{_f(pp.y - 3)}" text-anchor="end" '
                       f'fill="#777777">{escape(corner)}</text>')
        for c in range(p.cols):
            out.append(f'<text class="col-index" x="{_f(pp.x + (c + 0.5) * cw)}" y="{_f(pp.y - 3)}" '
                       f'text-anchor="middle" fill="#555555">{c}</text>')
        for r in range(p.rows):
            out.append(f'<text class="row-index" x="{_f(pp.x - 4)}" y="{_f(pp.y + (r + 0.5) * ch + 4)}" '
                       f'text-anchor="end" fill="#555555">{r}</text>')
        for r in range(p.rows):
            for c in range(p.cols):
                x, y = pp.x + c * cw, pp.y + r * ch
                cell = p.cell(r, c)
                attrs = f'data-row="{r}" data-col="{c}"'
                if cell is None:
                    out.append(f'<g class="cell" {attrs}><rect x="{_f(x)}" y="{_f(y)}" width="{_f(cw)}" '
                               f'height="{_f(ch)}" fill="#ffffff" stroke="#bbbbbb" stroke-width="0.5"/></g>')
                    continue
                if cell.holders:
                    t, v = cell.holders[0]
                    attrs += f' data-thread="{t}" data-value="{v}" data-index="{cell.value}"'
                else:
                    attrs += f" data-value={quoteattr(str(cell.value))}"
                parts = [f'<g class="cell" {attrs}>']
                if len(cell.holders) > 1:
                    attrs_n = len(cell.holders)
                    parts[0] = parts[0][:-1] + f' data-holders="{attrs_n}">'
                    shown = ", ".join(f"T{t} V{v}" for t, v in cell.holders[:_TOOLTIP_HOLDERS])
                    more = f", ... ({attrs_n} in all)" if attrs_n > _TOOLTIP_HOLDERS else ""
                    parts.append("<title>" + escape(shown + more) + "</title>")
                parts.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(cw)}" height="{_f(ch)}" fill="{cell.fill}" '
                             'stroke="#444444" stroke-width="0.5"/>')
                n = len(cell.lines)
                if n:
                    top = y + ch / 2 - 7 * (n - 1) + 4
                    parts.append(f'<text x="{_f(x + cw / 2)}" y="{_f(top)}" text-anchor="middle">')
                    for i, line in enumerate(cell.lines):
                        parts.append(f'<tspan x="{_f(x + cw / 2)}" y="{_f(top + 14 * i)}">{escape(line)}</tspan>')
                    parts.append("</text>")
                parts.append("</g>")
                out.append("".join(parts))
        # Lines where a nested mode carries into its next sub-mode, heavier for outer sub-modes.
        for depth, period in enumerate(p.row_periods):
            for r in range(period, p.rows, period):
                y = pp.y + r * ch
                out.append(f'<line class="mode-boundary" x1="{_f(pp.x)}" y1="{_f(y)}" x2="{_f(pp.x + p.cols * cw)}" '
                           f'y2="{_f(y)}" stroke="#000000" stroke-width="{0.9 + 0.5 * depth}"/>')
        for depth, period in enumerate(p.col_periods):
            for c in range(period, p.cols, period):
                x = pp.x + c * cw
                out.append(f'<line class="mode-boundary" x1="{_f(x)}" y1="{_f(pp.y)}" x2="{_f(x)}" '
                           f'y2="{_f(pp.y + p.rows * ch)}" stroke="#000000" stroke-width="{0.9 + 0.5 * depth}"/>')
        out.append(f'<rect class="frame" x="{_f(pp.x)}" y="{_f(pp.y)}" width="{_f(p.cols * cw)}" '
                   f'height="{_f(p.rows * ch)}" fill="none" stroke="#000000" stroke-width="1.2"/>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"

