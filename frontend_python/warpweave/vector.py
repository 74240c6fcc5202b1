"""`cutlass.vector`: Vectors made whole (`full`, `broadcast_to`, `outerproduct`, `zeros_like`, ...) beside
`cutlass.Vector` itself."""
from ._dsl.values.ir_vector import Vector, broadcast_to, full, full_like, ones_like, outerproduct, zeros_like

__all__ = ["Vector", "broadcast_to", "full", "full_like", "ones_like", "outerproduct", "zeros_like"]
