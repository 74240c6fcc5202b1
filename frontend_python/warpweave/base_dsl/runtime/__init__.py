"""`cutlass.base_dsl.runtime`: `cuda`, CuTe DSL's helpers over the CUDA driver bindings (cuda-bindings)."""
from . import cuda

__all__ = ["cuda"]
