"""The metaclass of the DSL's numeric types, and how a numeric type of the user's own is made.

CuTe DSL programs define numeric types of their own the way the DSL's are defined:
`class Complex64(Float32, metaclass=FloatMeta, width=64, mlir_type=T.f64)`: the class keywords give the width of
a value and the IR type it is held in (`mlir_type`: a type, its MLIR spelling, or a function returning one, as
`T.f64`); `signed=` an integer type's signedness. Such a class is a numeric type everywhere a type of the DSL is:
a tensor's element type (its loads make values of it, its stores take them), a register fragment's, a jit or
kernel parameter's (passed as the DSL type of the same bits, see user_numeric.py), an operand of the IR ops a
program writes (`ir_value()`, `mlir_type`); its operators are the ones the class defines.

A class made outside warpweave also follows CuTe DSL's conventions for a user type's values, which its methods
are written against: a value is made of an IR value by calling the class (`Complex64(v)`), so the constructor sees
every value a load, an operator or a region makes; and `x.value` is the value's storage as the class keeps it, the
Python value of a static number or the IR value of a dynamic one, which the class may assign.
"""
from __future__ import annotations

import sys

from ..base import ir_values
from ..base.errors import DSLTypeError, user_location

_OWN_PACKAGE = __name__.split(".")[0]


class NumericIRType(ir_values.Type):
    """A numeric type's `mlir_type`: the IR type (equal to the plain one of its spelling) that also remembers the
    numeric type it was asked of, as several share one (Float8E4M3FN, Float8E5M2 and Uint8 are all held in i8).
    A type built of it (a typed pointer's element: `PtrType.get(Float8E4M3FN.mlir_type, ...)`) finds its numeric
    type again."""
    __slots__ = ("numeric",)

    def __init__(self, t, numeric):
        super().__init__(t)
        self.numeric = numeric


def _type_text(mlir_type, name: str) -> str:
    """The MLIR spelling of a class's `mlir_type=`: an ir.Type, its text, or a function returning either."""
    t = mlir_type() if callable(mlir_type) and not isinstance(mlir_type, (str, ir_values.Type)) else mlir_type
    if isinstance(t, ir_values.Type):
        t = t.text
    if not isinstance(t, str) or ir_values.bit_width(ir_values.Type(t)) is None:
        raise DSLTypeError(f"numeric type {name}: mlir_type must be a scalar integer or float IR type (T.f64, "
                           f"T.i32, ...), got {mlir_type!r}", user_location(3))
    return t


def _user_value(self):
    return self._v if self.is_static else self.ir_value()


def _set_user_value(self, value):
    if isinstance(value, ir_values.Value):
        NumericMeta.root.__init__(self, value)  # checked against the class's IR type, as a constructor does
    else:
        self._v = value


def _user_from_ir(cls, value_id):
    # Through the class, so that its constructor sees an IR value (as CuTe DSL builds results and loads).
    return cls(ir_values.wrap(value_id, cls.ir_type))


class NumericMeta(type):
    # The DSL's root numeric class (Numeric), the first class this metaclass makes.
    root = None

    def __new__(mcs, name, bases, namespace, width=None, mlir_type=None, signed=None, is_abstract=False, **kwargs):
        if "__module__" not in namespace:  # type(name, bases, namespace): the caller's module, not this one's
            namespace = dict(namespace, __module__=sys._getframe(1).f_globals.get("__name__", ""))
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        if NumericMeta.root is None:
            NumericMeta.root = cls
        if width is not None:
            if not isinstance(width, int) or isinstance(width, bool) or width <= 0:
                raise DSLTypeError(f"numeric type {name}: width must be a positive number of bits, got {width!r}",
                                   user_location(2))
            cls.width = width
        if mlir_type is not None:
            cls.ir_type = _type_text(mlir_type, name)
        if signed is not None:
            cls.signed = bool(signed)
        if cls.__module__.split(".")[0] != _OWN_PACKAGE and not is_abstract:
            if "value" not in namespace:
                cls.value = property(_user_value, _set_user_value, doc="the value's storage (Python or IR value)")
            if "from_ir" not in namespace:
                cls.from_ir = classmethod(_user_from_ir)
            if cls.ir_type and cls.width > (ir_values.bit_width(ir_values.Type(cls.ir_type)) or 0):
                raise DSLTypeError(f"numeric type {name}: width {cls.width} does not fit its IR type {cls.ir_type}",
                                   user_location(2))
        return cls

    def __init__(cls, name, bases, namespace, **kwargs):
        super().__init__(name, bases, namespace)

    @property
    def mlir_type(cls) -> ir_values.Type:
        """The IR type of this type in the IR a program writes (`Int32.mlir_type` is i32), an IR vector's lanes
        among it: a type with a `lane_type` (4-bit floats: 4 bits, as CuTe DSL's) is that, though a number of it
        is held in a wider register (`register_type`)."""
        if not cls.ir_type:
            raise DSLTypeError(f"{cls.__name__} is abstract: it has no IR type", user_location(2))
        return NumericIRType(getattr(cls, "lane_type", None) or cls.ir_type, cls)

    @property
    def register_type(cls) -> ir_values.Type:
        """The IR type a number of this type is held in (its `ir_value()`'s)."""
        return ir_values.Type(cls.ir_type)

    @property
    def bytes(cls) -> int:  # a value's bytes in memory (a Boolean's and a 4-bit value's: one)
        return max(1, (cls.width + 7) // 8)

    def __repr__(cls):
        return cls.__name__

    def __str__(cls):
        return cls.__name__


class IntegerMeta(NumericMeta):
    """The metaclass of integer types (CuTe DSL's name): `class MyInt(Int32, metaclass=IntegerMeta, width=32)`."""


class FloatMeta(NumericMeta):
    """The metaclass of float types (CuTe DSL's name): `class MyFloat(Float32, metaclass=FloatMeta, width=64,
    mlir_type=T.f64)`."""


class BooleanMeta(NumericMeta):
    """The metaclass of the Boolean type (CuTe DSL's name)."""


def to_lane(t, value):
    """The IR value of a number of type t as a lane of an IR vector of t (of t.mlir_type: a 4-bit float's code
    narrowed to its 4 bits)."""
    if t.mlir_type == t.register_type:
        return value
    return ir_values.emit("arith.trunci", [value], [t.mlir_type])[0]


def from_lane(t, value):
    """A lane of an IR vector of t as the register value a number of t holds (to_lane undone)."""
    if t.mlir_type == t.register_type:
        return value
    return ir_values.emit("arith.extui", [value], [t.register_type])[0]
