"""`cutlass._mlir.dialects.scf`: structured control flow written with regions: `IfOp` / `ForOp` filled through
`with ir.InsertionPoint(block)` and closed by `yield_`."""
from ..._dsl.base.ir_dialects import ForOp, IfOp, for_, if_, unknown_op, yield_

__all__ = ["ForOp", "IfOp", "for_", "if_", "yield_"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("scf", name, __all__)
