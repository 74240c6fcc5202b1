"""`cutlass._mlir_helpers`: CuTe DSL's helpers over the IR: `vector.Vector` and `op.dsl_user_op`, `arith` (the
dialect's ops and a value-first bitcast) and `math` (rcp over DSL numbers, and the dialect's ops)."""
from .._dsl.base.markers import dsl_user_op
from . import arith, math, op, vector

__all__ = ["arith", "dsl_user_op", "math", "op", "vector"]
