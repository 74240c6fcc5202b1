"""`cutlass.cutlass_dsl`: the names CuTe DSL's extensions import from it: @dsl_user_op, `T` (MLIR types by short
name) and the numeric types, which make numbers of IR values (`Int32(v)`) and give theirs (`x.ir_value()`);
`BaseDSL._get_dsl().get_arch_enum()`, the target being compiled for as a `base_dsl.arch.Arch`."""
from .._dsl.base.markers import dsl_user_op
from .._dsl.device.math import max, min  # noqa: A004 - CuTe DSL's variadic min/max of DSL and Python values
from .._dsl.registry.arch_enum import BaseDSL
from .._dsl.values.mlir_values import extract_mlir_values, new_from_mlir_values
from .._dsl.tracing.control_flow import const_expr
from .._dsl.values.numeric import (BFloat16, Boolean, Float, Float16, Float32, Float64, Int8, Int16, Int32, Int64,
                                   Integer, Numeric, NumericMeta, TFloat32, Uint8, Uint16, Uint32, Uint64)
from .._mlir.extras import types as T

__all__ = ["BaseDSL", "BFloat16", "Boolean", "Float", "Float16", "Float32", "Float64", "Int8", "Int16", "Int32", "Int64",
           "Integer", "Numeric", "NumericMeta", "T", "TFloat32", "Uint8", "Uint16", "Uint32", "Uint64", "const_expr",
           "dsl_user_op", "extract_mlir_values", "max", "min", "new_from_mlir_values"]
