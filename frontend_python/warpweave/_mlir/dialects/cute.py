"""`cutlass._mlir.dialects.cute`: CuTe DSL's own `cute` dialect. warpweave's IR has no such dialect (its layouts, tensors
and atoms are the Python objects of cute), so the module has no ops: naming one is an error at the user's line that
says so, never IR that MLIR would refuse later."""
from ..._dsl.base.ir_dialects import unknown_op

__all__ = []


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("cute", name, __all__)
