"""`cutlass._mlir.ir`: MLIR types, the SSA values of the kernel being traced, locations and insertion points."""
from .._dsl.base.ir_dialects import Block, InsertionPoint
from .._dsl.base.ir_values import (BF16Type, F16Type, F32Type, F64Type, FloatType, IndexType, IntegerType, Location,
                                   StructType, Type, Value, VectorType)

OpResult = Value
BlockArgument = Value

__all__ = ["BF16Type", "Block", "BlockArgument", "F16Type", "F32Type", "F64Type", "FloatType", "IndexType",
           "InsertionPoint", "IntegerType", "Location", "OpResult", "StructType", "Type", "Value", "VectorType"]
