"""warpweave.utils.gemm: CuTe DSL's cutlass.utils.gemm, whose modules are each GPU generation's GEMM building blocks
(utils.gemm.sm100: a tcgen05 GEMM's epilogue). Each is shipped by the backend that claims its name in its
manifest's module map; nothing of them lives here."""
from ..._dsl.registry.backend_python import public_attribute as _public_attribute


def __getattr__(name):
    module = _public_attribute(__name__, name)
    if module is None:
        raise AttributeError(f"warpweave.utils.gemm has no {name}, and no loaded backend ships "
                             f"warpweave.utils.gemm.{name}")
    return module
