"""`cutlass._mlir_helpers`: CuTe DSL's helpers over the IR: `vector.Vector` and `op.dsl_user_op`, with `arith`
and `math` the dialects' ops."""
from .._dsl.base.markers import dsl_user_op
from .._mlir.dialects import arith, math
from . import op, vector

__all__ = ["arith", "dsl_user_op", "math", "op", "vector"]
