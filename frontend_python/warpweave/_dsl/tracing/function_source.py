"""The source lines of a function, as inspect.getsourcelines finds them, without tokenizing its body.

inspect finds where a function ends by running Python's tokenizer over it (a GEMM kernel of ~550 lines: ~10 ms of
a process's first compile). The code object already knows the last line its instructions come from; the lines
after it that are blank or indented deeper than the `def` (an `else: pass`, a trailing comment) complete the block.
Statements past the last instruction generate no code, so the text parses to what the whole block would mean; a
text that does not parse (a string spanning the cut) is read by inspect instead."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap


def _last_line(code) -> int:
    """The last source line of any instruction of `code` or of the code nested in it."""
    last = code.co_firstlineno
    for start, end, _, _ in code.co_positions():
        line = end if end is not None else start
        if line is not None and line > last:
            last = line
    for const in code.co_consts:
        if hasattr(const, "co_positions"):
            last = max(last, _last_line(const))
    return last


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def source_tree(fn) -> tuple[ast.Module, str]:
    """The function's definition parsed (its nodes at the file's line numbers, decorators included) and its file.
    Raises OSError or TypeError as inspect.getsourcelines does when the source is not to be had."""
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    code = fn.__code__
    first = code.co_firstlineno
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, fn.__globals__)
    if 0 < first <= len(lines):  # first: the first decorator's line, or the def's
        end = min(_last_line(code), len(lines))
        col = _indent(lines[first - 1])
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > col):
            end += 1
        try:
            text = "\n" * (first - 1) + textwrap.dedent("".join(lines[first - 1:end]))
            return ast.parse(text), filename
        except SyntaxError:
            pass
    lines, first = inspect.getsourcelines(fn)
    return ast.parse("\n" * (first - 1) + textwrap.dedent("".join(lines))), filename
