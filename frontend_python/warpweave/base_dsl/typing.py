"""`cutlass.base_dsl.typing`: the numeric types and their metaclass, `Vector` (an IR vector with its element type)
and `get_mlir_types`."""
from .._dsl.base.constexpr import Constexpr
from .._dsl.values.ir_vector import Vector
from .._dsl.values.value_tree import get_mlir_types
from .._dsl.values.numeric import (BFloat16, Boolean, Float, Float16, Float32, Float64, Int8, Int16, Int32, Int64,
                                   Integer, Numeric, NumericMeta, TFloat32, Uint8, Uint16, Uint32, Uint64)

__all__ = ["BFloat16", "Boolean", "Constexpr", "Float", "Float16", "Float32", "Float64", "Int8", "Int16", "Int32",
           "Int64", "Integer", "Numeric", "NumericMeta", "TFloat32", "Uint8", "Uint16", "Uint32", "Uint64", "Vector",
           "get_mlir_types"]
