"""MLIR's builtin dialect as user code writes it: `unrealized_conversion_cast`, which CuTe DSL's libraries use to
see a value as another type of the same bits (a descriptor as an i64, a tensor-memory address as an i32, tf32 as
i32). MLIR leaves such a cast for a later conversion to resolve; warpweave's IR has no later conversion of user
types, so the cast becomes what it means here at once: the value itself where the types are equal, a bitcast
between types of the same bits, ptrtoint / inttoptr between a pointer and an integer. Casts that would need a
conversion to give them meaning (several values, different widths) are refused at the user's line.
"""
from __future__ import annotations

from .errors import DSLTypeError, DSLValueError, user_location
from .ir_ops import inttoptr, llvm_bitcast, ptrtoint, total_bits
from .ir_values import IntegerType, PointerType, Type, Value, operand


def _cast(out: Type, v: Value, where) -> Value:
    if v.type == out:
        return v
    if PointerType.isinstance(v.type) and IntegerType.isinstance(out):
        return ptrtoint(out, v)
    if IntegerType.isinstance(v.type) and PointerType.isinstance(out):
        return inttoptr(out, v)
    bits_in, bits_out = total_bits(v.type), total_bits(out)
    if bits_in and bits_in == bits_out:
        return llvm_bitcast(out, v)
    raise DSLTypeError(f"unrealized_conversion_cast: {v.type} to {out} is not a view of the same bits (no later "
                       "conversion resolves casts here); use arith/llvm conversions for a change of width or kind",
                       where)


def unrealized_conversion_cast(outputs, inputs, *, loc=None, ip=None) -> Value:
    """The value of inputs[0] seen as the type outputs[0] (one value to one type)."""
    where = user_location(2)
    outputs, inputs = list(outputs), list(inputs)
    if len(outputs) != 1 or len(inputs) != 1:
        raise DSLValueError(f"unrealized_conversion_cast: one value to one type here, got {len(inputs)} value(s) "
                            f"to {len(outputs)} type(s)", where)
    try:
        out = Type(outputs[0])
    except Exception:  # noqa: BLE001 - whatever was given, named at the user's line
        raise DSLTypeError(f"unrealized_conversion_cast: outputs are IR types, got {outputs[0]!r}", where) from None
    return _cast(out, operand(inputs[0], "unrealized_conversion_cast's input"), where)


class UnrealizedConversionCastOp:
    """The op form: UnrealizedConversionCastOp(outputs, inputs).result (or .results[0])."""

    def __init__(self, outputs, inputs, *, loc=None, ip=None):
        self.result = unrealized_conversion_cast(outputs, inputs)
        self.results = [self.result]
