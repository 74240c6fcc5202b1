"""`cutlass._mlir.ir`: MLIR types and the SSA values of the kernel being traced."""
from .._dsl.base.ir_values import (BF16Type, F16Type, F32Type, F64Type, FloatType, IndexType, IntegerType, StructType,
                                   Type, Value, VectorType)

__all__ = ["BF16Type", "F16Type", "F32Type", "F64Type", "FloatType", "IndexType", "IntegerType", "StructType", "Type",
           "Value", "VectorType"]
