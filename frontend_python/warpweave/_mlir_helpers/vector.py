"""`cutlass._mlir_helpers.vector`: `Vector`, an IR vector value with its DSL element type."""
from .._dsl.values.ir_vector import Vector

__all__ = ["Vector"]
