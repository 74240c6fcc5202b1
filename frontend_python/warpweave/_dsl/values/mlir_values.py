"""`extract_mlir_values` / `new_from_mlir_values` (CuTe DSL's cutlass_dsl names): a value's IR values as a flat
list, and the same value made again of other IR values of those types. They are the two halves of the protocol a
user class implements with `__extract_mlir_values__` / `__new_from_mlir_values__` (a tile scheduler's parameters
and state), usually by calling these on its fields.

A DSL number gives its IR value (a constant for a static number); tuples and lists give their elements' values
in order; an object with the protocol gives what its method returns; Python values, types and None give none and
are kept as they are when the value is made again."""
from __future__ import annotations

from ..base import ir_values
from ..base.errors import DSLValueError, user_location
from .numeric import Numeric


def extract_mlir_values(obj) -> list:
    if hasattr(obj, "__extract_mlir_values__") and not isinstance(obj, type):
        return list(obj.__extract_mlir_values__())
    if isinstance(obj, Numeric):
        return [obj.ir_value()]
    if isinstance(obj, ir_values.Value):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [v for x in obj for v in extract_mlir_values(x)]
    return []


def new_from_mlir_values(obj, values):
    values = list(values)
    want = len(extract_mlir_values(obj))
    if len(values) != want:
        raise DSLValueError(f"new_from_mlir_values: {type(obj).__name__} is made of {want} IR value"
                            f"{'s' if want != 1 else ''}, got {len(values)}", user_location(2))
    if hasattr(obj, "__new_from_mlir_values__") and not isinstance(obj, type):
        return obj.__new_from_mlir_values__(values)
    if isinstance(obj, Numeric):
        return type(obj)(values[0])
    if isinstance(obj, ir_values.Value):
        return values[0]
    if isinstance(obj, (tuple, list)):
        out, pos = [], 0
        for x in obj:
            n = len(extract_mlir_values(x))
            out.append(new_from_mlir_values(x, values[pos:pos + n]))
            pos += n
        return type(obj)(out) if isinstance(obj, list) else tuple(out)
    return obj
