"""`cutlass._mlir.dialects.cute_nvgpu`: CuTe DSL's own `cute_nvgpu` dialect. warpweave's IR has no such dialect (its
layouts, tensors and atoms are the Python objects of cute): its ops are the builders the loaded backends publish as
`cute_nvgpu.<op>` (the TMA atoms a program makes from an explicit value map, say, in the backends of the GPUs with
TMA); naming one that none offers is an error at the user's line, never IR that MLIR would refuse later."""
from ..._dsl.atoms.atoms import backend_python_name
from ..._dsl.base.ir_dialects import unknown_op

__all__ = []


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    op = backend_python_name(f"cute_nvgpu.{name}")
    if op is None:
        raise unknown_op("cute_nvgpu", name, __all__)
    return op
