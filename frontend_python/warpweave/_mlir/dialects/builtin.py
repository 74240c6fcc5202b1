"""`cutlass._mlir.dialects.builtin`: unrealized_conversion_cast (and its op form), a value seen as another type of
the same bits (warpweave._dsl.base.ir_builtin). MLIR's ModuleOp is not here: a kernel's module is built by
warpweave's tracing, and user code gets no module op to edit."""
from ..._dsl.base.ir_builtin import UnrealizedConversionCastOp, unrealized_conversion_cast
from ..._dsl.base.ir_dialects import unknown_op

__all__ = ["UnrealizedConversionCastOp", "unrealized_conversion_cast"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("builtin", name, __all__)
