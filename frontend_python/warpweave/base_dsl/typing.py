"""`cutlass.base_dsl.typing`: the numeric types and their metaclasses (with which a program makes numeric types of
its own: values/numeric_meta.py), `Vector` (an IR vector with its element type), `get_mlir_types` and `JitArgument`
(the argument protocol as a class to derive from)."""
from .._dsl.base.constexpr import Constexpr
from .._dsl.values.ir_vector import Vector
from .._dsl.values.jit_argument import JitArgument
from .._dsl.values.value_tree import get_mlir_types
from .._dsl.values.numeric import (BFloat16, Boolean, Float, Float16, Float32, Float64, Int8, Int16, Int32, Int64,
                                   Integer, Numeric, NumericMeta, TFloat32, Uint8, Uint16, Uint32, Uint64)
from .._dsl.values.numeric_meta import BooleanMeta, FloatMeta, IntegerMeta

__all__ = ["BFloat16", "Boolean", "BooleanMeta", "Constexpr", "Float", "Float16", "Float32", "Float64", "FloatMeta",
           "Int8", "Int16", "Int32", "Int64", "Integer", "IntegerMeta", "JitArgument", "Numeric", "NumericMeta",
           "TFloat32", "Uint8", "Uint16", "Uint32", "Uint64", "Vector", "get_mlir_types"]
