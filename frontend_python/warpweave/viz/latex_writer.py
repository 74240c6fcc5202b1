"""A figure as a standalone LaTeX (TikZ) document, what print_latex writes: `pdflatex` turns it into a PDF.

It draws the same placement as the SVG (one pixel is 1/40 cm), cells filled with the same colours.
"""
from __future__ import annotations

from .figure import Figure
from .placement import INDEX_H, place

_CM_PER_PX = 1.0 / 40.0
_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#", "%": r"\%",
            "_": r"\_", "^": r"\^{}", "~": r"\~{}"}


def _tex(text: str) -> str:
    return "".join(_SPECIAL.get(ch, ch) for ch in text)


def _c(x: float) -> str:
    return f"{x * _CM_PER_PX:.3f}".rstrip("0").rstrip(".")


def to_latex(figure: Figure) -> str:
    pl = place(figure)
    colors: dict[str, str] = {}
    for p in figure.panels:
        for cell in p.cells.values():
            colors.setdefault(cell.fill, f"ww{len(colors)}")
    out = [f"% warpweave.viz: {_tex(figure.title)}",
           r"\documentclass[tikz,border=2mm]{standalone}",
           r"\begin{document}"]
    out += [rf"\definecolor{{{name}}}{{HTML}}{{{fill[1:].upper()}}}" for fill, name in colors.items()]
    out.append(r"\begin{tikzpicture}[x=1cm,y=-1cm,every node/.style={inner sep=0pt,font=\ttfamily\scriptsize}]")
    if figure.title:
        out.append(rf"\node[anchor=south west,font=\ttfamily\small] at ({_c(10)},{_c(28)}) {{{_tex(figure.title)}}};")
    cw, ch = pl.cell_w, pl.cell_h
    for pp in pl.panels:
        p = pp.panel
        if p.title:
            out.append(rf"\node[anchor=south west,font=\ttfamily\bfseries\small] at ({_c(pp.x)},{_c(pp.y - INDEX_H - 2)})"
                       rf" {{{_tex(p.title)}}};")
        for c in range(p.cols):
            out.append(rf"\node[anchor=south] at ({_c(pp.x + (c + 0.5) * cw)},{_c(pp.y - 2)}) {{{c}}};")
        for r in range(p.rows):
            out.append(rf"\node[anchor=east] at ({_c(pp.x - 3)},{_c(pp.y + (r + 0.5) * ch)}) {{{r}}};")
        for (r, c), cell in sorted(p.cells.items()):
            x, y = pp.x + c * cw, pp.y + r * ch
            out.append(rf"\filldraw[fill={colors[cell.fill]},draw=black!70,line width=0.2pt] ({_c(x)},{_c(y)}) "
                       rf"rectangle ({_c(x + cw)},{_c(y + ch)});")
            if cell.lines:
                text = r"\\".join(_tex(line) for line in cell.lines)
                out.append(rf"\node[align=center] at ({_c(x + cw / 2)},{_c(y + ch / 2)}) {{{text}}};")
        for (r, c) in ((r, c) for r in range(p.rows) for c in range(p.cols) if (r, c) not in p.cells):
            x, y = pp.x + c * cw, pp.y + r * ch
            out.append(rf"\draw[draw=black!25,line width=0.2pt] ({_c(x)},{_c(y)}) rectangle ({_c(x + cw)},{_c(y + ch)});")
        for depth, period in enumerate(p.row_periods):
            for r in range(period, p.rows, period):
                out.append(rf"\draw[line width={0.4 + 0.2 * depth:.1f}pt] ({_c(pp.x)},{_c(pp.y + r * ch)}) -- "
                           rf"({_c(pp.x + p.cols * cw)},{_c(pp.y + r * ch)});")
        for depth, period in enumerate(p.col_periods):
            for c in range(period, p.cols, period):
                out.append(rf"\draw[line width={0.4 + 0.2 * depth:.1f}pt] ({_c(pp.x + c * cw)},{_c(pp.y)}) -- "
                           rf"({_c(pp.x + c * cw)},{_c(pp.y + p.rows * ch)});")
        out.append(rf"\draw[line width=0.6pt] ({_c(pp.x)},{_c(pp.y)}) rectangle ({_c(pp.x + p.cols * cw)},"
                   rf"{_c(pp.y + p.rows * ch)});")
    out += [r"\end{tikzpicture}", r"\end{document}"]
    return "\n".join(out) + "\n"
