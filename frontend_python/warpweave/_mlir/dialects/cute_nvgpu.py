"""`cutlass._mlir.dialects.cute_nvgpu`: CuTe DSL's own `cute_nvgpu` dialect. warpweave's IR has no such dialect (its
layouts, tensors and atoms are the Python objects of cute), so the module has no ops: naming one is an error at the
user's line that says so, never IR that MLIR would refuse later. The types programs name from it (to recast a
pointer with cute.recast_iter) are those the backends register as "cute_nvgpu.<name>"."""
from ..._dsl.atoms.atoms import backend_python_name
from ..._dsl.base.ir_dialects import unknown_op

__all__ = []


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    hit = backend_python_name(f"cute_nvgpu.{name}")
    if hit is not None:
        return hit
    raise unknown_op("cute_nvgpu", name, __all__)
