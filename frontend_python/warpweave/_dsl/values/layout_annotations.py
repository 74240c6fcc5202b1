"""The layout algebra's annotation names (cute.Shape, Stride, Coord, IntTuple, Tile, Tiler, XTuple), spelled as
CuTe DSL spells them: typing Unions of an integer and a tuple of themselves (by name, a forward reference).

They are more than names to a jit function. A Python number passed to a @cute.jit function is a runtime value (a
DSL number read at each call), also inside a tuple or list; a parameter annotated with one of these names takes
Python numbers, at any depth of its tuples, as compile-time values instead (DSL numbers and tensors stay runtime).
CuTe DSL decides this from the annotation's form, not its identity: a Union that has as a member a tuple of one
of the names Shape, IntTuple, Stride, Coord or Tile. So `Optional[cute.Shape]` and `Tiler` (whose Union holds
`Tuple["Shape", ...]`) compile their numbers in, while `Tuple[cute.Shape, ...]`, `tuple`, `Tuple[int, int]`,
`XTuple` and a look-alike Union over a name of the program's own leave them runtime.
"""
from __future__ import annotations

import ast
import types
import typing
from typing import Any, Tuple, Union

from ... import _core
from .numeric import Integer

# The names whose tuple, as a member of a Union, makes the annotation one of the layout algebra's.
_COMPILED_IN_NAMES = frozenset({"Shape", "IntTuple", "Stride", "Coord", "Tile"})
# The cute names that are such Unions, for annotations written as text (`from __future__ import annotations`).
_ANNOTATION_NAMES = _COMPILED_IN_NAMES | {"Tiler"}

Shape = Union[int, Integer, Tuple["Shape", ...]]
IntTuple = Union[int, Integer, Tuple["IntTuple", ...]]
Coord = Union[int, Integer, None, Tuple["Coord", ...]]
Stride = Union[int, Integer, "ScaledBasis", Tuple["Stride", ...]]
Tile = Union[int, Integer, None, _core.Layout, Tuple["Tile", ...]]
Tiler = Union[int, Integer, Tuple["Shape", ...], _core.Layout, None, Tuple["Tile", ...]]
XTuple = Union[Any, Tuple["XTuple", ...]]  # a tuple of anything, of any nesting: its numbers stay runtime


def _names_compiled_in(x) -> bool:
    """Whether x, an argument of a tuple type, names one of the Unions (a forward reference, or its text)."""
    name = x.__forward_arg__ if isinstance(x, typing.ForwardRef) else x if isinstance(x, str) else None
    return name in _COMPILED_IN_NAMES


def _text_compiles_numbers_in(node) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _ANNOTATION_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in _ANNOTATION_NAMES
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # `cute.Shape | None`
        return _text_compiles_numbers_in(node.left) or _text_compiles_numbers_in(node.right)
    if isinstance(node, ast.Subscript):  # Optional[...] and Union[...]: a member of the Union
        head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
        if head in ("Optional", "Union"):
            members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return any(_text_compiles_numbers_in(m) for m in members)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return compiles_numbers_in(node.value)
    return False


def compiles_numbers_in(annotation) -> bool:
    """Whether a parameter so annotated takes Python numbers as compile-time values (see the module's text); an
    annotation written as text is read by the names it spells."""
    if isinstance(annotation, str):
        try:
            return _text_compiles_numbers_in(ast.parse(annotation, mode="eval").body)
        except SyntaxError:
            return False
    if typing.get_origin(annotation) not in (Union, types.UnionType):
        return False
    return any(typing.get_origin(m) is tuple and any(_names_compiled_in(x) for x in typing.get_args(m))
               for m in typing.get_args(annotation))
