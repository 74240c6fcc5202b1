"""`cutlass._mlir_helpers.op`: `dsl_user_op`, the decorator of functions that write IR (taking `loc=` / `ip=`)."""
from .._dsl.base.markers import dsl_user_op

__all__ = ["dsl_user_op"]
