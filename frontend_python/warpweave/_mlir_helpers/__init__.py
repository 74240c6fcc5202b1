"""`cutlass._mlir_helpers`: CuTe DSL's helpers over the IR: `vector.Vector` and `op.dsl_user_op`, `arith` (the
dialect's ops and a value-first bitcast) and `math` the dialect's ops."""
from .._dsl.base.markers import dsl_user_op
from .._mlir.dialects import math
from . import arith, op, vector

__all__ = ["arith", "dsl_user_op", "math", "op", "vector"]
