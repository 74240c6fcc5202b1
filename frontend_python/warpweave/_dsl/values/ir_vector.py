"""`Vector`: an IR vector value with its DSL element type (CuTe DSL's `cutlass.base_dsl.typing.Vector`); the IR
values objects are made of (CuTe DSL's protocol) are value_tree.py's.

A Vector lives in registers: it is built from numbers (`from_elements`), taken apart into numbers (`to_elements`,
`v[i]`), reinterpreted (`bitcast`) and converted (`to`), each a vector-dialect op at the user's line.
"""
from __future__ import annotations

from ..base import ir_dialects
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.ir_values import Type, Value, VectorType, operand
from .numeric import Numeric, NumericMeta, as_numeric, numeric_type_of


class Vector:
    def __init__(self, v, *, dtype=None, loc=None, ip=None):
        v = operand(v, "a Vector's value")
        if not VectorType.isinstance(v.type):
            raise DSLTypeError(f"a Vector wraps an IR vector, got a value of type {v.type}", user_location(2))
        vt = VectorType(v.type)
        if vt.rank != 1:
            raise DSLValueError(f"a Vector is one-dimensional, got {vt}", user_location(2))
        et = dtype if dtype is not None else numeric_type_of(vt.element_type)
        if et is None or et.mlir_type != vt.element_type:
            raise DSLTypeError(f"a Vector of {vt} holds {vt.element_type}, not {getattr(et, '__name__', et)}",
                               user_location(2))
        self._value, self.dtype = v, et

    @staticmethod
    def from_elements(scalars, dtype, *, loc=None, ip=None) -> "Vector":
        if not isinstance(dtype, NumericMeta):
            raise DSLTypeError(f"Vector.from_elements: dtype is a DSL numeric type, got {dtype!r}", user_location(2))
        xs = [dtype(x).ir_value() for x in scalars]
        if not xs:
            raise DSLValueError("Vector.from_elements: a vector has at least one element", user_location(2))
        vt = VectorType.get([len(xs)], dtype.mlir_type)
        return Vector(ir_dialects.from_elements(vt, xs), dtype=dtype)

    @property
    def type(self) -> Type:
        return self._value.type

    @property
    def shape(self) -> tuple:
        return tuple(VectorType(self._value.type).shape)

    @property
    def numel(self) -> int:
        return self.shape[0]

    def ir_value(self, *, loc=None, ip=None) -> Value:
        return self._value

    def __extract_mlir_values__(self):
        return [self._value]

    def __new_from_mlir_values__(self, values):
        return Vector(values[0], dtype=self.dtype)

    def __get_mlir_types__(self):
        return [self._value.type]

    def bitcast(self, dtype, *, loc=None, ip=None) -> "Vector":
        bits = self.numel * self.dtype.width
        if bits % dtype.width:
            raise DSLTypeError(f"Vector.bitcast: {bits} bits are no whole number of {dtype.__name__}",
                               user_location(2))
        vt = VectorType.get([bits // dtype.width], dtype.mlir_type)
        return Vector(ir_dialects.bitcast(vt, self._value), dtype=dtype)

    def to_elements(self, *, loc=None, ip=None) -> tuple:
        return tuple(self[i] for i in range(self.numel))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Vector.from_elements([self[i] for i in range(*idx.indices(self.numel))], self.dtype)
        if not isinstance(idx, int) or not -self.numel <= idx < self.numel:
            raise DSLValueError(f"Vector index {idx!r}: a static position in 0..{self.numel - 1}", user_location(2))
        return self.dtype(ir_dialects.extract(self._value, [], [idx % self.numel]))

    def __len__(self):
        return self.numel

    def to(self, dtype, *, loc=None, ip=None) -> "Vector":
        return Vector.from_elements([x.to(dtype) for x in self.to_elements()], dtype)

    def _elementwise(self, other, fn):
        xs = self.to_elements()
        ys = other.to_elements() if isinstance(other, Vector) else [other] * self.numel
        return Vector.from_elements([fn(a, b) for a, b in zip(xs, ys)], self.dtype)

    def __add__(self, o):
        return self._elementwise(o, lambda a, b: a + b)

    def __sub__(self, o):
        return self._elementwise(o, lambda a, b: a - b)

    def __mul__(self, o):
        return self._elementwise(o, lambda a, b: a * b)

    def __truediv__(self, o):
        return self._elementwise(o, lambda a, b: a / b)

    def __repr__(self):
        return f"Vector({self._value!r}, dtype={self.dtype.__name__})"


def as_dsl(value):
    """An IR value as the DSL value it stands for: a Vector for a vector, a number for a scalar."""
    v = operand(value)
    if VectorType.isinstance(v.type):
        return Vector(v)
    return as_numeric(v)


__all__ = ["Vector", "as_dsl"]
