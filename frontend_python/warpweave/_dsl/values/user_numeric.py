"""Numeric types of the program's own (numeric_meta.py) where the runtime needs a type it knows.

A user type's values are bits of its IR type, so the host side holds them as the DSL type of those bits: a
`Complex64` (f64) is passed to a kernel, and its tensors are filled, as Float64; an unsigned integer type of the
user's as the unsigned type of its width. The type itself stays what traced code sees (`element_type is
Complex64`), and it keys compiled functions by its own name, so that a function compiled for it is not reused for
the DSL type of the same bits (whose operators differ).
"""
from __future__ import annotations

import importlib

from ..base import ir_values
from ..base.errors import DSLTypeError, user_location
from .numeric import ALL_TYPES, Numeric, Uint8, Uint16, Uint32, Uint64, numeric_type_of

_BUILTIN = frozenset(ALL_TYPES)
_UNSIGNED = {8: Uint8, 16: Uint16, 32: Uint32, 64: Uint64}


def is_numeric_type(t) -> bool:
    """Whether t is a concrete numeric type (the DSL's or the program's own): a class with an IR type."""
    return isinstance(t, type) and issubclass(t, Numeric) and bool(t.ir_type)


def is_user_numeric(t) -> bool:
    """Whether t is a numeric type the program made (not one of the DSL's)."""
    return is_numeric_type(t) and t not in _BUILTIN


def storage_numeric(t):
    """The DSL type whose values have t's bits: t itself for the DSL's types."""
    if t in _BUILTIN or not is_numeric_type(t):
        return t
    if t.is_integer and not t.signed and t.ir_type.startswith("i") and int(t.ir_type[1:]) in _UNSIGNED:
        return _UNSIGNED[int(t.ir_type[1:])]
    s = numeric_type_of(ir_values.Type(t.ir_type))
    if s is None:
        raise DSLTypeError(f"numeric type {t.__name__}: its IR type {t.ir_type} is held by no DSL type",
                           user_location(3))
    return s


# numeric_name of a program's type -> the type, for what reads a name back (storage_name)
_BY_NAME: dict = {}


def numeric_name(t) -> str:
    """The name that keys a numeric type (in tensor and argument specifications): the DSL's by name, a program's
    by module and qualified name."""
    if t in _BUILTIN or not isinstance(t, type):
        return t.__name__
    name = f"{t.__module__}.{t.__qualname__}"
    _BY_NAME[name] = t
    return name


def numeric_named(name: str):
    """The program's numeric type of a numeric_name (its module imported if need be), else None."""
    t = _BY_NAME.get(name)
    if t is None and "." in name:
        module, _, qualname = name.rpartition(".")
        while module and t is None:  # a nested class: its qualified name has dots too
            try:
                t = importlib.import_module(module)
            except ImportError:
                module, _, outer = module.rpartition(".")
                qualname = f"{outer}.{qualname}"
        for part in qualname.split(".") if t is not None else ():
            t = getattr(t, part, None)
    return t if is_user_numeric(t) else None


def storage_name(name: str) -> str:
    """The name of the DSL type holding the values of the type named `name` (numeric_name's)."""
    t = _BY_NAME.get(name)
    return name if t is None else storage_numeric(t).__name__
