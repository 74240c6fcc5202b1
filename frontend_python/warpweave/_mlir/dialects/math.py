"""`cutlass._mlir.dialects.math`: elementwise math on float (and integer) IR values, scalars or vectors; the
compiler lowers them as it does cute.math's."""
from ..._dsl.base.ir_dialects import math_ops, unknown_op

globals().update(math_ops)
__all__ = sorted(math_ops)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("math", name, __all__)
