"""`cutlass._mlir.dialects.vector`: building, taking apart and reinterpreting vectors of IR values."""
from ..._dsl.base.ir_dialects import (CombiningKind, bitcast, broadcast, extract, from_elements, insert, reduction,
                                      splat, unknown_op)

__all__ = ["CombiningKind", "bitcast", "broadcast", "extract", "from_elements", "insert", "reduction", "splat"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("vector", name, __all__)
