"""The IR values an object is made of (CuTe DSL's `__extract_mlir_values__` / `__new_from_mlir_values__` protocol),
which dynamic control flow carries: `extract_mlir_values`, `new_from_mlir_values`, `get_mlir_types`.

Flat, an object is the list of its IR values in order. Structured (`structured=True`), it is a tree that keeps
where each value comes from: a number is its IR value, a dataclass or a protocol object whose
`__extract_mlir_values__` returns a dict is a dict of its fields, a list or tuple a list. A protocol object may
build its dict from its fields' structured values and is made again of the same tree; the tree also names the
field whose type changed when a loop gives an object back with another structure (`tree_difference`).

Dataclasses whose fields hold DSL numbers follow the protocol without writing it: their fields (in declaration
order) are their values, and a copy with the new values (`dataclasses.replace`) is the object made again.
"""
from __future__ import annotations

import copy as _copy
import dataclasses
import typing

from ..base.errors import DSLValueError, user_location
from ..base.ir_values import Value
from .numeric import Int32, Int64, Numeric, SymInt


def _protocol(obj, name):
    return not isinstance(obj, type) and callable(getattr(type(obj), name, None))


def _is_dataclass(obj) -> bool:
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)


def _fields(obj) -> dict:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def argument_fields(obj) -> list:
    """The fields of a dataclass argument that a call passes, in declaration order: those its __init__ takes (the
    others, init=False, are derived from them when the function rebuilds it)."""
    return [f.name for f in dataclasses.fields(obj) if f.init]


def argument_annotations(obj) -> list:
    """The annotations of a dataclass argument's fields that a call passes (argument_fields), resolved where their
    module can (a field annotated cutlass.Constexpr is compiled in); None for a field without one."""
    try:
        hints = typing.get_type_hints(type(obj), include_extras=True)
    except Exception:  # an annotation naming what its module cannot resolve: the raw ones
        hints = {f.name: f.type for f in dataclasses.fields(obj)}
    return [hints.get(f) for f in argument_fields(obj)]


def tree_element(value, k: int):
    """Element k of a list, tuple or dataclass argument (its k-th argument field), as call/ plans number them."""
    return getattr(value, argument_fields(value)[k]) if _is_dataclass(value) else value[k]


def _as_number(x: SymInt) -> Numeric:
    """A run-time integer of the layout algebra (an extent made of a tensor's shape) as the DSL number it stands
    for, as CuTe DSL's shapes hold Int32s: a protocol object keeping one in a field carries its value."""
    return (Int32 if x.bits <= 32 else Int64)._wrap(x)


def get_mlir_types(obj) -> list:
    """The IR types of the values `obj` is made of, recursively: a number's, an IR value's, those an object gives
    through `__get_mlir_types__` or `__extract_mlir_values__`, a list's, tuple's, dict's or dataclass's in order;
    none for Python constants."""
    if isinstance(obj, Value):
        return [obj.type]
    if isinstance(obj, Numeric):
        return [type(obj).register_type]
    if isinstance(obj, SymInt):
        return [type(_as_number(obj)).register_type]
    if _protocol(obj, "__get_mlir_types__"):
        return list(obj.__get_mlir_types__())
    return [v.type for v in extract_mlir_values(obj)]


def extract_mlir_values(obj, structured: bool = False):
    """The IR values `obj` is made of: flat and in order (CuTe DSL's protocol), or with structured=True as a tree
    (dicts for dataclasses and for protocol objects that give dicts, lists for lists and tuples, a Value for a
    number); none (an empty list) for Python constants and objects without the protocol."""
    if isinstance(obj, Value):
        return obj if structured else [obj]
    if isinstance(obj, (Numeric, SymInt)):
        v = (obj if isinstance(obj, Numeric) else _as_number(obj)).ir_value()
        return v if structured else [v]
    if _protocol(obj, "__extract_mlir_values__"):
        tree = obj.__extract_mlir_values__()
        return _normalize(tree) if structured else _flatten(tree)
    if _is_dataclass(obj):
        tree = {k: extract_mlir_values(x, True) for k, x in _fields(obj).items()}
        return tree if structured else _flatten(tree)
    if isinstance(obj, dict):
        tree = {k: extract_mlir_values(x, True) for k, x in obj.items()}
        return tree if structured else _flatten(tree)
    if isinstance(obj, (list, tuple)):
        tree = [extract_mlir_values(x, True) for x in obj]
        return tree if structured else _flatten(tree)
    return []


def _normalize(tree):
    """A protocol's structured result with every leaf an IR value (numbers and objects in it extracted)."""
    if isinstance(tree, dict):
        return {k: _normalize(x) for k, x in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_normalize(x) for x in tree]
    return extract_mlir_values(tree, True)


def _flatten(tree) -> list:
    if isinstance(tree, Value):
        return [tree]
    if isinstance(tree, dict):
        tree = list(tree.values())
    if isinstance(tree, (list, tuple)):
        out = []
        for x in tree:
            out.extend(_flatten(x))
        return out
    return extract_mlir_values(tree)


def _count(tree) -> int:
    return len(_flatten(tree))


def _unflatten(template, values: list):
    """values (flat) in the shape of template (a structured tree)."""
    if isinstance(template, Value):
        return values[0]
    if isinstance(template, dict):
        out, pos = {}, 0
        for k, x in template.items():
            n = _count(x)
            out[k] = _unflatten(x, values[pos:pos + n])
            pos += n
        return out
    if isinstance(template, (list, tuple)):
        out, pos = [], 0
        for x in template:
            n = _count(x)
            out.append(_unflatten(x, values[pos:pos + n]))
            pos += n
        return out
    return values


def new_from_mlir_values(obj, values, structured: bool = False):
    """`obj` made again of other IR values: as many as extract_mlir_values(obj) gives, of the same types, flat or
    (structured=True) in the tree extract_mlir_values(obj, structured=True) gives."""
    if structured:
        return _rebuild(obj, values)
    values = list(values)
    n = len(extract_mlir_values(obj))
    if len(values) != n:
        raise DSLValueError(f"new_from_mlir_values: {type(obj).__name__} is made of {n} IR values, got "
                            f"{len(values)}", user_location(2))
    if isinstance(obj, (Value, Numeric, SymInt)) or not _protocol(obj, "__extract_mlir_values__"):
        return _rebuild(obj, _unflatten(extract_mlir_values(obj, True), values))
    template = obj.__extract_mlir_values__()
    # A protocol that gives a dict takes one back; one that gives a list takes the flat values, as it always has.
    return obj.__new_from_mlir_values__(_unflatten(_normalize(template), values) if isinstance(template, dict)
                                        else values)


def _rebuild(obj, tree):
    if isinstance(obj, Value):
        return tree[0] if isinstance(tree, list) else tree
    if isinstance(obj, (Numeric, SymInt)):
        return type(obj if isinstance(obj, Numeric) else _as_number(obj))(tree[0] if isinstance(tree, list) else tree)
    if _protocol(obj, "__new_from_mlir_values__"):
        return obj.__new_from_mlir_values__(tree)
    if _is_dataclass(obj):
        # a copy with its fields of IR values set anew, not dataclasses.replace(): that calls __init__, which need
        # not take every field (init=False fields, a base class's own __init__) and would reset the others
        out = _copy.copy(obj)
        for k, x in _fields(obj).items():
            if _count(tree[k]):
                object.__setattr__(out, k, _rebuild(x, tree[k]))
        return out
    if isinstance(obj, dict):
        return {k: _rebuild(x, tree[k]) for k, x in obj.items()}
    if isinstance(obj, (list, tuple)):
        items = [_rebuild(x, t) for x, t in zip(obj, tree)]
        if isinstance(obj, list):
            return items
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    return obj


def carries_ir_values(obj) -> bool:
    """An object dynamic control flow carries value by value: one of CuTe DSL's protocol (both halves), or a
    dataclass instance with DSL numbers in its fields."""
    t = type(obj)  # looked up on the type, as Python's protocols are: an object's __getattr__ does not answer
    if isinstance(obj, (type, Numeric)):
        return False
    if callable(getattr(t, "__extract_mlir_values__", None)) and callable(getattr(t, "__new_from_mlir_values__", None)):
        return True
    return _is_dataclass(obj) and bool(extract_mlir_values(obj))


def type_tree(obj):
    """The structured tree of obj with each value's IR type as text (to compare structures and to print)."""
    def walk(t):
        if isinstance(t, Value):
            return t.type.text
        if isinstance(t, dict):
            return {k: walk(x) for k, x in t.items()}
        if isinstance(t, list):
            return [walk(x) for x in t]
        return t
    return walk(extract_mlir_values(obj, True))


def tree_difference(before, after, path: str = "") -> str | None:
    """Where two type trees (type_tree) first differ, in words (a field's path and what it became); None if
    they are the same."""
    here = path or "the value"
    if isinstance(before, dict) and isinstance(after, dict):
        if list(before) != list(after):
            gone, new = [k for k in before if k not in after], [k for k in after if k not in before]
            return (f"{here} has fields {list(before)} before and {list(after)} after" +
                    (f" (lost {gone})" if gone else "") + (f" (gained {new})" if new else ""))
        for k in before:
            d = tree_difference(before[k], after[k], f"{path}.{k}" if path else str(k))
            if d:
                return d
        return None
    if isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            return f"{here} is a list of {len(before)} elements before and {len(after)} after"
        for i, (b, a) in enumerate(zip(before, after)):
            d = tree_difference(b, a, f"{path}[{i}]")
            if d:
                return d
        return None
    if before != after:
        return f"{here} is {_describe(before)} before and {_describe(after)} after"
    return None


def _describe(t) -> str:
    if isinstance(t, dict):
        return "{" + ", ".join(t) + "}"
    if isinstance(t, list):
        return f"a list of {len(t)}"
    return str(t)


def format_tree(obj, max_depth: int | None = None) -> str:
    """The structured values of obj as an indented tree of field names and IR types (debug_print_mlir_values)."""
    lines = [type(obj).__name__]

    def walk(t, indent, depth):
        pad = "  " * indent
        if max_depth is not None and depth > max_depth and isinstance(t, (dict, list)):
            lines.append(pad + "...")
            return
        items = t.items() if isinstance(t, dict) else enumerate(t) if isinstance(t, list) else ()
        for k, x in items:
            name = k if isinstance(t, dict) else f"[{k}]"
            if isinstance(x, (dict, list)):
                lines.append(f"{pad}{name}:")
                walk(x, indent + 1, depth + 1)
            else:
                lines.append(f"{pad}{name}: {x}")

    tree = type_tree(obj)
    if isinstance(tree, (dict, list)):
        walk(tree, 1, 0)
    else:
        lines[0] += f": {tree}"
    return "\n".join(lines)


__all__ = ["argument_annotations", "argument_fields", "carries_ir_values", "extract_mlir_values", "format_tree",
           "get_mlir_types", "new_from_mlir_values", "tree_difference", "tree_element", "type_tree"]
